"""One demo run, phase by phase: services → weeks of traffic → pipelines → review → summary.

    start     the scorer server (embedded model), the production router, moto (``--s3``)
    week k    a sidecar in proxy mode in front of the router, its clock in week k (`clock.py`); the
              week's tickets through the proxy; wait until every candidate's row is written; the late
              outcomes of the tickets production sent to review, through the API; SIGTERM (flush)
    analyse   ``semif-shadow pipelines run`` over the weeks, a policy chosen on the week before the last
              (``pipelines policy choose``), ``semif-shadow review`` of the last one with that policy

Every service runs as a real process on a free loopback port (`processes.Services`), stopped however
the run ends. Everything the run writes goes under ``out`` (records, spool, marts, logs, the report).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipelines.weeks import week_label
from semif_shadow.demo import catalog, clinc, summary, traffic, workload
from semif_shadow.demo.clock import SimClock
from semif_shadow.demo.processes import DemoError, Services, free_port

if TYPE_CHECKING:
    from collections.abc import Callable

    from click._termui_impl import ProgressBar

    from semif_shadow.demo.workload import Ticket

SPEED = 300.0
"""Simulated seconds per wall-clock second: a week's traffic spreads over hours, not seconds."""
DAY_START_H = 8
BUCKET = "semif-demo"
INSTANCE_TYPE = "ml.c6i.8xlarge"
"""Recorded as the scorer's instance type, so the cost mart prices it (pipelines/prices.yaml)."""
LOGIT_MEMO = 256
"""The scorer's logit memo (`scorer/memo.py`): both candidates score the same prompt on one model, so the
second of each pair is answered without a decode."""
PYTHON = [sys.executable, "-m", "semif_shadow"]


@dataclass(frozen=True)
class DemoConfig:
    """What `semif-shadow demo` was asked for."""

    out: Path
    tickets: int = 300
    weeks: int = 3
    seed: int = 7
    workload: str = "synthetic"
    data: Path | None = None
    s3: bool = False
    today: dt.date | None = None
    """The run's 'today' (default: the real one); the simulated weeks end the week before last."""
    progress: bool = True
    scorer_threads: int | None = None
    """llama.cpp threads of the demo's scorer; None: `scorer_threads()`, one core fewer than the machine."""


@dataclass(frozen=True)
class Run:
    """What the phases of one run share, built in `run` and passed to each (no environment changed).

    The sidecar's outcomes token and redaction key; where the records go (a folder, or ``s3://`` on
    moto with ``--s3``); with ``--s3``, moto's keys (added to the environment of each process that reads
    the records) and endpoint; the scorer's, the router's and the catalog's addresses once started.
    """

    token: str
    key: str
    root: str
    aws: dict[str, str] = field(default_factory=dict)
    s3: str | None = None
    scorer: str = ""
    router: str = ""
    catalog: str = ""

    @property
    def s3_args(self) -> list[str]:
        """``--s3-endpoint URL`` for the commands that read the records, with ``--s3``."""
        return ["--s3-endpoint", self.s3] if self.s3 else []


@dataclass(frozen=True)
class Result:
    """Where the run's outputs are."""

    records_root: str
    marts: Path
    report: Path
    summary: Path
    weeks: list[str]
    sent: list[traffic.Sent]
    tickets: list[Ticket]
    catalog: Path
    s3_endpoint: str | None
    p95_ms: dict[str, float]
    policy: dict[str, Any]
    """The champion's thresholds chosen on the week before the last, replayed on the last (out of sample)."""


def scorer_threads() -> int:
    """One core fewer than the machine has (at least one): the sidecar, relay and router need one.

    llama.cpp's threads spin; with every core taken they wait on each other, and on a loaded machine
    fewer threads score faster. On an idle machine every core is faster (``--scorer-threads``).
    """
    return max(1, (os.cpu_count() or 2) - 1)


def scorer_env(config: DemoConfig, port: int) -> dict[str, str]:
    """The demo scorer's settings: its port, the demo's instance type, its threads, its logit memo."""
    threads = config.scorer_threads if config.scorer_threads is not None else scorer_threads()
    return {"SCORER_PORT": str(port), "SCORER_INSTANCE_TYPE": INSTANCE_TYPE, "SCORER_N_THREADS": str(threads),
            "SCORER_LOGIT_MEMO": str(LOGIT_MEMO)}


