"""The entry layer: the ``semif-shadow`` and ``serve`` commands, at the top of the house.

    cli.py   the root command: logging set up once, each package's sub-commands loaded on demand,
             contract errors (a bad setting, a bad catalog) shown as one line
    logs.py  JSON-lines logging on stderr

Each package keeps its own sub-commands (``scorer.cli``, ``scorer.server.main``, ``shadow.cli``,
``shadow.records.cli``, ``pipelines.cli``); this package only composes them. Nothing below imports it.
"""
