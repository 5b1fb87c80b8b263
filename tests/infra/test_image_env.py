"""The sidecar image's Python environment, built the way its Dockerfile builds it, runs what the image runs.

No Docker daemon runs here, so the image itself is not built; its environment is. The ``pip install``
command is read from the Dockerfile's build stage (so the test and the image cannot drift), pointed at this
checkout's wheel instead of ``.``, and run in a fresh virtual environment. Then the image's smoke steps
(``infra/sidecar/smoke.py``, the same file the Dockerfile runs at build time) run from that environment:
the image's command on the example catalog (``/healthz``, SIGTERM, exit 0) and the weekly job (compact,
pipelines, review). Packages come from PyPI through pip's cache.

A second environment holds the base install only (no extra): every subcommand that needs an extra says
which, and the pip command, in one line and exit 2.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.cfn import ROOT
from tests.infra.harness import DOCKERFILES, instructions

DOCKERFILE = DOCKERFILES["sidecar"]
SMOKE = ROOT / "infra" / "sidecar" / "smoke.py"
CATALOG = ROOT / "shadow" / "examples" / "catalog.yaml"
INSTALL_TIMEOUT_S = 900
STEP_TIMEOUT_S = 600
COPY_IGNORE = shutil.ignore_patterns(".venv", ".git", "*.egg-info", "build", "dist", "__pycache__",
                                     ".pytest_cache", ".mypy_cache", ".ruff_cache", "tests", "demo-out")


def install_args(dockerfile: Path) -> list[str]:
    """The arguments after ``pip install`` in the Dockerfile's one install step (first stage)."""
    runs = [args for op, args in instructions(dockerfile) if op == "RUN" and " install " in f" {args} "
            and "pip" in args]
    assert len(runs) == 1, runs
    words = shlex.split(runs[0])
    return words[words.index("install") + 1:]


def for_wheel(args: list[str], wheel: Path) -> list[str]:
    """The install arguments with the project (``.`` or ``.[extras]``) replaced by the wheel."""
    targets = [a for a in args if a == "." or a.startswith(".[")]
    assert len(targets) == 1, args
    return [f"{wheel}{a[1:]}" if a in targets else a for a in args]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel, built from a copy (nothing is written into the shared tree)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    shutil.copytree(ROOT, source, ignore=COPY_IGNORE)
    subprocess.run([str(Path(sys.executable).with_name("pip")), "wheel", "--quiet", "--no-deps",  # noqa: S603
                    "--disable-pip-version-check", "-w", str(tmp / "dist"), str(source)],
                   check=True, timeout=INSTALL_TIMEOUT_S)
    (built,) = (tmp / "dist").glob("semif_shadow-*.whl")
    return built


def fresh_venv(folder: Path, pip_args: list[str]) -> Path:
    """A new virtual environment with ``pip install <pip_args>`` done; its bin folder."""
    subprocess.run([sys._base_executable, "-m", "venv", str(folder)], check=True, timeout=120)  # noqa: S603
    bin_dir = folder / "bin"
    subprocess.run([str(bin_dir / "pip"), "install", "--quiet", "--disable-pip-version-check", *pip_args],  # noqa: S603
                   check=True, timeout=INSTALL_TIMEOUT_S)
    return bin_dir


def clean_env(bin_dir: Path) -> dict[str, str]:
    """The image's PATH order (its venv first) and none of this test run's Python settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "SHADOW_"))}
    return {**env, "PATH": f"{bin_dir}:{env.get('PATH', '')}"}


@pytest.fixture(scope="module")
def image_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment installed by the Dockerfile's own pip command, with the wheel for ``.``."""
    return fresh_venv(tmp_path_factory.mktemp("image") / "venv", for_wheel(install_args(DOCKERFILE), wheel))


@pytest.fixture(scope="module")
def base_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the base install only (``pip install <wheel>``, no extra)."""
    return fresh_venv(tmp_path_factory.mktemp("base") / "venv", [str(wheel)])


def smoke(bin_dir: Path, work: Path, *step: str) -> subprocess.CompletedProcess[str]:
    """``smoke.py`` run by the environment's own python."""
    command = [str(bin_dir / "python"), str(SMOKE), *step, "--work", str(work)]
    return subprocess.run(command, capture_output=True, text=True, env=clean_env(bin_dir), cwd=work.parent,  # noqa: S603
                          timeout=STEP_TIMEOUT_S, check=False)


def test_install_command_is_read_from_the_dockerfile() -> None:
    """The parser finds the build stage's one pip install and swaps only the project for the wheel."""
    args = install_args(DOCKERFILE)
    assert any(a == "." or a.startswith(".[") for a in args), args
    swapped = for_wheel(["--no-binary", "x", ".[a,b]"], Path("/w/p.whl"))
    assert swapped == ["--no-binary", "x", "/w/p.whl[a,b]"]


@pytest.mark.slow
def test_the_image_environment_runs_the_sidecar(image_env: Path, tmp_path: Path) -> None:
    """The image's command starts on the example catalog, answers /healthz, and exits 0 on SIGTERM."""
    done = smoke(image_env, tmp_path / "work", "sidecar", "--catalog", str(CATALOG))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exited 0 on SIGTERM" in done.stdout


@pytest.mark.slow
def test_the_image_environment_runs_the_weekly_job(image_env: Path, tmp_path: Path) -> None:
    """The CronJob's steps (records compact, pipelines run, review) run on a generated week."""
    done = smoke(image_env, tmp_path / "work", "weekly")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "work" / "review.html").stat().st_size > 10_000


def test_the_dockerfile_runs_the_same_smoke_steps_and_command() -> None:
    """The image runs smoke.py's two steps at build time, and its ENTRYPOINT + CMD are smoke.py's command."""
    steps = instructions(DOCKERFILE)
    runs = " ".join(args for op, args in steps if op == "RUN")
    assert "smoke.py sidecar" in runs
    assert "smoke.py weekly" in runs
    spec = importlib.util.spec_from_file_location("smoke", SMOKE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (entry,) = [json.loads(a) for op, a in steps if op == "ENTRYPOINT"]
    (cmd,) = [json.loads(a) for op, a in steps if op == "CMD"]
    assert entry + cmd == module.COMMAND


EXTRA_OF = {
    ("sidecar", "run", "--catalog", str(CATALOG)): "sidecar",
    ("records", "stats", "--root", "r"): "sidecar",
    ("pipelines", "run", "--root", "r", "--week", "2026-W45"): "pipelines",
    ("review", "--marts", "m", "--week", "2026-W45", "--out", "r.html"): "review",
    ("serve",): "scorer",
    ("score", "--question", "q", "--option", "a=A", "--option", "b=B", "--state", "s"): "scorer",
}


@pytest.mark.slow
@pytest.mark.parametrize("args", list(EXTRA_OF), ids=lambda a: a[0])
def test_a_missing_extra_is_one_line_and_exit_2(base_env: Path, args: tuple[str, ...],
                                                 tmp_path: Path) -> None:
    """Base install only: the subcommand names its extra and the pip command, in one line, exit 2."""
    env = {**clean_env(base_env), "SHADOW_TOKEN_TICKETS": "t", "SHADOW_REDACTION_KEY": "k" * 32,
           "SHADOW_PORT": "0", "SHADOW_RECORDS_ROOT": str(tmp_path / "records"),
           "SHADOW_RECORDS_SPOOL_DIR": str(tmp_path / "spool")}
    done = subprocess.run([str(base_env / "semif-shadow"), *args], capture_output=True, text=True,  # noqa: S603
                          env=env, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"pip install 'semif-shadow[{EXTRA_OF[args]}]'" in lines[0]
