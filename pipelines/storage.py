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
