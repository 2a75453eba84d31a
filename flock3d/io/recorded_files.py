"""The copies of the files a recording keeps (:mod:`flock3d.io.trajectory`): served in place of
a scene's mesh or heightfield image that is gone, while the recording is open.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from flock3d.io.world_extra import MeshError, require_world_extra

__all__ = [
    "serve_recorded_files",
    "recorded_files_first",
    "recorded_mesh",
    "recorded_copy",
    "recorded_copy_mesh",
]

#: The copies of gone files that open recordings hold, one table a recording, newest last:
#: owner -> {path: trimesh.Trimesh or (nx, nz) heights}. A copy is served only while its
#: recording is open (:func:`serve_recorded_files`), so that a scene loaded after it names a gone
#: file as gone; and a path whose open recordings hold different copies is refused, not guessed.
_recorded: dict[object, dict[str, Any]] = {}
_recorded_lock = threading.Lock()
#: The recording whose copies come first in this context (:func:`recorded_files_first`).
_first: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "flock3d_recording_first", default=None
)


@contextlib.contextmanager
def serve_recorded_files(owner: object, files: dict[str, Any]) -> Iterator[None]:
    """While the block runs, serve ``files`` (path -> a mesh as :func:`recorded_mesh` builds it,
    or (nx, nz) heights in [0, 1]) for their paths whose files are gone."""
    with _recorded_lock:
        _recorded[owner] = files
    try:
        yield
    finally:
        with _recorded_lock:
            _recorded.pop(owner, None)


@contextlib.contextmanager
def recorded_files_first(owner: object) -> Iterator[None]:
    """While the block runs in this context, the copies ``owner`` serves come before any other
    open recording's: a recording reads its own world while it opens."""
    token = _first.set(owner)
    try:
        yield
    finally:
        _first.reset(token)


def recorded_mesh(vertices: np.ndarray, faces: np.ndarray):
    """The mesh a recording stored, as :func:`flock3d.io.meshes.read_mesh` returned it when it was recorded.

    Args:
        vertices: (V, 3) float64; faces: (F, 3) int, in [0, V).
    """
    require_world_extra("a recorded mesh")
    import trimesh

    return trimesh.Trimesh(vertices, faces, process=False)


def recorded_copy(path: Path, heights: bool) -> Any | None:
    """The open recordings' copy of the gone file ``path``, its heights or else its mesh (None
    if none holds one).

    Raises:
        MeshError: two open recordings hold different copies of it.
    """
    with _recorded_lock:
        first = _recorded.get(_first.get(), {})
        if str(path) in first:
            copies = [first[str(path)]]
        else:
            copies = [files[str(path)] for files in _recorded.values() if str(path) in files]
    copies = [c for c in copies if isinstance(c, np.ndarray) == heights]
    if not copies:
        return None
    first = copies[0]
    key = _copy_key(first)
    if any(_copy_key(c) != key for c in copies[1:]):
        raise MeshError(
            f"{path}: is gone, and the open recordings hold different copies of it (close all but one)"
        )
    return first


def _copy_key(copy: Any) -> bytes:
    if isinstance(copy, np.ndarray):
        return hashlib.sha256(copy.tobytes()).digest() + repr(copy.shape).encode()
    return hashlib.sha256(np.asarray(copy.vertices).tobytes() + np.asarray(copy.faces).tobytes()).digest()


def recorded_copy_mesh(path: Path, role: str):
    """The open recordings' copy of the gone mesh file ``path`` (None if none holds one), refused
    as an arena when it is open."""
    mesh = recorded_copy(path, heights=False)
    if mesh is None:
        return None
    if role == "arena" and not mesh.is_watertight:
        raise MeshError(
            f"{path}: is open (not watertight): an arena mesh must be closed (the recording's copy)"
        )
    return mesh
