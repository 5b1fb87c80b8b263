"""The Makefile's dependency graph: `make demo` installs no system package, `make test` does.

``make -n`` (print the recipes, run nothing) in a copy of the checkout's Makefile and pyproject.toml with
no ``.venv``, as on a fresh clone: every recipe ``make demo`` would run is printed, so a system package
install anywhere in its graph shows as ``apt-get``. The same dry run of ``make test`` must show it (the
tests drive Chromium, promtool, Java and nginx), so the check is not vacuous.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest

from tests.infra.cfn import ROOT

if TYPE_CHECKING:
    from pathlib import Path


def dry_run(tmp_path: Path, target: str) -> str:
    """What ``make -n TARGET`` would run on a fresh clone (no .venv, no stamp)."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    done = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True,  # noqa: S603, S607
                          timeout=60, check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("target", ["demo", "bench", "lint"])
def test_the_demo_installs_no_system_package(target: str, tmp_path: Path) -> None:
    """A fresh clone's `make demo` (and bench, lint) builds .venv and runs, and never calls apt-get."""
    recipes = dry_run(tmp_path, target)
    assert "-m venv .venv" in recipes
    assert "pip install --progress-bar off -e '.[dev]'" in recipes
    assert "apt-get" not in recipes
    assert "sudo" not in recipes


def test_the_tests_install_the_system_packages_they_drive(tmp_path: Path) -> None:
    """`make test` would check for, and install where missing, the packages its tests drive."""
    recipes = dry_run(tmp_path, "test")
    assert "apt-get install -y -q chromium prometheus curl default-jre-headless nginx" in recipes
    assert 'pytest -m "not own_process"' in recipes
