"""The mirror API: ``POST /v1/decisions``, ``POST /v1/outcomes``, ``GET /metrics``, ``GET /healthz``.

routes.py       the route table
views.py        the handlers: validate, authorize, offer to the mirror or record the outcome
payloads.py     the request bodies (pydantic), errors naming the field
middlewares.py  the log budget, the body budget, and one error middleware: `RequestError` as its JSON
                wire form, a 500 logged as a bug
budget.py       bytes of request bodies handled at once, all requests together
"""
