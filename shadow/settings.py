"""SHADOW_* settings: built once by the command line and passed in (tests build them directly).

Where records go (``SHADOW_RECORDS_*``) is `shadow.records.settings.RecordSettings`, held here as
``records``: one class owns each value and its default.
"""

from __future__ import annotations

from pathlib import Path  # noqa: TC003  (pydantic resolves the annotation at run time)

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from shadow.records.settings import RecordSettings

DEFAULT_PORT = 8470
DEFAULT_PROXY_PORT = 8471
MIB = 1024 * 1024


class ShadowSettings(BaseSettings):
    """How the sidecar runs. Every field is also a ``SHADOW_<NAME>`` environment variable."""

    model_config = SettingsConfigDict(env_prefix="SHADOW_", extra="ignore")

    catalog: Path = Field(description="decision catalog YAML (see docs/sidecar.md)")
    host: str = Field(default="127.0.0.1", description="address the mirror API (and /metrics) listens on")
    proxy_host: str = Field(default="127.0.0.1", description="proxy mode: address the proxy listens on")
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535, description="mirror API, /metrics, /healthz")
    proxy_port: int | None = Field(
        default=None, ge=0, le=65535, description="proxy mode: listen here and forward to upstream_url")
    upstream_url: str | None = Field(default=None, description="proxy mode: the production router's base URL")
    upstream_connect_timeout_s: float = Field(default=5.0, gt=0, description="proxy: connect to upstream")
    upstream_read_timeout_s: float = Field(default=120.0, gt=0, description="proxy: max gap between reads")
    proxy_process: bool = Field(
        default=True, description="proxy: relay in its own process (never waits behind the mirror's work; "
        "false, on the sidecar's loop, is for tests and low rates)")
    proxy_idle_timeout_s: float = Field(
        default=60.0, gt=0, description="proxy: close a connection with no request in flight this long")
    proxy_max_connections: int = Field(default=4096, ge=1, description="proxy: client connections at once")
    proxy_held_bytes: int = Field(
        default=64 * MIB, ge=0, description="proxy: bytes the relay holds for mirroring (body copies, "
        "client bytes while connecting); beyond, relayed but not mirrored (relay_memory)")
    proxy_handoff_bytes: int = Field(
        default=16 * MIB, ge=65536, description="proxy: exchanges waiting for the mirror; beyond, dropped")
    records: RecordSettings = Field(
        default_factory=RecordSettings, description="where records go: the SHADOW_RECORDS_* variables")
    workers: int = Field(default=4, ge=1, le=256, description="concurrent scorer calls")
    queue_max_items: int = Field(default=1000, ge=1, description="decisions waiting for a worker")
    queue_max_bytes: int = Field(default=16 * MIB, ge=1024, description="bytes of state waiting for a worker")
    record_backlog: int = Field(default=100_000, ge=100, description="finished rows waiting for the writer")
    record_backlog_bytes: int = Field(default=64 * MIB, ge=MIB,
                                      description="estimated bytes of rows waiting for the writer")
    max_body_bytes: int = Field(default=MIB, ge=1024, description="mirror API request body cap")
    api_body_budget_bytes: int = Field(
        default=8 * MIB, ge=1024, description="mirror API: bytes of bodies handled at once; beyond, 503")
    mirror_max_bytes: int = Field(
        default=MIB, ge=1024, description="proxy: larger request/response bodies pass through unmirrored")
    kill_switch: bool = Field(default=False, description="drop every decision (reason kill_switch)")
    kill_switch_file: Path | None = Field(default=None, description="kill switch on while it exists")
    kill_switch_poll_s: float = Field(default=1.0, gt=0, description="kill switch file check period")
    redaction_key: SecretStr | None = Field(default=None, description="HMAC key for hashed state fields")
    gc_tuning: bool = Field(default=True, description="freeze start-up objects, collect less often")
    gc_threshold: int = Field(default=50_000, ge=700, description="allocations between young collections")
    log_request_max_lines: int = Field(default=20, ge=1, description="log lines one request may write")
    log_request_max_bytes: int = Field(
        default=65536, ge=1024, description="log bytes (messages, tracebacks) one request may write")
    shutdown_grace_s: float = Field(default=5.0, ge=0, description="in-flight calls get this on shutdown")
    shutdown_drain_s: float = Field(default=2.0, ge=0,
                                    description="on shutdown, rows waiting for the writer get this long")
