"""Settings from flags and the environment: validated alike, a bad value is one line naming its source."""

from __future__ import annotations

import pytest

from contracts.errors import SettingsError
from contracts.settings import build_settings
from scorer.settings import ScorerSettings
from shadow.settings import ShadowSettings


def test_a_flag_is_validated_like_the_variable_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--port 70000`` is refused (``model_copy`` accepted it), and the message names the flag."""
    monkeypatch.delenv("SCORER_PORT", raising=False)
    with pytest.raises(SettingsError) as info:
        build_settings(ScorerSettings, {"port": ("--port", 70000)})
    assert str(info.value).startswith("--port 70000: ")
    assert "\n" not in str(info.value)


def test_a_bad_variable_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SCORER_PORT=abc`` is one line naming the variable and its value, not a traceback."""
    monkeypatch.setenv("SCORER_PORT", "abc")
    with pytest.raises(SettingsError, match=r"^SCORER_PORT=abc: "):
        build_settings(ScorerSettings, {"port": ("--port", None)})


def test_a_bad_nested_records_variable_is_named_with_its_own_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad ``SHADOW_RECORDS_WRITER_ID`` under the sidecar's settings names that variable."""
    monkeypatch.setenv("SHADOW_CATALOG", "c.yaml")
    monkeypatch.setenv("SHADOW_RECORDS_WRITER_ID", "bad id/with slash")
    with pytest.raises(SettingsError, match=r"^SHADOW_RECORDS_WRITER_ID=bad id/with slash: "):
        build_settings(ShadowSettings)


def test_a_flag_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Given on the command line, a value replaces the variable's."""
    monkeypatch.setenv("SCORER_PORT", "9000")
    assert build_settings(ScorerSettings, {"port": ("--port", 9100)}).port == 9100
    assert build_settings(ScorerSettings, {"port": ("--port", None)}).port == 9000


def test_secrets_are_never_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad secret value is named, not printed."""
    monkeypatch.setenv("SHADOW_CATALOG", "c.yaml")
    monkeypatch.setenv("SHADOW_REDACTION_KEY", "x" * 10)
    monkeypatch.setenv("SHADOW_PORT", "-1")
    with pytest.raises(SettingsError) as info:
        build_settings(ShadowSettings)
    assert "xxxxxxxxxx" not in str(info.value)
