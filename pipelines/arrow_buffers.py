"""Arrow arrays and numpy, converted through their buffers.

pyarrow's conversions from Python values (``pa.array``, ``pa.scalar``, ``pa.chunked_array``) and to numpy
(``to_numpy``) import pandas to check for its types, and so does registering any Arrow object in DuckDB.
The DuckDB job never needs pandas otherwise, and importing it is a sixth of a second of every run on
the two-core machine (docs/performance.md, "Pipelines"), so the job converts what it must here.
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EPOCH = dt.date(1970, 1, 1)


def floats(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Numbers as a float64 numpy array, null as NaN (read-only where nothing is null)."""
    array = pc.cast(values, pa.float64())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if len(array) == 0:
        return np.empty(0, dtype=np.float64)
    data = np.frombuffer(array.buffers()[1], dtype=np.float64, count=len(array), offset=array.offset * 8)
    if array.null_count == 0:
        return data
    nulls = pc.cast(pc.is_null(array), pa.uint8())
    flags = np.frombuffer(nulls.buffers()[1], dtype=np.uint8, count=len(nulls), offset=nulls.offset)
    return np.where(flags.astype(bool), math.nan, data)


def float_array(values: np.ndarray) -> pa.Array:
    """A float64 numpy array as an Arrow array without nulls."""
    data = np.ascontiguousarray(values, dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), len(data), [None, pa.py_buffer(data)])


def date32(day: dt.date) -> pa.Scalar:
    """``day`` as an Arrow ``date32`` scalar."""
    days = np.array([(day - EPOCH).days], dtype=np.int32)
    return pa.Array.from_buffers(pa.date32(), 1, [None, pa.py_buffer(days)])[0]
