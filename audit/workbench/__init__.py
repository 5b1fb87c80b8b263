"""The audit workbench: the page where auditors answer a week's audit sample, one decision at a time.

settings.py     AUDIT_* settings (root, week, host, port, catalog, spool, TLS, limits), built once by the CLI
errors.py       the error tree; every error leaves as ``{"error": {"code", "message", "field"}}``
reading.py      the boundary to the records: the sample file, the decisions' stored state, earlier audits
worklist.py     which decision an auditor sees next (blind: from the sample's order only), progress
sessions.py     sign-in tokens, sessions, CSRF tokens (in memory: a restart signs everyone out)
limits.py       wrong sign-in tokens per client and per decision type over a window (429 past them)
guards.py       before any handler: the Host allowlist, the body cap and UTF-8; no plain HTTP off loopback
answers.py      an answer becomes an audit outcome row, durable before it is acknowledged
pages.py        the HTML (every value escaped: state is text, never markup)
views.py        the handlers; routes.py the URL map; middlewares.py security headers and JSON errors
app.py          ``init_app()``: the record store and the worklist live in one cleanup context
static/         the keyboard script and the style sheet (served from the package, nothing from the network)

Blind by construction: nothing here reads production's outcome, a proposal or a probability. The
proposals are read for their stored state only (named columns), the outcomes for audits only.
"""
