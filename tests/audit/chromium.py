"""A browser tab for the workbench tests: navigate, press keys, read the page, and keep every response.

Built on ``tests/dashboards/browser.py`` (Debian's headless Chromium over DevTools). Every response the
page receives (documents, redirects, the script and the style sheet) is kept with its headers and body,
fetched right after the page that asked for it has loaded.
"""

from __future__ import annotations

import base64
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests.dashboards.browser import DevTools, errors_in, page_tools

if TYPE_CHECKING:
    from collections.abc import Iterator

KEY_CODES = {"n": 78, "s": 83, "u": 85}


@dataclass
class Seen:
    """One response the page received."""

    url: str
    status: int
    headers: dict[str, str]
    body: str


class Tab:
    """One page under test (see the module docstring)."""

    def __init__(self, tools: DevTools) -> None:
        self.tools = tools
        self.seen: list[Seen] = []
        self.errors: list[str] = []
        self._fetched: set[str] = set()
        tools.call("Network.enable")

    def _wait_load(self) -> None:
        self.tools.wait_for("Page.loadEventFired")
        self._collect()

    def _collect(self) -> None:
        for event in self.tools.events:
            params = event.get("params", {})
            redirect = params.get("redirectResponse")
            if event.get("method") == "Network.requestWillBeSent" and redirect is not None:
                self.seen.append(Seen(redirect["url"], redirect["status"], redirect.get("headers", {}), ""))
            if event.get("method") != "Network.loadingFinished" or params["requestId"] in self._fetched:
                continue
            request_id = params["requestId"]
            self._fetched.add(request_id)
            response = next((e["params"]["response"] for e in self.tools.events
                             if e.get("method") == "Network.responseReceived"
                             and e["params"]["requestId"] == request_id), None)
            if response is None:
                continue
            if response["status"] == 204:  # no content: nothing to fetch
                self.seen.append(Seen(response["url"], 204, response.get("headers", {}), ""))
                continue
            body = self.tools.call("Network.getResponseBody", requestId=request_id)
            text = base64.b64decode(body["body"]).decode() if body.get("base64Encoded") else body["body"]
            self.seen.append(Seen(response["url"], response["status"], response.get("headers", {}), text))
        self.errors.extend(errors_in(self.tools.events))
        self.tools.events.clear()

    def goto(self, url: str) -> None:
        """Navigate and wait until the page (after any redirects) has loaded."""
        self.tools.events.clear()
        self.tools.call("Page.navigate", url=url)
        self._wait_load()

    def reload(self) -> None:
        """Reload the page, as an auditor pressing F5."""
        self.tools.events.clear()
        self.tools.call("Page.reload", ignoreCache=True)
        self._wait_load()

    def press(self, key: str) -> None:
        """Press one key (a digit, ``n``, ``s``, ``u``) on the page and wait for the next page."""
        self.tools.events.clear()
        code = ord(key) if key.isdigit() else KEY_CODES[key]
        common = {"key": key, "code": f"Digit{key}" if key.isdigit() else f"Key{key.upper()}",
                  "windowsVirtualKeyCode": code}
        self.tools.call("Input.dispatchKeyEvent", type="keyDown", text=key, **common)
        self.tools.call("Input.dispatchKeyEvent", type="keyUp", **common)
        self._wait_load()

    def type_text(self, text: str) -> None:
        """Type ``text`` into the focused element, key by key (no page load expected)."""
        for char in text:
            self.tools.call("Input.dispatchKeyEvent", type="keyDown", key=char, text=char)
            self.tools.call("Input.dispatchKeyEvent", type="keyUp", key=char)

    def escape(self) -> None:
        """Press Escape (no page load expected)."""
        for kind in ("keyDown", "keyUp"):
            self.tools.call("Input.dispatchKeyEvent", type=kind, key="Escape", code="Escape",
                            windowsVirtualKeyCode=27)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression on the page."""
        answer = self.tools.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return answer["result"].get("value")

    def submit(self, expression: str) -> None:
        """Run ``expression`` (one that submits a form) and wait for the next page."""
        self.tools.events.clear()
        self.evaluate(expression)
        self._wait_load()

    def sign_in(self, base: str, token: str, auditor: str) -> None:
        """Fill in and send the sign-in form."""
        self.goto(f"{base}/sign-in")
        self.submit(f"document.getElementById('token').value = {token!r};"
                    f"document.getElementById('auditor').value = {auditor!r};"
                    "document.querySelector('form').requestSubmit()")

    def text(self, element_id: str) -> str | None:
        """The text of the element with this id (None if absent)."""
        value = self.evaluate(f"(document.getElementById({element_id!r}) || {{}}).textContent || null")
        return None if value is None else str(value)

    def screenshot(self) -> bytes:
        """A PNG of the whole page."""
        shot = self.tools.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        return base64.b64decode(shot["data"])


@contextlib.contextmanager
def tab(width: int = 1100) -> Iterator[Tab]:
    """A fresh headless Chromium tab."""
    with page_tools(width) as tools:
        yield Tab(tools)
