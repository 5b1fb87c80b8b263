"""Property-based HTTP fuzzing shared by the scorer's and the sidecar's fuzz tests.

`served` runs an aiohttp app on loopback in a thread of its own (hypothesis drives plain, synchronous
test functions); `requests_for` generates bodies (JSON of any shape, valid bodies with fields
swapped, raw bytes, nesting thousands deep), content types, encodings and headers, and bodies really
in gzip or deflate (whole, cut short, or bombs that decode past the cap); `check_answer`
states the property: never a 5xx, and every 4xx is the JSON error naming a field.

Each endpoint gets its own run of ``FUZZ_EXAMPLES`` examples (default `DEFAULT_EXAMPLES`) from the seed
``FUZZ_SEED`` (default `DEFAULT_SEED`: the same examples every run in CI); `fuzz` prints the seed, and a
failure names it with the command line that replays it. Before the generated ones, `encoding_probes`
sends one valid body in every content encoding of `ENCODINGS` to each endpoint. A long run, new
examples each time (a random seed, printed with ``-s`` and on failure), is::

    FUZZ_EXAMPLES=1000 FUZZ_SEED=random .venv/bin/pytest -s tests/scorer/test_server_fuzz.py
    FUZZ_EXAMPLES=1000 FUZZ_SEED=random .venv/bin/pytest -s tests/shadow/test_api_fuzz.py
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http.client
import json
import os
import random
import threading
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web
from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

DEFAULT_EXAMPLES = 200
"""Examples per endpoint in the suite."""
DEFAULT_SEED = 20261204
"""The suite's seed: CI meets the same examples every run, never a new case by chance."""
ENCODINGS = ("identity", "gzip", "x-gzip", "deflate", "br", "zstd", "compress", "x-bogus",
             "gzip, identity", "identity, gzip", "GZIP", "")
"""Every ``Content-Encoding`` the probes send: those the edges decode, and those they must refuse."""
ANSWER_TIMEOUT_S = 30.0
_TOKEN_CHARS = st.characters(min_codepoint=0x21, max_codepoint=0x7E)


def fuzz_examples() -> int:
    """Examples per endpoint: ``FUZZ_EXAMPLES``, else `DEFAULT_EXAMPLES`."""
    return int(os.environ.get("FUZZ_EXAMPLES") or DEFAULT_EXAMPLES)


def fuzz_seed() -> int:
    """``FUZZ_SEED`` (``random``: a new one), else `DEFAULT_SEED`."""
    value = os.environ.get("FUZZ_SEED") or str(DEFAULT_SEED)
    return random.SystemRandom().randrange(2**32) if value == "random" else int(value)


