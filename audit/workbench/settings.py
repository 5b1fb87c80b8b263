"""AUDIT_* settings: one class, built once by ``semif-shadow audit serve`` and passed in (tests build it).

Answers go through the same durable record store as the sidecar's (``shadow.records``), under the
records root, from a spool and a writer id of the workbench's own: two stores never share a journal,
and the workbench's files (``audit-<host>-<seq>.parquet``) never take a sidecar's names. S3 settings
(endpoint, region, encryption) are the sidecar's ``SHADOW_RECORDS_*`` variables; the endpoint and region
may also be given as ``s3_endpoint`` and ``s3_region`` (``--s3-endpoint``, ``--s3-region``, as for
``audit sample``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from audit.workbench.limits import DEFAULT_CLIENT_FAILURES, DEFAULT_TYPE_FAILURES, DEFAULT_WINDOW_S
from pipelines.errors import PipelinesError
from pipelines.weeks import parse_week, week_label
from shadow.records.settings import WRITER_ID_PATTERN, RecordSettings, default_writer_id

DEFAULT_PORT = 8490
DEFAULT_MAX_BODY_BYTES = 16 * 1024
DEFAULT_NOTE_CHARS = 2000
HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\.?|\[[0-9A-Fa-f:.]{2,45}\]")
"""A DNS name, an IPv4 address or a bracketed IPv6 address (the whole string, ``fullmatch``)."""


def _whole(pattern: re.Pattern[str], meaning: str) -> AfterValidator:
    def check(value: str | None) -> str | None:
        if value is not None and pattern.fullmatch(value) is None:
            message = f"not {meaning}"
            raise ValueError(message)
        return value
    return AfterValidator(check)


def _iso_week(value: str) -> str:
    """``value`` if it is an ISO week written as ``pipelines.weeks`` writes one (``2026-W48``), exactly."""
    try:
        canonical = week_label(parse_week(value))
    except PipelinesError:
        canonical = None
    if canonical != value:
        message = "not an ISO week like 2026-W48"
        raise ValueError(message)
    return value


def default_audit_writer() -> str:
    """``audit-<host>``: the workbench's files never take the names of a sidecar on the same host."""
    return f"audit-{default_writer_id()}"[:64]


class WorkbenchSettings(BaseSettings):
    """How the workbench runs. Every field is also an ``AUDIT_<NAME>`` environment variable."""

    model_config = SettingsConfigDict(env_prefix="AUDIT_", extra="ignore")

    root: str = Field(description="records root (folder or s3://bucket/prefix): the sample and the answers")
    s3_endpoint: str | None = Field(default=None, description="S3 API endpoint of an s3:// root")
    s3_region: str | None = Field(default=None, description="S3 region of an s3:// root")
    week: Annotated[str, AfterValidator(_iso_week)] = Field(
        description="ISO week of the audit sample (2026-W48)")
    decision_type: str | None = Field(default=None, description="serve only this decision type's sample")
    catalog: Path = Field(description="decision catalog YAML: questions, options, state rules, tokens")
    host: str = Field(default="127.0.0.1", description="address the page listens on")
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535, description="port the page listens on")
    spool_dir: Path = Field(default=Path("audit-spool"),
                            description="the workbench's journal (never the sidecar's)")
    writer_id: str = Field(default_factory=default_audit_writer, pattern=WRITER_ID_PATTERN,
                           description="names the workbench's records files")
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1024, le=1024 * 1024,
                                description="request body cap (an answer with its note is far smaller)")
    note_max_chars: int = Field(default=DEFAULT_NOTE_CHARS, ge=0, le=20_000, description="longest note")
    claim_s: float = Field(default=900.0, gt=0, description="a decision shown to one auditor is held for "
                           "them this long before another auditor may be shown it")
    tls_cert: Path | None = Field(default=None, description="serve HTTPS with this certificate (PEM)")
    tls_key: Path | None = Field(default=None, description="the certificate's private key (PEM)")
    behind_tls_proxy: bool = Field(default=False, description="a TLS proxy is in front: plain HTTP may "
                                   "listen off loopback, and cookies are Secure and HSTS sent as over TLS")
    public_host: Annotated[str | None, _whole(HOST_NAME, "a host name or address")] = Field(
        default=None, description="the name browsers reach the workbench by (a proxy's): a Host it accepts")
    sign_in_client_failures: int = Field(default=DEFAULT_CLIENT_FAILURES, ge=1,
                                         description="wrong sign-in tokens one client may send in the window")
    sign_in_type_failures: int = Field(default=DEFAULT_TYPE_FAILURES, ge=1, description="wrong sign-in "
                                       "tokens against one decision type (all clients) in the window")
    sign_in_window_s: float = Field(default=DEFAULT_WINDOW_S, gt=0, le=86_400,
                                    description="the sign-in limits' sliding window")

    @property
    def https(self) -> bool:
        """Whether browsers reach the workbench over HTTPS (its own TLS, or a TLS proxy in front)."""
        return self.tls_cert is not None or self.behind_tls_proxy

    def records(self) -> RecordSettings:
        """The record store's settings: the root, the S3 flags, and the workbench's own spool and writer id.

        Unset S3 flags leave the sidecar's ``SHADOW_RECORDS_S3_*`` variables in force.
        """
        s3 = {k: v for k, v in (("s3_endpoint_url", self.s3_endpoint), ("s3_region", self.s3_region)) if v}
        store = RecordSettings(root=self.root, spool_dir=self.spool_dir, writer_id=self.writer_id,
                               roll_seconds=5.0)
        return store.model_copy(update=s3)
