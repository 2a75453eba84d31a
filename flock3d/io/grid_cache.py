"""The disk cache of mesh grids: one ``.npz`` entry a grid, keyed by a digest of what it is made
from, holding a digest of its contents; written atomically, checked before it is used.
:func:`flock3d.io.meshes.object_grid` says when an entry is used, dropped or not written.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np

from flock3d.core.atomic import atomic_write
from flock3d.core.objects import SDFGrid

__all__ = ["CACHE_VERSION", "grid_cache_dir", "read_cached", "write_cached", "remove_entry"]

#: Bumped whenever the grid's layout or the way it is computed changes: old entries are not read.
CACHE_VERSION = "2"


def grid_cache_dir() -> Path:
    """Where mesh grids are cached: ``grids`` beside the compiled steps' folder
    (:func:`flock3d.core.step.cache.cache_dir`)."""
    from flock3d.core.step.cache import cache_dir

    folder = cache_dir().parent / "grids"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _entry_digest(key: str, origin, cell: float, values: np.ndarray) -> str:
    """A digest of an entry's contents: what it was made from (``key``) and what it holds."""
    digest = hashlib.sha256(f"{key}:{values.dtype.str}:{values.shape}:".encode())
    digest.update(np.asarray(origin, dtype="<f8").tobytes() + np.asarray(cell, dtype="<f8").tobytes())
    digest.update(np.ascontiguousarray(values).tobytes())
    return digest.hexdigest()


def write_cached(path: Path, key: str, grid: SDFGrid) -> str | None:
    """Write an entry (atomically: another process never reads half of one); None, or why not."""
    checksum = _entry_digest(key, grid.origin, grid.cell, grid.values)
    try:
        with atomic_write(path, "wb") as handle:
            np.savez(
                handle, key=key, checksum=checksum, origin=grid.origin, cell=grid.cell, values=grid.values
            )
    except OSError as error:
        return error.strerror or str(error)
    return None


def remove_entry(path: Path) -> str | None:
    """Remove a damaged entry (a file, or a folder in its place); None, or why it could not be."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    except OSError as error:
        return error.strerror or str(error)
    return None


def _array_header(entry: zipfile.ZipFile, name: str) -> tuple[tuple, np.dtype]:
    """The shape and dtype of an array stored in an .npz, read from its header alone."""
    with entry.open(f"{name}.npy") as handle:
        version = np.lib.format.read_magic(handle)
        fmt = np.lib.format
        read = fmt.read_array_header_2_0 if version >= (2, 0) else fmt.read_array_header_1_0
        shape, _, dtype = read(handle)
    return shape, dtype


def read_cached(path: Path, key: str, nodes: tuple[int, int, int]) -> tuple[SDFGrid | None, str | None]:
    """The grid cached at ``path`` under ``key`` (the digest of what it is made from), of
    ``nodes`` float64 values: ``(grid, None)``; ``(None, None)`` when there is none;
    ``(None, why)`` when what is there cannot be used."""
    if not os.path.lexists(path):
        return None, None
    if os.path.isdir(path):
        return None, "a folder in its place"
    try:
        with zipfile.ZipFile(path) as entry:  # the header first: a swapped entry could be any size
            shape, dtype = _array_header(entry, "values")
        if shape != nodes or dtype != np.float64:
            held, wanted = "x".join(map(str, shape)), "x".join(map(str, nodes))
            return None, f"it holds a {held} {dtype} grid, not {wanted}"
        with np.load(path, allow_pickle=False) as entry:
            held_key, checksum = str(entry["key"]), str(entry["checksum"])
            origin, cell, values = entry["origin"], entry["cell"], entry["values"]
    except Exception as error:  # a truncated or overwritten file: zipfile, numpy and OS errors alike
        return None, type(error).__name__
    if held_key != key:
        return None, "it was made from another mesh or resolution"
    if origin.shape != (3,) or cell.shape != () or checksum != _entry_digest(key, origin, cell, values):
        return None, "its contents do not match their checksum"
    grid = SDFGrid(tuple(float(c) for c in origin), float(cell), np.ascontiguousarray(values))
    if not (math.isfinite(grid.cell) and grid.cell > 0 and np.isfinite(grid.values).all()):
        return None, "it holds numbers that are not finite"
    return grid, None