def fuzz_settings() -> settings:
    """Hypothesis settings: `fuzz_examples` examples, no deadline, no example database on disk."""
    return settings(max_examples=fuzz_examples(), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def fuzz(test: Callable[..., None], name: str) -> None:
    """Run the ``@given`` function ``test`` from `fuzz_seed` under `fuzz_settings`, naming the seed.

    The seed and the example count are printed before the run and added to any failure, with the
    environment that replays it.
    """
    chosen, examples = fuzz_seed(), fuzz_examples()
    replay = f"FUZZ_SEED={chosen} FUZZ_EXAMPLES={examples}"
    print(f"fuzz {name}: {examples} examples, seed {chosen} ({replay})")  # noqa: T201  (shown on failure)
    try:
        seed(chosen)(fuzz_settings()(test))()
    except Exception as exc:
        exc.add_note(f"fuzz {name}: seed {chosen}; replay with {replay}")
        raise


@dataclass(frozen=True)
class Probe:
    """One generated request."""

    path: str
    body: bytes
    headers: dict[str, str]


@contextlib.contextmanager
def served(*apps: web.Application) -> Iterator[list[str]]:
    """Run each app on a free loopback port, on one event loop in a background thread; yield the URLs."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fuzz-server", daemon=True)
    thread.start()
    runners: list[web.AppRunner] = []

    async def start(app: web.Application) -> str:
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]

    try:
        yield [asyncio.run_coroutine_threadsafe(start(app), loop).result(60) for app in apps]
    finally:
        for runner in reversed(runners):
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(60)
        asyncio.run_coroutine_threadsafe(_cancel_the_rest(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


async def _cancel_the_rest() -> None:
    """Cancel and await what is left on the loop (a connection handler the cleanup did not end)."""
    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
json_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=5)
                           | st.dictionaries(st.text(max_size=12), inner, max_size=5), max_leaves=25)


def _mutated(valid: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A valid body with some fields replaced by any JSON, removed, or joined by unknown ones."""
    keys = sorted(valid)
    return st.builds(
        lambda swap, drop, extra: {**{k: v for k, v in valid.items() if k not in drop}, **swap, **extra},
        st.dictionaries(st.sampled_from(keys), json_values, max_size=2),
        st.sets(st.sampled_from(keys), max_size=2),
        st.dictionaries(st.text(max_size=8), json_values, max_size=2))


def _deep(depth: int, opener: str) -> bytes:
    if opener == "{":
        return b'{"a":' * depth + b"1" + b"}" * depth
    return b"[" * depth


def bodies(valid: list[dict[str, Any]]) -> st.SearchStrategy[bytes]:
    """Bodies: valid ones, mutated ones (alone or batched), any JSON, raw bytes, very deep nesting."""
    encode: Callable[[Any], bytes] = lambda v: json.dumps(v).encode()  # noqa: E731  (a local shorthand)
    mutated = st.one_of(*(_mutated(v) for v in valid))
    return st.one_of(
        st.sampled_from(valid).map(encode),
        mutated.map(encode),
        st.builds(lambda key, items: {key: items}, st.sampled_from(["decisions", "outcomes", "messages"]),
                  st.lists(mutated | json_values, max_size=4)).map(encode),
        json_values.map(encode),
        st.binary(max_size=512),
        st.builds(_deep, st.integers(100, 120_000), st.sampled_from("{[")),
    )


def headers() -> st.SearchStrategy[dict[str, str]]:
    """Content types (right, wrong, malformed), content encodings, bearer tokens and odd extra headers."""
    text = st.text(_TOKEN_CHARS, max_size=30)
    content_type = st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain",
                                    "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                                    "application/json; charset=latin-1", "", ";;;", "*/*"]) | text
    optional = st.fixed_dictionaries({}, optional={
        "Content-Encoding": st.sampled_from(ENCODINGS),
        "Authorization": st.sampled_from(["Bearer secret-token", "Bearer wrong", "Basic eA=="]) | text,
        "Accept": st.sampled_from(["application/json", "text/event-stream", "*/*"]) | text,
        "X-Amzn-SageMaker-Custom-Attributes": text,
        "X-Fuzz": text,
    })
    return st.builds(lambda ct, rest: {"Content-Type": ct, **rest}, content_type, optional)


def _encode(coding: str, body: bytes, cut: int | None) -> bytes:
    """``body`` compressed in ``coding``, cut to ``cut`` bytes (a stream that ends early) if given."""
    if coding == "gzip":
        data = gzip.compress(body)
    else:
        data = zlib.compress(body) if coding == "deflate" else zlib.compress(body)[2:-4]  # raw deflate
    return data if cut is None else data[:cut]


def _bomb(coding: str, size: int) -> bytes:
    """``size`` zero bytes compressed: a few KiB that decode to far more than any body cap."""
    return gzip.compress(bytes(size)) if coding == "gzip" else zlib.compress(bytes(size))


