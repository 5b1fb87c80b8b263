"""A real headless Chromium driven over the DevTools protocol (websocket-client): load, collect, screenshot.

Debian's ``chromium`` with a fresh profile and no background networking; the page's console errors,
uncaught exceptions and log errors are collected while it loads.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import websocket

if TYPE_CHECKING:
    from collections.abc import Iterator

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
)


def chromium() -> str | None:
    """The Chromium binary, if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Page:
    """What a page load produced."""

    errors: list[str] = field(default_factory=list)
    result: Any = None
    screenshot: bytes = b""


class DevTools:
    """One websocket session to a page target."""

    def __init__(self, url: str) -> None:
        self.ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and wait for its answer, keeping events that arrive meanwhile."""
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 30) -> None:
        """Read events until ``event`` arrives."""
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == event for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(event)
            self.events.append(json.loads(self.ws.recv()))


def errors_in(events: list[dict[str, Any]]) -> list[str]:
    """Console errors, uncaught exceptions and error log entries among the events."""
    found = []
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in {"error", "assert"}:
            found.append(f"console: {params.get('args')}")
        elif method == "Runtime.exceptionThrown":
            found.append(f"exception: {params.get('exceptionDetails')}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            found.append(f"log: {params['entry'].get('text')}")
    return found


@contextlib.contextmanager
def page_tools(width: int = 1280) -> Iterator[DevTools]:
    """A fresh headless Chromium with one blank page, driven over DevTools; stopped and removed on exit."""
    binary = chromium()
    assert binary, "chromium not installed (make installs it: apt-get install -y chromium)"
    profile = tempfile.mkdtemp(prefix="semif-chromium-")
    try:
        proc = subprocess.Popen(  # noqa: S603  (a fixed binary and flags)
            [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its renderer, GPU and crash handler processes share its group
        )
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            deadline = time.monotonic() + 30
            while not port_file.exists() or not port_file.read_text().strip():
                assert time.monotonic() < deadline, "chromium did not open its DevTools port"
                time.sleep(0.1)
            port = port_file.read_text().split()[0]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
                target = next(t for t in json.load(answer) if t["type"] == "page")
            tools = DevTools(target["webSocketDebuggerUrl"])
            for domain in ("Page", "Runtime", "Log"):
                tools.call(f"{domain}.enable")
            tools.call(
                "Emulation.setDeviceMetricsOverride",
                width=width,
                height=900,
                deviceScaleFactor=1,
                mobile=False,
            )
            try:
                yield tools
            finally:
                tools.ws.close()
        finally:
            stop(proc)
    finally:
        remove_profile(Path(profile))


def load(path: Path, expression: str, width: int = 1280, height: int | None = None) -> Page:
    """Open ``path`` in headless Chromium, evaluate ``expression`` once loaded, and take a screenshot.

    The whole page, or with ``height`` its top ``height`` pixels (``bench/review_screenshot.py``).
    """
    with page_tools(width) as tools:
        tools.call("Page.navigate", url=path.resolve().as_uri())
        tools.wait_for("Page.loadEventFired")
        value = tools.call("Runtime.evaluate", expression=expression, returnByValue=True)
        top = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        clip = {} if height is None else {"clip": top}
        shot = tools.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, **clip)
        return Page(errors_in(tools.events), value["result"].get("value"), base64.b64decode(shot["data"]))


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop Chromium and every process of its group, so that none still writes to the profile."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # a child that outlived the browser process


def remove_profile(profile: Path, timeout: float = 10) -> None:
    """Delete the profile folder, retrying while a child that is exiting still adds a file to it.

    `TemporaryDirectory` removed it once and failed the test with ``Directory not empty: 'Default'`` when
    Chromium's last child wrote after the browser process had exited (seen once in 2026-12-02's suite).
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            shutil.rmtree(profile)
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
        else:
            return
