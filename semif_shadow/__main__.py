"""``python -m semif_shadow``: the ``semif-shadow`` command (the demo starts its services this way)."""

from semif_shadow.cli import main

main()
