"""A scripted auditor over plain HTTP (``http.client``): signs in, reads the next decision, answers it.

It follows no redirect by itself: an answer counts as acknowledged exactly when its POST returns
``303 See Other`` (sent only once the answer is durable).
"""

from __future__ import annotations

import http.client
from urllib.parse import urlencode, urlsplit

from tests.audit.forms import hidden

TIMEOUT_S = 10.0


class WorkbenchClient:
    """One auditor's browser, reduced to cookies and forms."""

    def __init__(self, base: str, token: str, name: str) -> None:
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.token, self.name = token, name
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple[int, str, str]:
        """``(status, Location, body)`` of one request; cookies kept."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT_S)
        try:
            headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
            body = None
            if form is not None:
                body = urlencode(form)
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            text = response.read().decode()
            for header in response.headers.get_all("Set-Cookie") or []:
                name, _, rest = header.partition("=")
                self.cookies[name.strip()] = rest.split(";", 1)[0].strip('"')
            return response.status, response.headers.get("Location", ""), text
        finally:
            conn.close()

    def sign_in(self) -> None:
        """Through the sign-in form."""
        _, _, page = self.request("GET", "/sign-in")
        status, _, body = self.request("POST", "/sign-in", {"csrf": hidden(page)["csrf"], "token": self.token,
                                                            "auditor": self.name})
        assert status == 303, body

    def next_decision(self) -> dict[str, str] | None:
        """The hidden fields of the next decision's page (None: nothing left)."""
        status, location, page = self.request("GET", "/next")
        if status == 200:
            return None
        assert status == 303, page
        status, _, page = self.request("GET", location)
        assert status == 200, page
        return hidden(page)

    def answer(self, fields: dict[str, str], answer: str) -> bool:
        """Post an answer; True once acknowledged (the 303)."""
        status, _, body = self.request("POST", "/answers", {**fields, "answer": answer})
        assert status in {303, 503}, body
        return status == 303
