"""The contracts every part of semif-shadow shares: the bottom of the house, importing nothing of it.

Layout:
    errors.py    the wire error shape (``{"error": {"code", "message", "field"}}``) and contract errors
    semif.py     SemIf v1: the request (validated, 400s name the field) and the response models
    records.py   records v1.1: the Arrow schemas of proposals, outcomes and drops, Parquet settings,
                 and the model identity key the pipelines group by
    catalog.py   the decision catalog file (YAML) that the sidecar runs and the pipelines read
    settings.py  settings from the environment and command-line flags, with one-line errors
    tasks.py     stop_tasks: cancel a task and wait until it has finished

``scorer``, ``shadow``, ``pipelines`` and ``dashboards`` import these modules; these modules import
none of them (``tests/test_house.py`` checks it). The documents are ``docs/semif.md`` and
``docs/records.md``.
"""
