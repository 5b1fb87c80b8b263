"""The decision catalog: the example validates, and every mistake is named by file and field."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from contracts.catalog import load_catalog, parse_catalog
from contracts.errors import CatalogError
from semif_shadow.cli import main
from tests.shadow.harness import ticket_type, write_catalog

if TYPE_CHECKING:
    from collections.abc import Callable

EXAMPLE = Path(__file__).resolve().parents[2] / "shadow" / "examples" / "catalog.yaml"


def test_example_catalog_validates() -> None:
    """The shipped example loads, keeps option order and parses the end date with its timezone."""
    catalog = load_catalog(EXAMPLE)
    tickets = catalog.decision_types["ticket_routing"]
    assert tickets.option_ids == ["billing", "technical", "account", "review"]
    assert tickets.experiment_ends_at.utcoffset() is not None
    assert catalog.decision_types["refund_approval"].scorer.backend == "sagemaker"
    assert len(catalog.sha256()) == 64


def _broken(mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    dtype = ticket_type("http://127.0.0.1:1")
    mutate(dtype)
    return {"version": 1, "decision_types": {"tickets": dtype}}


@pytest.mark.parametrize(("mutate", "field", "words"), [
    (lambda d: d["sampling"].__setitem__("rate", 1.5) if "sampling" in d else d.__setitem__(
        "sampling", {"rate": 1.5}), "decision_types.tickets.sampling.rate", "less than or equal to 1"),
    (lambda d: d.__setitem__("review_option", "nobody"), "decision_types.tickets", "review_option 'nobody'"),
    (lambda d: d["options"].append({"id": "billing", "text": "again"}), "decision_types.tickets",
     "duplicate option ids"),
    (lambda d: d.__setitem__("experiment_ends_at", "2099-01-01T00:00:00"), "decision_types.tickets",
     "needs a timezone"),
    (lambda d: d["scorer"].__setitem__("endpoint", "scorer:8080"), "decision_types.tickets.scorer",
     "http(s) URL"),
    (lambda d: d["state"].__setitem__("scorer_sees", "included"), "decision_types.tickets",
     "only allowed for the in-process local backend"),
    (lambda d: d.__setitem__("sampling_rate", 0.5), "decision_types.tickets.sampling_rate",
     "Extra inputs are not permitted"),
    (lambda d: d["scorer"].__setitem__("backend", "openai"), "decision_types.tickets.scorer.backend",
     "'local', 'semif_http', 'sagemaker' or 'chat'"),
    (lambda d: d.__setitem__("candidates", {"gpu q8": dict(d["scorer"])}),
     "decision_types.tickets.candidates.gpu q8.[key]", "should match pattern"),
    (lambda d: d.__setitem__("candidates", {"default": dict(d["scorer"])}), "decision_types.tickets",
     "candidate 'default' has the champion's name"),
    (lambda d: d.__setitem__("candidates", {"b": {"backend": "chat", "endpoint": "x"}}),
     "decision_types.tickets.candidates.b", "http(s) URL"),
    (lambda d: (d.__setitem__("scorer", {"backend": "local"}),
                d["state"].__setitem__("scorer_sees", "included"),
                d.__setitem__("candidates", {"b": {"backend": "semif_http", "endpoint": "http://h"}})),
     "decision_types.tickets", "only allowed for the in-process local backend"),
])
def test_invalid_catalog_names_the_field(mutate: Callable[[dict[str, Any]], None], field: str,
                                         words: str) -> None:
    """Each kind of mistake fails validation with the catalog path of the offending field."""
    with pytest.raises(CatalogError) as info:
        parse_catalog(_broken(mutate), "cat.yaml")
    message = str(info.value)
    assert f"cat.yaml: {field}:" in message
    assert words in message


def test_check_catalog_command(tmp_path: Path) -> None:
    """`semif-shadow sidecar check-catalog` lists a good catalog and exits 1 naming the bad field."""
    runner = CliRunner()
    good = runner.invoke(main, ["sidecar", "check-catalog", str(EXAMPLE)])
    assert good.exit_code == 0, good.output
    assert "ticket_routing: 4 options, rate 0.25, semif_http" in good.output
    assert "ok: 2 decision types" in good.output
    bad_path = write_catalog(tmp_path, {"tickets": _broken(lambda d: d.__setitem__("question", ""))[
        "decision_types"]["tickets"]})
    bad = runner.invoke(main, ["sidecar", "check-catalog", str(bad_path)])
    assert bad.exit_code == 1
    assert "decision_types.tickets.question" in bad.output


def test_every_sidecar_command_has_an_example() -> None:
    """Every `sidecar` subcommand's --help carries an Example block."""
    runner = CliRunner()
    for command in ("run", "check-catalog"):
        result = runner.invoke(main, ["sidecar", command, "--help"])
        assert result.exit_code == 0
        assert "Example" in result.output


def test_runtime_checks_name_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start-up refuses a catalog the environment cannot serve, naming the field.

    A type that hashes fields without SHADOW_REDACTION_KEY, or whose bearer-token variable is unset.
    """
    from shadow.live_catalog import build_runtimes  # noqa: PLC0415

    hashing = parse_catalog(_broken(lambda _: None))
    with pytest.raises(CatalogError, match=r"decision_types\.tickets\.state\.hash: needs SHADOW_REDACTION"):
        build_runtimes(hashing, redaction_key=None)
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    tokened = parse_catalog(_broken(lambda d: d.__setitem__("auth_token_env", "NO_SUCH_TOKEN")))
    with pytest.raises(CatalogError, match=r"auth_token_env: NO_SUCH_TOKEN is not set"):
        build_runtimes(tokened, redaction_key=b"k" * 32)


def test_candidates_are_named_scorers_beside_the_champion() -> None:
    """``scorer`` is the champion (``default`` unless ``champion`` names it); ``candidates`` adds challengers.

    A catalog without either key serialises exactly as before they existed, so its sha256 is unchanged.
    """
    plain = _broken(lambda _: None)
    plain_type = parse_catalog(plain).decision_types["tickets"]
    assert list(plain_type.scorers) == ["default"]
    assert not {"champion", "candidates"} & set(plain_type.model_dump())
    challenger = {"backend": "semif_http", "endpoint": "http://127.0.0.1:2", "normalization": "pmi"}
    named = _broken(lambda d: d.update(champion="cpu_q4", candidates={"gpu_q8": challenger}))
    dtype = parse_catalog(named).decision_types["tickets"]
    assert list(dtype.scorers) == ["cpu_q4", "gpu_q8"]
    assert dtype.scorers["gpu_q8"].normalization == "pmi"
    assert parse_catalog(named).sha256() != parse_catalog(plain).sha256()
