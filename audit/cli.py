"""The ``semif-shadow audit`` command group: draw a week's audit sample, serve the workbench."""

from __future__ import annotations

from typing import Any

import click

from audit.errors import AuditError

S3_ENDPOINT = click.option(
    "--s3-endpoint", default=None, envvar="SHADOW_RECORDS_S3_ENDPOINT_URL",
    help="S3 API endpoint of an s3:// root (moto, MinIO; default AWS; SHADOW_RECORDS_S3_ENDPOINT_URL).")
S3_REGION = click.option(
    "--s3-region", default=None, envvar="SHADOW_RECORDS_S3_REGION",
    help="S3 region of an s3:// root (default us-east-1; SHADOW_RECORDS_S3_REGION).")
"""How both commands open an s3:// records root: the sidecar's record variables, or these flags."""


class AuditGroup(click.Group):
    """The audit commands: an ``AuditError`` they stop on becomes one line and exit 1, here alone."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; translate an ``AuditError`` into a ``ClickException``."""
        try:
            return super().invoke(ctx)
        except AuditError as exc:
            raise click.ClickException(str(exc)) from exc


@click.group(cls=AuditGroup)
def audit() -> None:
    """Audits: who was right, production or the candidates, on a sample of decisions.

    \b
    Examples:
      semif-shadow audit --help
    """


@audit.command("sample")
@click.option("--root", required=True, help="Records root (folder or s3://bucket/prefix) holding the week.")
@click.option("--week", required=True, help="ISO week whose labelled decisions are sampled, e.g. 2026-W48.")
@click.option("--type", "decision_type", default=None, help="Only this decision type (default: every type).")
@click.option("--disagreements", type=click.IntRange(min=0), default=200, show_default=True,
              help="At most this many decisions where some candidate disagrees with production.")
@click.option("--agreement-rate", type=click.FloatRange(0.0, 1.0), default=0.02, show_default=True,
              help="The share of decisions where every candidate agrees with production.")
@click.option("--seed", type=int, default=0, show_default=True, help="The draw's seed.")
@click.option("--overlap", type=click.FloatRange(0.0, 1.0), default=0.1, show_default=True,
              help="The share of sampled decisions meant for two auditors.")
@S3_ENDPOINT
@S3_REGION
def sample(root: str, week: str, decision_type: str | None, disagreements: int,  # noqa: PLR0913, PLR0917
           agreement_rate: float, seed: int, overlap: float, s3_endpoint: str | None,
           s3_region: str | None) -> None:
    """Draw the week's audit sample: every disagreement up to a cap, a share of agreements.

    Writes ROOT/audit_samples/week=W/decision_type=T/part-0.parquet per type (sample_id, decision_id,
    stratum, inclusion_probability, double_audit...). The same records and seed give the same sample;
    a week and type that already have a sample keep it (nothing is rewritten).

    \b
    Example:
      semif-shadow audit sample --root records --week 2026-W48 --disagreements 200 --agreement-rate 0.02
    """
    from audit.errors import SampleError  # noqa: PLC0415
    from pipelines import audit_sample as sampling  # noqa: PLC0415  (keep --help fast: DuckDB, numpy)
    from pipelines.errors import PipelinesError  # noqa: PLC0415
    from pipelines.storage import open_root  # noqa: PLC0415

    design = sampling.Design(disagreements, agreement_rate, seed, overlap)
    try:
        records = open_root(root, s3_endpoint, s3_region or "us-east-1")
        for name in sampling.decision_types(records, week, decision_type):
            drawn = sampling.draw(sampling.population(records, week, name), week, name, design)
            target = sampling.write(records, drawn, week, name)
            if target is None:
                click.echo(f"{week} {name}: a sample exists already; left unchanged "
                           f"(delete it to draw another)")
                continue
            strata = drawn.column("stratum").to_pylist()
            sizes = dict(zip(strata, drawn.column("stratum_decisions").to_pylist(), strict=True))
            click.echo(f"{week} {name}: {len(strata)} decisions sampled "
                       f"({strata.count('disagree')} of {sizes.get('disagree', 0)} disagreements, "
                       f"{strata.count('agree')} of {sizes.get('agree', 0)} agreements, "
                       f"{sum(drawn.column('double_audit').to_pylist())} for two auditors) -> {target}")
    except PipelinesError as exc:
        raise SampleError(str(exc)) from exc


