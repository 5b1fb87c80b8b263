"""Trim llama-cpp-python's sdist to what a CUDA wheel build needs, so it travels where transfers are small.

The 0.3.36 sdist is about 73 MB; most of it is llama.cpp's vocabulary GGUFs (tests only), its docs,
benchmarks and git data, none of which CMake reads. This writes a copy without them (about 13 MB) and
checks that what the build needs is still there.

    python3 bench/cuda/trim_sdist.py llama_cpp_python-0.3.36.tar.gz /tmp/stage/llama-cpp-python-trimmed.tar.gz
    python3 bench/cuda/trim_sdist.py SDIST OUT --dry-run      # list what would be left out, write nothing
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import tarfile
from pathlib import Path

LEFT_OUT = (
    "*/vendor/llama.cpp/models/*.gguf*",  # vocabularies for llama.cpp's tokenizer tests
    "*/vendor/llama.cpp/docs/*",
    "*/vendor/llama.cpp/benches/*",
    "*/vendor/llama.cpp/media/*",
    "*/vendor/llama.cpp/.git*",
    "*/vendor/llama.cpp/tools/server/public*",  # the web UI's bundled assets
    "*/docs/*",
    "*/.git*",
)
NEEDED = ("pyproject.toml", "CMakeLists.txt", "llama_cpp/llama_cpp.py", "vendor/llama.cpp/CMakeLists.txt",
          "vendor/llama.cpp/ggml/src/ggml-cuda/CMakeLists.txt", "vendor/llama.cpp/src/llama.cpp")


def left_out(name: str) -> bool:
    """Whether the member ``name`` (``llama_cpp_python-0.3.36/...``) is not needed by the build."""
    return any(fnmatch.fnmatch(name, pattern) for pattern in LEFT_OUT)


def trim(sdist: Path, out: Path, *, dry_run: bool = False) -> tuple[int, int]:
    """Copy ``sdist`` to ``out`` without the members `left_out` names; return (bytes kept, bytes left out)."""
    kept = dropped = 0
    with tarfile.open(sdist) as src:
        members = src.getmembers()
        names = {m.name.split("/", 1)[-1] for m in members if not left_out(m.name)}
        missing = [n for n in NEEDED if n not in names]
        if missing:
            raise SystemExit(f"{sdist}: the trimmed copy would lack {', '.join(missing)}")
        for m in members:
            if left_out(m.name):
                dropped += m.size
                if dry_run:
                    print(f"left out  {m.size:>10}  {m.name}")
            else:
                kept += m.size
        if not dry_run:
            out.parent.mkdir(parents=True, exist_ok=True)
            with tarfile.open(out, "w:gz", compresslevel=9) as dst:
                for m in members:
                    if not left_out(m.name):
                        dst.addfile(m, src.extractfile(m) if m.isfile() else None)
    return kept, dropped


def main() -> None:
    """Trim, and print what was kept and the file's size."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sdist", type=Path, help="llama-cpp-python's sdist (.tar.gz), from `pip download`")
    parser.add_argument("out", type=Path, help="the trimmed .tar.gz to write")
    parser.add_argument("--dry-run", action="store_true", help="list what would be left out; write nothing")
    args = parser.parse_args()
    kept, dropped = trim(args.sdist, args.out, dry_run=args.dry_run)
    size = "" if args.dry_run else f"; {args.out} is {args.out.stat().st_size / 1e6:.1f} MB"
    print(f"kept {kept / 1e6:.1f} MB of files, left out {dropped / 1e6:.1f} MB{size}", file=sys.stderr)


if __name__ == "__main__":
    main()
