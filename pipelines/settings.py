"""PIPELINES_* settings: one class, built once in the CLI and passed in (tests build it directly)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from pipelines.errors import BadArgument

PRICES_FILE = Path(__file__).with_name("prices.yaml")


class PipelineSettings(BaseSettings):
    """How the weekly jobs compute their metrics. Every field is also a ``PIPELINES_<NAME>`` variable."""

    model_config = SettingsConfigDict(env_prefix="PIPELINES_", extra="ignore")

    ece_bins: int = Field(default=15, ge=2, le=100, description="equal-mass bins for top-label ECE")
    classwise_bins: int = Field(default=15, ge=2, le=100, description="equal-width bins for classwise ECE")
    bootstrap_reps: int = Field(
        default=200, ge=10, le=2000, description="bootstrap replicates for the ECE interval"
    )
    bootstrap_blocks: int = Field(
        default=100,
        ge=10,
        le=2000,
        description="random blocks resampled by the bootstrap (hash of decision_id)",
    )
    bootstrap_level: float = Field(default=0.95, gt=0.5, lt=1.0, description="ECE interval level")
    precision_target: float = Field(default=0.95, gt=0.0, lt=1.0, description="per-option precision target")
    alpha: float = Field(
        default=0.05, gt=0.0, lt=0.5, description="family-wise error rate of the threshold tests"
    )
    threshold_step: float = Field(default=0.01, gt=0.0, le=0.1, description="grid of candidate thresholds")
    severe_confidence: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description="confidence at which a wrong high-consequence proposal is severe",
    )
    high_consequence: dict[str, list[str]] = Field(
        default_factory=lambda: {"ticket_routing": ["refund"], "priority": ["urgent"]},
        description="high-consequence option ids per decision type (JSON); with a catalog, set "
        "types replace the catalog's marks and others are added (the default: the generator's types)",
    )
    catalog: Path | None = Field(
        default=None, description="sidecar catalog YAML whose options marked high_consequence are used"
    )
    reference_weeks: int = Field(
        default=4, ge=2, le=52, description="weeks before the target used as drift reference"
    )
    min_reference_weeks: int = Field(
        default=3, ge=2, le=52, description="reference weeks needed before the ECE alert can fire"
    )
    psi_bins: int = Field(default=10, ge=2, le=100, description="reference quantile bins for confidence PSI")
    maturity_lag_days: float = Field(
        default=3.0, ge=0.0, description="a week is final this long after it ends"
    )
    policies: list[Path] = Field(
        default_factory=list,
        description="semif.policy/v1 files whose evidence the `evidence` mart accumulates (JSON list)",
    )
    evidence_alpha: float = Field(
        default=0.025, gt=0.0, lt=0.5, description="one-sided level of the evidence ledger's bounds"
    )
    utilization: float = Field(
        default=0.5,
        gt=0.0,
        le=1.0,
        description="assumed busy share of paid instance time (cost = busy hours / this)",
    )
    prices_file: Path = Field(default=PRICES_FILE, description="dated price table (YAML)")
    s3_endpoint: str | None = Field(default=None, description="S3 endpoint override (moto, MinIO)")
    s3_region: str = Field(default="us-east-1", description="S3 region")
    memory_limit: str = Field(
        # the process peaks about 250-500 MiB above it (docs/performance.md): under 2 GiB for the 10M bench
        default="1250MB",
        description="DuckDB memory_limit: what its tables and joins hold; the rest is spilled",
    )
    temp_directory: Path | None = Field(default=None, description="where DuckDB spills beyond memory_limit")
    pass_mb: int = Field(
        default=512, ge=0,
        description="proposals' Parquet MB one pass of the models reads (whole decision types; 0: one each)",
    )
    disk_ratio: float = Field(
        default=1.25, ge=0,
        description="a pass whose proposals' Parquet bytes pass this many times memory_limit keeps "
                    "int_decisions in a DuckDB file under temp_directory (0: never)",
    )
    threads: int | None = Field(default=None, ge=1, description="DuckDB threads (default: all cores)")


def high_consequence_options(settings: PipelineSettings) -> dict[str, list[str]]:
    """High-consequence option ids per decision type.

    Without a catalog: ``high_consequence`` (set, or its default). With ``catalog``: the options it marks
    ``high_consequence: true``, and where ``PIPELINES_HIGH_CONSEQUENCE`` is set, each type it names replaces
    the catalog's list for that type (``[]`` unmarks one) and types the catalog lacks are added.
    """
    if settings.catalog is None:
        return dict(settings.high_consequence)
    from contracts.catalog import load_catalog  # noqa: PLC0415  (loaded only when a catalog is given)
    from contracts.errors import CatalogError  # noqa: PLC0415

    try:
        catalog = load_catalog(settings.catalog)
    except CatalogError as exc:
        raise BadArgument(str(exc), "catalog") from exc
    marked = {
        name: [option.id for option in dtype.options if option.high_consequence]
        for name, dtype in catalog.decision_types.items()
    }
    if "high_consequence" in settings.model_fields_set:
        marked.update(settings.high_consequence)
    return {name: options for name, options in marked.items() if options}
