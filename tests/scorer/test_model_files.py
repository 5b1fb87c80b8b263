"""Model discovery: configured path, SM_MODEL_DIR (recursive, stable order), Hugging Face, default."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from scorer.errors import ModelError
from scorer.model_files import embedded_default, first_gguf, resolve_model_path

if TYPE_CHECKING:
    from pathlib import Path


def test_configured_path_wins(tmp_path: Path) -> None:
    """A configured file is used as is, even when SM_MODEL_DIR holds another GGUF."""
    mine = tmp_path / "mine.gguf"
    mine.write_bytes(b"GGUF")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "other.gguf").write_bytes(b"GGUF")
    assert resolve_model_path(mine, environ={"SM_MODEL_DIR": str(tmp_path / "dir")}) == mine


def test_missing_configured_path_is_a_clear_error(tmp_path: Path) -> None:
    """A configured path that does not exist fails loudly instead of falling back silently."""
    with pytest.raises(ModelError, match="is not a file"):
        resolve_model_path(tmp_path / "nope.gguf", environ={})


def test_first_gguf_under_sm_model_dir_in_sorted_order(tmp_path: Path) -> None:
    """The first .gguf under SM_MODEL_DIR, searched recursively, in sorted path order."""
    for rel in ["b/model.gguf", "a/z/model.gguf", "a/readme.txt", "c.gguf"]:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    assert first_gguf(tmp_path) == tmp_path / "a/z/model.gguf"
    assert resolve_model_path(None, environ={"SM_MODEL_DIR": str(tmp_path)}) == tmp_path / "a/z/model.gguf"


def test_no_egress_falls_back_to_the_embedded_default(tmp_path: Path) -> None:
    """SM_LLAMA_CPP_HF_REPO without huggingface_hub or egress falls back to the embedded model."""
    environ = {
        "SM_MODEL_DIR": str(tmp_path),
        "SM_LLAMA_CPP_HF_REPO": "org/repo",
        "SM_LLAMA_CPP_HF_FILE": "m.gguf",
    }
    assert resolve_model_path(None, environ=environ) == embedded_default()
