"""The demo's process listing: readers (the tests, a user's script) never see it half-written."""

from __future__ import annotations

import json
import sys
import threading
from typing import TYPE_CHECKING

from semif_shadow.demo.processes import Services

if TYPE_CHECKING:
    from pathlib import Path

CHILDREN = 150


def test_the_process_listing_is_always_whole_json(tmp_path: Path) -> None:
    """While children are started one after another, every read of processes.json parses.

    Written in place, a read between the truncation and the write saw an empty file (the Ctrl-C demo test
    failed once on it with a JSONDecodeError).
    """
    listing = tmp_path / "processes.json"
    torn: list[str] = []
    done = threading.Event()

    def read_all_the_time() -> None:
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
        with Services(tmp_path) as services:
            for index in range(CHILDREN):
                services.start(f"c{index}", [sys.executable, "-c", "pass"], {}, ())
    finally:
        done.set()
        reader.join()
    assert torn == []
    assert len(json.loads(listing.read_text(encoding="utf-8"))) == CHILDREN
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
