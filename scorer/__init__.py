"""The SemIf scorer: option probabilities for a fixed-choice decision, scored with llama.cpp.

Layout:
    contract.py    the SemIf v1 request/response schema and its validation (400s name the field)
    prompt.py      the versioned prompt builder (static prefix first, state last)
    runtime.py     the thin layer over llama.cpp's low-level C API (context, batches, KV memory)
    engine.py      the scoring algorithm: canonical segments, prefix cache, option branching
    identity.py    the pinned model identity (GGUF sha256, runtime, device, settings)
    model_files.py where the GGUF comes from (a path, SM_MODEL_DIR, or the embedded default)
    segments.py    joint tokenization and the canonical segments
    crossbatch.py  opt-in cross-request batching
    generate.py    greedy generation for chat bodies
    reference.py   slow references (tests' exactness reference, the bench's brute force)
    settings.py    SCORER_* settings
    cli.py         `semif-shadow score` and `semif-shadow model`
    server/        the SageMaker-compatible HTTP server
"""

SEMIF_VERSION = "1"