def compressed(paths: list[str], valid: list[dict[str, Any]]) -> st.SearchStrategy[Probe]:
    """Requests whose body is really in ``gzip`` or ``deflate``: whole, cut short, or a bomb."""
    coding = st.sampled_from(["gzip", "deflate", "raw-deflate"])
    body = st.one_of(
        st.builds(_encode, coding, bodies(valid), st.none() | st.integers(0, 64)),
        st.builds(_bomb, st.sampled_from(["gzip", "deflate"]), st.integers(1 << 20, 16 << 20)),
    )
    return st.builds(
        lambda path, data, hdrs, name: Probe(path, data, {**hdrs, "Content-Encoding": name}),
        st.sampled_from(paths), body, headers(), st.sampled_from(["gzip", "deflate", "x-gzip"]))


def encoding_probes(path: str, valid: dict[str, Any]) -> list[Probe]:
    """``valid`` to ``path`` once in every content encoding of `ENCODINGS`, then cut short and as a bomb.

    Encodings the edges decode get a body really in them (raw deflate too, labelled ``deflate``); the
    others carry the plain JSON under that label (a body not in the encoding it claims).
    """
    plain = json.dumps(valid).encode()
    hdrs = {"Content-Type": "application/json"}
    probes = []
    for name in ENCODINGS:
        coding = name.lower() if name.lower() in ("gzip", "deflate") else "gzip" if name == "x-gzip" else None
        body = plain if coding is None else _encode(coding, plain, None)
        probes.append(Probe(path, body, {**hdrs, "Content-Encoding": name}))
    for coding in ("gzip", "deflate"):
        probes.append(Probe(path, _encode(coding, plain, 12), {**hdrs, "Content-Encoding": coding}))
        probes.append(Probe(path, _bomb(coding, 16 << 20), {**hdrs, "Content-Encoding": coding}))
    probes.append(Probe(path, _encode("raw-deflate", plain, None), {**hdrs, "Content-Encoding": "deflate"}))
    return probes


def requests_for(paths: list[str], valid: list[dict[str, Any]]) -> st.SearchStrategy[Probe]:
    """Requests to one of ``paths`` with generated bodies and headers, some really compressed."""
    return st.builds(Probe, st.sampled_from(paths), bodies(valid), headers()) | compressed(paths, valid)


def send(url: str, method: str, path: str, body: bytes | None = None,
         hdrs: dict[str, str] | None = None) -> tuple[int, bytes, http.client.HTTPMessage]:
    """One request over a fresh connection; (status, body, response headers)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=ANSWER_TIMEOUT_S)
    try:
        conn.request(method, path, body=body, headers=hdrs or {})
        resp = conn.getresponse()
        return resp.status, resp.read(), resp.headers
    finally:
        conn.close()


def check_wire_error(body: bytes) -> None:
    """``{"error": {"code", "message", "field"}}`` with the field named."""
    error = json.loads(body)["error"]
    assert isinstance(error["code"], str), error
    assert isinstance(error["message"], str), error
    assert isinstance(error["field"], str), error
    assert error["field"], error


def check_answer(url: str, probe: Probe) -> None:
    """The property: no 5xx; a 4xx is the wire error naming a field."""
    status, body, _ = send(url, "POST", probe.path, probe.body, probe.headers)
    assert status < 500, (status, body[:300])
    if status >= 400:
        check_wire_error(body)


def check_sagemaker_answer(url: str, probe: Probe) -> None:
    """The property for the InvokeEndpoint emulation: no 5xx; a 4xx is the AWS error form.

    That is a JSON ``message`` and an ``x-amzn-ErrorType`` header; a 424 ``ModelError`` carries the
    container's wire error, naming a field, in ``OriginalMessage``.
    """
    status, body, hdrs = send(url, "POST", probe.path, probe.body, probe.headers)
    assert status < 500, (status, body[:300])
    if status >= 400:
        answer = json.loads(body)
        assert isinstance(answer["message"], str), answer
        assert hdrs["x-amzn-ErrorType"], answer
        if status == 424:
            check_wire_error(answer["OriginalMessage"].encode())
