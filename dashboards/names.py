"""Readable names for grouping keys: the catalog's candidate name first, the identity hash only when needed.

A grouping key (``<candidate> <model>/<quant>/<device>/<norm> #<sha12>``) is exact and unreadable. The
report names a key by its candidate (``challenger``); where one candidate has several identities in the
same view (an identity change, a CPU and a GPU pool), each gets the part that differs and ``#sha6``
(``default #09a714``). The full key stays in the report, folded away (``<details>``).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from dashboards.marts import identity_of

if TYPE_CHECKING:
    from collections.abc import Iterable


def base_name(key: str) -> str:
    """The candidate's name in the catalog, or the model name for records v1 keys (no candidate)."""
    ident = identity_of(key)
    return ident.name or ident.model_name or key


def readable(keys: Iterable[str]) -> dict[str, str]:
    """A readable, unique name per key: ``challenger``, or ``default #09a714`` when a name repeats."""
    unique = sorted(set(keys))
    counts = Counter(base_name(k) for k in unique)
    return {
        k: base_name(k)
        if counts[base_name(k)] == 1
        else f"{base_name(k)} #{identity_of(k).sha256_prefix[:6]}"
        for k in unique
    }


def described(key: str) -> str:
    """The identity in words, folded: ``gemma-3-270m, Q4_K_M, cpu, pmi (sha256 a99b86715c64)``."""
    ident = identity_of(key)
    parts = ", ".join(
        p for p in (ident.model_name, ident.quantization, ident.device, ident.normalization) if p
    )
    return f"{parts} (sha256 {ident.sha256_prefix})"
