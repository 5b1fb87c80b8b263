"""The SemIf scorer as an HTTP service, SageMaker-compatible (`semif-shadow serve`, bare `serve`).

app.py         init_app(): the aiohttp application, its routes and resources
service.py     the model holder: load off the loop, bounded queue, one scoring thread, drain
views.py       /ping, /invocations (SemIf or chat), /metrics
chat.py        OpenAI-style chat bodies, answered like the standard llama.cpp container
sagemaker.py   POST /endpoints/{name}/invocations: the sagemaker-runtime API, emulated locally
middlewares.py one error middleware: JSON errors, Retry-After, body caps
metrics.py     Prometheus metrics on a per-app registry
main.py        process entry points and graceful SIGTERM
"""
