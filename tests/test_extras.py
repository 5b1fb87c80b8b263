"""Each user installs what they run: the sidecar alone and the pipelines alone build no llama.cpp.

A fresh virtual environment per extra, installed from this checkout with pip (packages from the
registry, llama-cpp-python refused as a source build), then the extra's commands run from it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL_TIMEOUT_S = 900


def _venv(tmp_path: Path, extra: str) -> Path:
    """A new virtual environment with ``semif-shadow[extra]`` installed; its bin folder."""
    env = tmp_path / f"venv-{extra}"
    subprocess.run([sys._base_executable, "-m", "venv", str(env)], check=True, timeout=120)  # noqa: S603
    source = tmp_path / "src"
    if not source.exists():  # a copy, so the build leaves nothing in the checkout
        shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "*.egg-info", "build",
                                                                    "__pycache__", ".pytest_cache", "tests"))
    bin_dir = env / "bin"
    subprocess.run([str(bin_dir / "pip"), "install", "--quiet", "--disable-pip-version-check",  # noqa: S603
                    "--only-binary", "llama-cpp-python", f"{source}[{extra}]"],
                   check=True, timeout=INSTALL_TIMEOUT_S)
    return bin_dir


def _run(bin_dir: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "semif-shadow"), *args], capture_output=True, text=True,  # noqa: S603
                          timeout=300, cwd=cwd, check=False)


def _has_llama(bin_dir: Path) -> bool:
    probe = "import importlib.util as u; print(u.find_spec('llama_cpp') is not None)"
    out = subprocess.run([str(bin_dir / "python"), "-c", probe], capture_output=True, text=True,  # noqa: S603
                         timeout=60, check=True)
    return out.stdout.strip() == "True"


@pytest.mark.slow
def test_the_sidecar_extra_installs_and_runs_without_llama_cpp(tmp_path: Path) -> None:
    """``pip install '.[sidecar]'``: no llama.cpp; the catalog check and the records commands run."""
    bin_dir = _venv(tmp_path, "sidecar")
    assert not _has_llama(bin_dir)
    check = _run(bin_dir, "sidecar", "check-catalog", str(ROOT / "shadow" / "examples" / "catalog.yaml"))
    assert check.returncode == 0, check.stderr
    assert "ok: 2 decision types" in check.stdout
    stats = _run(bin_dir, "records", "stats", "--root", str(tmp_path / "empty-root"))
    assert stats.returncode == 0, stats.stderr
    assert _run(bin_dir, "sidecar", "run", "--help").returncode == 0


@pytest.mark.slow
def test_the_pipelines_extra_installs_and_runs_without_llama_cpp_or_the_sidecar(tmp_path: Path) -> None:
    """``pip install '.[pipelines]'``: no llama.cpp, no aiohttp; generate and run a week of marts."""
    bin_dir = _venv(tmp_path, "pipelines")
    assert not _has_llama(bin_dir)
    root, out = tmp_path / "records", tmp_path / "marts"
    generated = _run(bin_dir, "pipelines", "generate", "--root", str(root), "--decisions", "2000",
                     "--weeks", "2", "--first-week", "2026-W44", "--drift-week", "-1")
    assert generated.returncode == 0, generated.stderr
    ran = _run(bin_dir, "pipelines", "run", "--root", str(root), "--out", str(out), "--week", "2026-W45")
    assert ran.returncode == 0, ran.stderr
    assert any(out.rglob("agreement/**/*.parquet"))
    has_aiohttp = "import importlib.util as u; assert u.find_spec('aiohttp') is None"
    subprocess.run([str(bin_dir / "python"), "-c", has_aiohttp], check=True, timeout=60)  # noqa: S603
