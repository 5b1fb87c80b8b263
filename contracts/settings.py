"""Settings from the environment and command-line flags, validated alike, with one-line errors.

Every package keeps one pydantic-settings class (``SCORER_*``, ``SHADOW_*``, ``SHADOW_RECORDS_*``,
``PIPELINES_*``). A command builds it once with `build_settings`: flags given on the command line win
over the environment and are validated by the same rules (``serve --port 70000`` is refused like
``SCORER_PORT=70000``), and a bad value is one `SettingsError` line naming the flag or the variable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings

from contracts.errors import SettingsError

if TYPE_CHECKING:
    from collections.abc import Mapping

S = TypeVar("S", bound=BaseSettings)


def build_settings(cls: type[S], flags: Mapping[str, tuple[str, Any]] | None = None, **values: Any) -> S:
    """``cls`` from the environment, overridden by ``flags`` (``{field: (flag, value)}``, None skipped).

    ``values`` are further overrides from code (not named in errors as flags).
    """
    given = {field: value for field, (_flag, value) in (flags or {}).items() if value is not None}
    try:
        return cls(**values, **given)
    except ValidationError as exc:
        raise SettingsError(describe(exc, cls, flags or {}, given)) from exc


def describe(exc: ValidationError, cls: type[BaseSettings], flags: Mapping[str, tuple[str, Any]],
             given: Mapping[str, Any]) -> str:
    """The first error as one line: ``--port 70000: Input should be less than or equal to 65535``."""
    error = exc.errors()[0]
    field = str(error["loc"][0]) if error["loc"] else ""
    message = error["msg"]
    if field in given:
        return f"{flags[field][0]} {given[field]}: {message}"
    owner = _owner(cls, exc.title)  # a nested settings class (``ShadowSettings.records``) has its own prefix
    prefix = str(owner.model_config.get("env_prefix", ""))
    name = f"{prefix}{field}".upper() if field else cls.__name__
    secret = any(word in field for word in ("secret", "key", "token"))
    shown = "" if error.get("input") is None or secret else f"={str(error['input'])[:80]}"
    return f"{name}{shown}: {message}"


def _owner(cls: type[BaseSettings], title: str) -> type[BaseSettings]:
    """The settings class named ``title``: ``cls`` or the class of one of its settings fields."""
    if title == cls.__name__:
        return cls
    for info in cls.model_fields.values():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseSettings) and kind.__name__ == title:
            return kind
    return cls
