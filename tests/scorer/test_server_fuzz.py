"""The scorer server under generated requests: no 5xx, every 4xx names a field, and it keeps serving."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from hypothesis import given
from hypothesis import strategies as st

from scorer.server.app import init_app
from scorer.settings import ScorerSettings
from tests.http_fuzz import (
    Probe,
    check_answer,
    check_sagemaker_answer,
    encoding_probes,
    fuzz,
    fuzz_examples,
    requests_for,
    send,
    served,
)

if TYPE_CHECKING:
    from pathlib import Path

VALID: list[dict[str, Any]] = [
    {"decision_id": "d-1", "decision_type": "support", "state": "charged twice",
     "question": "Which team?",
     "options": [{"id": "billing", "text": "Billing"}, {"id": "tech", "text": "Tech"}]},
    {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 2},
]
SIGNED = {"Authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/sagemaker/aws4_request",
          "X-Amz-Date": "20260101T000000Z"}


def _ready(url: str) -> None:
    """Poll /ping until the model has loaded (it loads in the background)."""
    for _ in range(600):
        if send(url, "GET", "/ping")[0] == 200:
            return
        time.sleep(0.05)
    raise AssertionError("the scorer never became ready")


def test_generated_requests_never_5xx_and_4xx_name_the_field(model_path: Path) -> None:
    """Any body, content type or header set on ``/invocations`` and ``/endpoints/{name}/invocations``.

    Bodies: valid SemIf and chat bodies with fields swapped, dropped or added, any JSON, raw bytes, and
    objects or arrays nested up to 120,000 deep. Never a 5xx; every 4xx is the JSON error naming a
    field (for the SageMaker emulation, the AWS error form whose ``ModelError`` carries it); and
    ``/ping`` still answers 200 afterwards. Each endpoint gets a valid body in every content encoding
    (`encoding_probes`), then its own `DEFAULT_EXAMPLES` generated requests (the seed printed with any
    failure).
    """
    settings = ScorerSettings.model_validate({"model_path": model_path, "n_threads": 2, "n_ctx": 256,
                                             "chat_max_tokens": 2})  # n_ctx bounds any generation
    with served(init_app(settings)) as (url,):
        _ready(url)

        sent: dict[str, int] = {"invocations": 0, "endpoints": 0}
        for valid in VALID:
            for probe in encoding_probes("/invocations", valid):
                check_answer(url, probe)
            for probe in encoding_probes("/endpoints/semif/invocations", valid):
                check_sagemaker_answer(url, probe)

        @given(probe=requests_for(["/invocations"], VALID))
        def invocations(probe: Probe) -> None:
            sent["invocations"] += 1
            check_answer(url, probe)

        @given(probe=requests_for(["/endpoints/semif/invocations"], VALID),
               name=st.sampled_from(["semif", "a-b-1", "bad_name", "-x", "é"]), signed=st.booleans())
        def endpoints(probe: Probe, name: str, signed: bool) -> None:
            sent["endpoints"] += 1
            hdrs = {**probe.headers, **(SIGNED if signed else {})}
            path = f"/endpoints/{name}/invocations".replace("é", "%C3%A9")
            check_sagemaker_answer(url, Probe(path, probe.body, hdrs))

        fuzz(invocations, "/invocations")
        fuzz(endpoints, "/endpoints/{name}/invocations")
        assert min(sent.values()) >= fuzz_examples(), sent
        assert send(url, "GET", "/ping")[0] == 200