def week_mondays(config: DemoConfig) -> list[dt.date]:
    """The simulated weeks' Mondays: ``weeks`` ISO weeks ending two weeks before today's (all mature)."""
    today = config.today or dt.datetime.now(dt.UTC).date()
    this_monday = today - dt.timedelta(days=today.weekday())
    last = this_monday - dt.timedelta(weeks=2)
    return [last - dt.timedelta(weeks=config.weeks - 1 - k) for k in range(config.weeks)]


def load_tickets(config: DemoConfig) -> list[Ticket]:
    """The workload's tickets."""
    if config.workload == "clinc150":
        if config.data is None or not (config.data / "data_full.json").is_file():
            raise DemoError(f"--workload clinc150 needs --data DIR with data_full.json (got {config.data})")
        return clinc.clinc150(config.data, config.tickets, config.weeks, config.seed)
    return workload.synthetic(config.tickets, config.weeks, config.seed)


def _bar(config: DemoConfig, length: int, text: str) -> ProgressBar[int]:
    """A phase's progress bar on the terminal (into a discarded buffer where ``progress`` is off)."""
    return click.progressbar(length=length, label=f"{text:<28}", show_pos=True, width=30,
                             file=None if config.progress else io.StringIO())


def _fresh(out: Path) -> None:
    for name in ("records", "spool", "marts", "logs"):
        shutil.rmtree(out / name, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)


def _start_s3(services: Services, aws: dict[str, str]) -> str:
    import boto3  # noqa: PLC0415  (only with --s3)

    port = free_port()
    moto = services.start("moto", [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                          {}, (port,))
    endpoint = f"http://127.0.0.1:{port}"
    services.wait_healthy(moto, f"{endpoint}/moto-api/", 60)
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                 aws_access_key_id=aws["AWS_ACCESS_KEY_ID"],
                 aws_secret_access_key=aws["AWS_SECRET_ACCESS_KEY"]).create_bucket(Bucket=BUCKET)
    return endpoint


def _start_core(config: DemoConfig, services: Services) -> tuple[str, str]:
    """The scorer and the router; their URLs."""
    scorer_port, router_port = free_port(), free_port()
    scorer = services.start("scorer", [*PYTHON, "serve"], scorer_env(config, scorer_port), (scorer_port,))
    router = services.start("router", [sys.executable, "-m", "semif_shadow.demo.router", "--port",
                                       str(router_port), "--rules", config.workload], {}, (router_port,))
    scorer_url, router_url = f"http://127.0.0.1:{scorer_port}", f"http://127.0.0.1:{router_port}"
    with _bar(config, 2, "start scorer and router") as bar:
        services.wait_healthy(router, f"{router_url}/healthz", 60)
        bar.update(1)
        services.wait_healthy(scorer, f"{scorer_url}/ping", 300)
        bar.update(1)
    return scorer_url, router_url


def _week(config: DemoConfig, services: Services, k: int, monday: dt.date,  # noqa: PLR0913, PLR0917  (run, week)
          tickets: list[Ticket], trial: Run) -> list[traffic.Sent]:
    """One simulated week through a sidecar whose clock runs in it."""
    start = dt.datetime.combine(monday, dt.time(DAY_START_H), dt.UTC).timestamp()
    api_port, proxy_port = free_port(), free_port()
    clock = SimClock(start, time.time(), SPEED)
    argv = [sys.executable, "-m", "semif_shadow.demo.clock", *clock.argv(), "--", "sidecar", "run",
            "--catalog", trial.catalog, "--port", str(api_port), "--proxy-port", str(proxy_port),
            "--upstream", trial.router]
    env = _sidecar_env(config, trial)
    sidecar = services.start(f"sidecar-{week_label(monday)}", argv, env, (api_port, proxy_port))
    api, proxy = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{proxy_port}"
    services.wait_healthy(sidecar, f"{api}/healthz", 120)
    week = week_label(monday)
    with _bar(config, len(tickets), f"{week} ({k + 1}/{config.weeks}) send") as bar:
        sent = asyncio.run(traffic.replay(proxy, tickets, clock, lambda: bar.update(1)))
    expected = len(tickets) * len(catalog.CANDIDATES)
    with _bar(config, expected, f"{week} score") as bar:
        asyncio.run(traffic.wait_rows(api, expected, bar.update, timeout_s=catalog.DEADLINE_S + 120))
    late = traffic.late_outcomes(sent, {t.ticket_id: t.truth for t in tickets}, config.seed + k)
    with _bar(config, len(late), f"{week} late outcomes") as bar:
        asyncio.run(traffic.post_outcomes(api, trial.token, late, bar.update))
    code = services.stop(sidecar)
    if code != 0:
        raise DemoError(f"the {week} sidecar exited with {code}: see {sidecar.log}")
    return sent


