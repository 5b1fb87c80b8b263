"""Which device computes a score, and where the batch-invariant mode may run.

llama.cpp computes on a GPU when layers are offloaded to it (``SCORER_N_GPU_LAYERS``) and, with op
offload on (llama.cpp's default), also sends large batched operations of the CPU's layers there, so a
GPU build moves scores even with no layer offloaded. The identity says ``cuda`` (the GPU backend's name)
whenever either can happen, ``cpu`` otherwise.

The batch-invariant mode's guarantee rests on the CPU kernels' arithmetic (`scorer.cells`): on a GPU
the kernels pick their arithmetic by batch shape, and a decision's logits moved with its batch mates
(with layers offloaded, and with none offloaded through op offload). So the mode refuses to start
wherever llama.cpp sees a GPU, whatever the layer count, and runs with op offload off. With the GPUs
hidden (``CUDA_VISIBLE_DEVICES=``) a GPU build sees none and the mode runs on its CPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts.errors import SettingsError
from scorer import runtime

if TYPE_CHECKING:
    from scorer.runtime import RuntimeConfig
    from scorer.settings import ScorerSettings


def compute_device(config: RuntimeConfig) -> tuple[str, bool]:
    """The device that computes a score with ``config`` and whether op offload is in effect.

    ``cpu`` unless llama.cpp sees a GPU and may use it (layers offloaded, or op offload on); then the
    GPU backend's name in lower case (``cuda``). Op offload is in effect only where there is a GPU.
    """
    gpus = runtime.gpu_devices()
    if not gpus:
        return "cpu", False
    on_gpu = config.n_gpu_layers != 0 or config.op_offload
    return (gpus[0].backend.lower() if on_gpu else "cpu"), config.op_offload


def refuse_invariance_on_gpu(settings: ScorerSettings) -> None:
    """Refuse the batch-invariant mode where llama.cpp sees a GPU: one `SettingsError` line, exit 2."""
    if not settings.batch_invariant:
        return
    gpus = runtime.gpu_devices()
    if gpus:
        seen = ", ".join(f"{g.name} ({g.description})" for g in gpus)
        raise SettingsError(
            f"SCORER_BATCH_INVARIANT=true: the batch-invariant mode holds on the CPU backend only, and this "
            f"llama.cpp build sees {seen}; hide the GPU (CUDA_VISIBLE_DEVICES=) or turn the mode off"
        )
