"""The identity tells the truth about the device, and the batch-invariant mode never starts on a GPU.

No GPU can run here, so the GPU cases fake one thing only: llama.cpp's backend query
(`scorer.runtime.gpu_devices`), through the `fake_gpu_backend` fixture; the model, the engine and the
server are the real ones on this machine's CPU build. `test_the_invariant_mode_on_this_build` asks the
real query and runs on a CUDA machine too (`bench/cuda/device.sh run`): there it sees the refusal itself.

Deliberate break seen failing: `devices.refuse_invariance_on_gpu` not called from
`model_files.runtime_config` (the invariant engine started beside the faked GPU and said
``batch_invariant: true``).
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from pydantic import ValidationError

from contracts.errors import SettingsError
from scorer import runtime
from scorer.runtime import GpuDevice
from scorer.settings import ScorerSettings
from tests.scorer.harness import make_engine

if TYPE_CHECKING:
    from pathlib import Path

H100 = GpuDevice("CUDA", "CUDA0", "NVIDIA H100 80GB HBM3")
REFUSAL = r"SCORER_BATCH_INVARIANT=true: the batch-invariant mode holds on the CPU backend only"

SERVE_BESIDE_A_FAKE_GPU = """
import sys
import scorer.runtime as runtime
runtime.gpu_devices = lambda: [runtime.GpuDevice("CUDA", "CUDA0", "NVIDIA H100 80GB HBM3")]
from semif_shadow.cli import main, serve_main
if sys.argv[1] == "bare":
    sys.argv = ["serve"]
    serve_main()
sys.argv = ["semif-shadow", "serve", "--port", "1"]
main()
"""


@pytest.fixture
def fake_gpu_backend(monkeypatch: pytest.MonkeyPatch) -> GpuDevice:
    """llama.cpp's backend query answering one CUDA GPU (the one thing this machine cannot have)."""
    monkeypatch.setattr(runtime, "gpu_devices", lambda: [H100])
    return H100


@pytest.mark.usefixtures("fake_gpu_backend")
def test_a_gpu_backend_refuses_the_invariant_mode(model_path: Path) -> None:
    """Beside a GPU the invariant engine does not start, whatever the layer count: one line, naming it."""
    for layers in (0, -1):
        with pytest.raises(SettingsError, match=REFUSAL) as refused:
            make_engine(model_path, batch_invariant=True, n_gpu_layers=layers)
        assert "CUDA0 (NVIDIA H100 80GB HBM3)" in str(refused.value)
        assert "CUDA_VISIBLE_DEVICES=" in str(refused.value)


@pytest.mark.parametrize("entry", ["cli", "bare"])
def test_serve_refuses_the_invariant_mode_before_listening(entry: str) -> None:
    """`semif-shadow serve`, and the bare `serve` SageMaker runs, beside a (faked) GPU: exit 2, one line."""
    done = subprocess.run(  # noqa: S603  (our own interpreter and probe)
        [sys.executable, "-c", SERVE_BESIDE_A_FAKE_GPU, entry], capture_output=True, text=True, timeout=120,
        check=False, env={"SCORER_BATCH_INVARIANT": "true", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2, done.stderr
    assert "SCORER_BATCH_INVARIANT=true: the batch-invariant mode holds on the CPU backend only" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


@pytest.mark.usefixtures("fake_gpu_backend")
def test_the_identity_names_the_gpu_where_ops_may_run_there(model_path: Path) -> None:
    """Beside a GPU with no layer offloaded, op offload still puts scores on it: the identity says cuda.

    With op offload off and no layer offloaded, nothing runs there: cpu, and op offload false.
    """
    engine = make_engine(model_path)
    try:
        assert engine.identity.device == "cuda"
        assert engine.identity.op_offload is True
        assert engine.identity.n_gpu_layers == 0
        assert engine.rt.config.op_offload is True
    finally:
        engine.close()
    engine = make_engine(model_path, op_offload=False)
    try:
        assert (engine.identity.device, engine.identity.op_offload) == ("cpu", False)
        assert engine.rt.config.op_offload is False
    finally:
        engine.close()


def test_the_invariant_mode_on_this_build(model_path: Path) -> None:
    """The real backend query: no GPU seen, the mode starts, op offload off (device cpu); one seen, refused.

    Here llama.cpp sees no GPU; on a CUDA machine (`bench/cuda/device.sh run`) it sees one.
    """
    if runtime.gpu_devices():
        with pytest.raises(SettingsError, match=REFUSAL):
            make_engine(model_path, batch_invariant=True, n_gpu_layers=-1)
        return
    engine = make_engine(model_path, batch_invariant=True)
    try:
        assert engine.rt.config.op_offload is False
        ident = engine.identity.to_json()
        assert (ident["device"], ident["op_offload"], ident["batch_invariant"]) == ("cpu", False, True)
    finally:
        engine.close()


def test_op_offload_cannot_be_asked_for_in_the_invariant_mode() -> None:
    """``SCORER_OP_OFFLOAD=true`` with the invariant mode is a settings error; unset, it follows the mode."""
    with pytest.raises(ValidationError, match="SCORER_OP_OFFLOAD=true"):
        ScorerSettings(batch_invariant=True, op_offload=True)
    assert ScorerSettings().offloading_ops is True
    assert ScorerSettings(batch_invariant=True).offloading_ops is False
    assert ScorerSettings(op_offload=False).offloading_ops is False