def _sidecar_env(config: DemoConfig, trial: Run) -> dict[str, str]:
    env = {"SHADOW_RECORDS_ROOT": trial.root, "SHADOW_RECORDS_SPOOL_DIR": str(config.out / "spool"),
           "SHADOW_RECORDS_WRITER_ID": "demo", "SHADOW_REDACTION_KEY": trial.key,
           "SHADOW_WORKERS": "2", catalog.TOKEN_ENV: trial.token, **trial.aws}
    if trial.s3:
        env |= {"SHADOW_RECORDS_S3_ENDPOINT_URL": trial.s3, "SHADOW_RECORDS_S3_REGION": "us-east-1"}
    return env


def _cli(args: list[str], what: str, env: dict[str, str], log: Path) -> None:
    """Run a ``semif-shadow`` command; its progress goes to the terminal, its output to ``log``."""
    tail = b""
    with log.open("wb") as out, subprocess.Popen([*PYTHON, *args], stdout=out, stderr=subprocess.PIPE,  # noqa: S603  (our own command)
                                                 env={**os.environ, **env}) as proc:
        try:
            assert proc.stderr is not None
            while chunk := os.read(proc.stderr.fileno(), 4096):  # its progress bar, live
                sys.stderr.write(chunk.decode(errors="replace"))
                sys.stderr.flush()
                tail = (tail + chunk)[-4096:]
            code = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    if code != 0:
        last = tail.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise DemoError(f"{what} failed with exit code {code}: {last[0]} (see {log})")


def _choose(config: DemoConfig, trial: Run, weeks: list[str], candidate: str) -> tuple[Path, dict[str, Any]]:
    """``pipelines policy choose`` for ``candidate`` on the week before the last, ``replay`` on the last."""
    champion = candidate == next(iter(catalog.CANDIDATES))
    chosen = config.out / ("policy.json" if champion else f"policy-{candidate}.json")
    logs = config.out / "logs"
    replayed = logs / ("policy-replay.out" if champion else f"policy-replay-{candidate}.out")
    _cli(["pipelines", "policy", "choose", "--root", trial.root, "--week", weeks[-2], "--type",
          catalog.DECISION_TYPE, "--candidate", candidate, "--out", str(chosen), *trial.s3_args],
         f"policy choose ({candidate})", trial.aws, logs / f"policy-choose-{candidate}.out")
    _cli(["pipelines", "policy", "replay", "--root", trial.root, "--week", weeks[-1],
          "--policy", str(chosen), *trial.s3_args], f"policy replay ({candidate})", trial.aws, replayed)
    replay: dict[str, Any] = json.loads(replayed.read_text(encoding="utf-8"))
    return chosen, replay


def _policy(config: DemoConfig, trial: Run, weeks: list[str]) -> dict[str, Any]:
    """A policy per candidate chosen on the week before the last and replayed on the last.

    The champion's replay JSON, with ``files``: every policy that replayed (the review is given them all,
    so each candidate is judged out of sample, as in a real trial).
    """
    champion = next(iter(catalog.CANDIDATES))
    head: dict[str, Any] = {"candidate": champion, "chosen_on": weeks[-2], "week": weeks[-1], "files": []}
    result: dict[str, Any] = {}
    for candidate in catalog.CANDIDATES:
        try:
            chosen, replay = _choose(config, trial, weeks, candidate)
        except DemoError as exc:  # e.g. the candidate scored nothing that week: the review still comes
            if candidate == champion:
                result = {"error": str(exc)}
            continue
        head["files"].append(str(chosen))
        if candidate == champion:
            result = replay
    return head | result


