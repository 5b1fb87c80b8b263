"""The demo's process listing: readers (the tests, a user's script) never see it half-written."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

CHILDREN = 100

# Run in a fresh interpreter: `Services` forks (its preexec_fn rules out vfork), and forking the whole
# pytest process a hundred times late in the suite failed once with ENOMEM on a CI machine.
SCRIPT = """
import json, sys, threading
from pathlib import Path
from semif_shadow.demo.processes import Services

logs, children = Path(sys.argv[1]), int(sys.argv[2])
listing = logs / "processes.json"
torn, done = [], threading.Event()

def read_all_the_time():
    while not done.is_set():
        if listing.is_file():
            text = listing.read_text(encoding="utf-8")
            try:
                json.loads(text)
            except json.JSONDecodeError:
                torn.append(text)

reader = threading.Thread(target=read_all_the_time)
reader.start()
try:
    with Services(logs) as services:
        for index in range(children):
            services.start(f"c{index}", [sys.executable, "-c", "pass"], {}, ())
finally:
    done.set()
    reader.join()
print(json.dumps(torn))
"""


def test_the_process_listing_is_always_whole_json(tmp_path: Path) -> None:
    """While children are started one after another, every read of processes.json parses.

    Written in place, a read between the truncation and the write saw an empty file (the Ctrl-C demo test
    failed once on it with a JSONDecodeError).
    """
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(CHILDREN)],  # noqa: S603  (our own script)
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []  # no torn read
    assert len(json.loads((tmp_path / "processes.json").read_text(encoding="utf-8"))) == CHILDREN
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