@audit.command("serve")
@click.option("--root", required=True, help="Records root (folder or s3://bucket/prefix) holding the sample.")
@click.option("--week", required=True, help="ISO week of the audit sample, e.g. 2026-W48.")
@click.option("--type", "decision_type", default=None, help="Serve only this decision type's sample.")
@click.option("--catalog", type=click.Path(dir_okay=False), envvar="SHADOW_CATALOG", required=True,
              help="Decision catalog YAML (default: SHADOW_CATALOG): questions, options, token variables.")
@click.option("--host", default=None, help="Listen address (default 127.0.0.1; AUDIT_HOST).")
@click.option("--port", type=int, default=None, help="Port (default 8490; AUDIT_PORT).")
@click.option("--spool", default=None,
              help="The workbench's journal folder (default audit-spool; AUDIT_SPOOL_DIR).")
@click.option("--tls-cert", default=None, help="Serve HTTPS with this PEM certificate (AUDIT_TLS_CERT).")
@click.option("--tls-key", default=None, help="The certificate's PEM private key (AUDIT_TLS_KEY).")
@click.option("--behind-tls-proxy", is_flag=True, default=False,
              help="A TLS proxy is in front: allows plain HTTP off loopback; cookies Secure, HSTS sent "
                   "(AUDIT_BEHIND_TLS_PROXY).")
@click.option("--public-host", default=None,
              help="The name browsers use (a proxy's), accepted in Host besides --host (AUDIT_PUBLIC_HOST).")
@S3_ENDPOINT
@S3_REGION
def serve(root: str, week: str, decision_type: str | None, catalog: str, host: str | None,  # noqa: PLR0913, PLR0917
          port: int | None, spool: str | None, tls_cert: str | None, tls_key: str | None,
          behind_tls_proxy: bool, public_host: str | None, s3_endpoint: str | None,
          s3_region: str | None) -> None:
    """Serve the week's audit sample: the page where auditors say what was right.

    Sign in with a served decision type's token (the catalog's auth_token_env, as for the sidecar's
    API) and a pseudonym. Answers are audit outcomes in the records, durable before acknowledged.
    Off loopback it needs HTTPS: --tls-cert and --tls-key, or --behind-tls-proxy.

    \b
    Examples:
      SHADOW_TOKEN_TICKETS=... semif-shadow audit serve --root records --week 2026-W48 \\
          --catalog catalog.yaml
      SHADOW_TOKEN_TICKETS=... semif-shadow audit serve --root records --week 2026-W48 \\
          --catalog catalog.yaml --host 0.0.0.0 --behind-tls-proxy --public-host audit.example.org
    """
    import asyncio  # noqa: PLC0415  (keep --help fast)

    from audit.workbench.main import serve as serve_workbench  # noqa: PLC0415
    from audit.workbench.settings import WorkbenchSettings  # noqa: PLC0415
    from contracts.settings import build_settings  # noqa: PLC0415

    flags = {"root": ("--root", root), "week": ("--week", week), "decision_type": ("--type", decision_type),
             "catalog": ("--catalog", catalog), "host": ("--host", host), "port": ("--port", port),
             "spool_dir": ("--spool", spool), "tls_cert": ("--tls-cert", tls_cert),
             "tls_key": ("--tls-key", tls_key), "public_host": ("--public-host", public_host),
             "behind_tls_proxy": ("--behind-tls-proxy", behind_tls_proxy or None),  # unset: the environment's
             "s3_endpoint": ("--s3-endpoint", s3_endpoint), "s3_region": ("--s3-region", s3_region)}
    asyncio.run(serve_workbench(build_settings(WorkbenchSettings, flags)))