def _audit(config: DemoConfig, tickets: list[Ticket], week: str, trial: Run) -> None:
    """The week's audit sample answered by the simulated auditor (``audits.py``) before the pipelines run."""
    truth = config.out / "truth.json"
    truth.write_text(json.dumps({t.ticket_id: t.truth for t in tickets}), encoding="utf-8")
    log = config.out / "logs" / "audits.out"
    argv = [sys.executable, "-m", "semif_shadow.demo.audits", "--root", trial.root, "--week", week, "--type",
            catalog.DECISION_TYPE, "--truth", str(truth), "--catalog", trial.catalog, *trial.s3_args]
    with log.open("wb") as out:
        code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **trial.aws},  # noqa: S603  (our own module)
                              check=False).returncode
    if code != 0:
        raise DemoError(f"the simulated auditor failed with exit code {code} (see {log})")


def _review_policy(trial: Run, policy: dict[str, Any]) -> list[str]:
    """The review's ``--policy`` arguments: every policy the demo chose, replayed on the records."""
    if not policy["files"]:
        return []
    return [*(a for f in policy["files"] for a in ("--policy", f)), "--records", trial.root, *trial.s3_args]


def run(config: DemoConfig, echo: Callable[[str], None] = click.echo) -> Result:
    """Run the whole demo; raises `DemoError` (one line) when a phase fails."""
    _fresh(config.out)
    tickets = load_tickets(config)
    mondays = week_mondays(config)
    weeks = [week_label(m) for m in mondays]
    echo(f"{len(tickets)} {config.workload} tickets over {', '.join(weeks)} (simulated); "
         f"output in {config.out}")
    trial = Run(secrets.token_urlsafe(16), secrets.token_urlsafe(32), str(config.out / "records"))
    sent: list[traffic.Sent] = []
    with Services(config.out / "logs") as services:
        if config.s3:
            aws = {"AWS_ACCESS_KEY_ID": "demo", "AWS_SECRET_ACCESS_KEY": "demo",
                   "AWS_DEFAULT_REGION": "us-east-1"}
            trial = replace(trial, aws=aws, s3=_start_s3(services, aws), root=f"s3://{BUCKET}/records")
        scorer, router = _start_core(config, services)
        written = catalog.write(config.out / "catalog.yaml", scorer, config.workload)
        trial = replace(trial, scorer=scorer, router=router, catalog=str(written))
        for k, monday in enumerate(mondays):
            sent += _week(config, services, k, monday, [t for t in tickets if t.week == k], trial)
        (config.out / "sent.jsonl").write_text("".join(json.dumps(s.row()) + "\n" for s in sent),
                                               encoding="utf-8")
        echo(f"audit: {weeks[-1]}'s sample answered by a simulated auditor")
        _audit(config, tickets, weeks[-1], trial)
        echo("pipelines: the marts of every simulated week")
        _cli(["pipelines", "run", "--root", trial.root, "--since", weeks[0], "--until", weeks[-1],
              "--out", str(config.out / "marts"), "--catalog", trial.catalog, *trial.s3_args],
             "pipelines run", trial.aws, config.out / "logs" / "pipelines.out")
        p95 = summary.p95_by_candidate(summary.read_proposals(trial.root, trial.s3, trial.aws), weeks[-1])
        policy = _policy(config, trial, weeks)
        report = config.out / "review.html"
        echo(f"review: {weeks[-1]}")
        # inside the services: with --s3 the policy is replayed on records that moto serves
        rules = config.out / "review.yaml"  # the catalog's first candidate is the scorecard's champion
        rules.write_text(f"champion: {next(iter(catalog.CANDIDATES))}\n", encoding="utf-8")
        _cli(["review", "--marts", str(config.out / "marts"), "--week", weeks[-1], "--out", str(report),
              "--config", str(rules), *_review_policy(trial, policy)], "review", trial.aws,
             config.out / "logs" / "review.out")
    return Result(trial.root, config.out / "marts", report, report.with_suffix(".md"), weeks, sent, tickets,
                  Path(trial.catalog), trial.s3, p95, policy)
