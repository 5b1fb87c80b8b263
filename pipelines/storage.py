"""Where records live: a local folder or ``s3://bucket/prefix``, both seen through a pyarrow filesystem.

DuckDB cannot download its httpfs extension here, so S3 is read with ``pyarrow.fs.S3FileSystem``
(``endpoint_override`` for moto or MinIO) and DuckDB scans the resulting Arrow dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from pipelines.errors import BadArgument


@dataclass(frozen=True)
class Root:
    """A filesystem and the base path of the records layout inside it."""

    fs: pafs.FileSystem
    base: str
    uri: str

    @property
    def is_local(self) -> bool:
        """Whether the root is a local folder (DuckDB then reads the files itself)."""
        return isinstance(self.fs, pafs.LocalFileSystem)

    def join(self, *parts: str) -> str:
        """A path under the base."""
        return "/".join([self.base.rstrip("/"), *parts])


def open_root(uri: str, s3_endpoint: str | None = None, s3_region: str = "us-east-1") -> Root:
    """Open ``uri`` (a folder or ``s3://bucket/prefix``).

    Raise ``BadArgument`` naming ``root`` if unusable.
    """
    if uri.startswith("s3://"):
        bucket_prefix = uri.removeprefix("s3://").strip("/")
        if not bucket_prefix:
            raise BadArgument("an s3:// root needs a bucket", "root")
        try:
            fs = pafs.S3FileSystem(endpoint_override=s3_endpoint, region=s3_region)
        except (pa.ArrowException, OSError) as exc:
            raise BadArgument(f"cannot open S3: {exc}", "root") from exc
        return Root(fs, bucket_prefix, uri)
    if "://" in uri:
        raise BadArgument(f"unsupported scheme in {uri!r} (a folder or s3://bucket/prefix)", "root")
    return Root(pafs.LocalFileSystem(), str(Path(uri).resolve()), uri)


def publish(local: Path, root: Root, weeks: list[str]) -> int:
    """Copy ``<mart>/week=<W>/part-0.parquet`` of ``weeks`` from ``local`` under ``root``; files copied.

    Each file is one object written whole (S3 replaces an object atomically), so a reader sees a week's
    previous file or its new one, never a torn one. The scratch DuckDB file is not copied.
    """
    copied = 0
    for mart in sorted(p for p in local.iterdir() if p.is_dir()):
        for week in weeks:
            source = mart / f"week={week}" / "part-0.parquet"
            if not source.exists():
                continue
            target = root.join(mart.name, f"week={week}", "part-0.parquet")
            try:
                if root.is_local:
                    root.fs.create_dir(target.rsplit("/", 1)[0])
                with root.fs.open_output_stream(target) as out:
                    out.write(source.read_bytes())
            except (pa.ArrowException, OSError) as exc:
                raise BadArgument(f"cannot write {root.uri}/{mart.name}/week={week}: {exc}", "out") from exc
            copied += 1
    return copied
