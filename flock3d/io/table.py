"""Tables of measurements (equal-length columns by name) as CSV files.

The tables of :func:`flock3d.metrics.table`, its correlation and anisotropy tables and an
experiment's :class:`~flock3d.experiments.Result` are written this way, so that a
script's CSV reads back as the command's does.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from flock3d.core.atomic import atomic_write

__all__ = ["write_csv"]


def _cell(kind: str):
    """How a column of numpy dtype kind ``kind`` is written: whole numbers as integers,
    reals exactly (``repr``, which reads back to the same float), text as is."""
    return {"i": int, "u": int, "b": int, "U": str, "O": str}.get(kind, lambda x: repr(float(x)))


def write_csv(path: str | Path, columns: dict[str, np.ndarray]) -> Path:
    """Write ``columns`` (equal-length arrays by name) to ``path`` as CSV with a header row.

    Args:
        path: the CSV file to write.
        columns: the table's columns by name, each a (rows,) array; written in this order.

    Returns:
        The path written.

    Raises:
        ValueError: the columns are not all of one length (nothing is written).
        OSError: the file cannot be written (a file already at ``path`` is then left as it was).
    """
    values = [np.asarray(v) for v in columns.values()]
    lengths = {name: len(v) for name, v in zip(columns, values, strict=True)}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"columns must be of one length to write a table (got {lengths})")
    path = Path(path)
    formats = [_cell(v.dtype.kind) for v in values]
    with atomic_write(path, "w", newline="") as handle:  # a failed write leaves the old file whole
        writer = csv.writer(handle)
        writer.writerow(list(columns))
        for row in zip(*values, strict=True):
            writer.writerow([f(x) for f, x in zip(formats, row, strict=True)])
    return path
