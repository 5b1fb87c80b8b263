"""The fleet and model identity columns of generated proposals (``generate.py``).

Each row's backend, device, instance type, model and the model identity the sidecar would record for them
(``contracts.records.model_identity``); rows after a ``synth.IdentityChange`` carry its field's new value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from contracts.records import model_identity

if TYPE_CHECKING:
    import numpy as np

    from pipelines import synth

KV_TYPE = "f16"
NORMALIZATION = "none"
TEMPLATE_SHA256 = "c0ffee" + "0" * 58


def identity_columns(
    knobs: synth.Knobs, fleet_idx: np.ndarray, model_idx: np.ndarray, scored: np.ndarray, changed: np.ndarray
) -> dict[str, pa.Array]:
    """Backend, device, model identity and normalization of each row (identity null where nothing was scored).

    ``changed`` rows carry ``knobs.identity_change``'s field value instead.
    """

    def pick(values: list[str], idx: np.ndarray) -> pa.Array:
        return pc.if_else(
            pa.array(~scored), pa.scalar(None, pa.string()), pa.array(values).take(pa.array(idx))
        )

    fleets, models, change = knobs.fleets, knobs.models, knobs.identity_change
    field = {"kv_type": KV_TYPE, "normalization": NORMALIZATION}
    variants = [field, field if change is None else field | {change.field: change.value}]
    identities = [
        model_identity({"name": m.name, "sha256": m.sha256, "quantization": m.quantization,
                        "runtime_version": "llama.cpp b6000", "device": f.device, "kv_type": v["kv_type"],
                        "instance_type": f.instance_type, "image_digest": f"sha256:{f.device:0>8}"},
                       "semif-v1", TEMPLATE_SHA256, v["normalization"])
        for v in variants for f in fleets for m in models
    ]
    combined = (changed * len(fleets) + fleet_idx) * len(models) + model_idx
    return {
        "normalization": pa.array([v["normalization"] for v in variants]).take(pa.array(changed * 1)),
        "model_identity": pick([text for text, _ in identities], combined),
        "model_identity_sha256": pick([sha for _, sha in identities], combined),
        "backend": pick([f.backend for f in fleets], fleet_idx),
        "endpoint": pick([f"shadow-{f.device}" for f in fleets], fleet_idx),
        "device": pick([f.device for f in fleets], fleet_idx),
        "instance_type": pick([f.instance_type for f in fleets], fleet_idx),
        "image_digest": pick([f"sha256:{f.device:0>8}" for f in fleets], fleet_idx),
        "model_name": pick([m.name for m in models], model_idx),
        "model_sha256": pick([m.sha256 for m in models], model_idx),
        "quantization": pick([m.quantization for m in models], model_idx),
        "runtime_version": pick(["llama.cpp b6000"] * len(models), model_idx),
    }
