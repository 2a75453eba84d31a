"""A mesh file read with trimesh, and checked for what trimesh would take without a word: text
that is not UTF-8, an OBJ's short vertices and zero indices, triangles naming vertices the
mesh lacks, coordinates that are not finite or too large, files it names that are not regular
files. :func:`flock3d.io.meshes.read_mesh` is the way in.
"""

from __future__ import annotations

import functools
import os
import re

import numpy as np

from flock3d.core.fields import MAX_MAGNITUDE

__all__ = ["MESH_SUFFIXES", "load_mesh_file"]

#: What trimesh reads for us.
MESH_SUFFIXES = (".obj", ".stl", ".ply", ".gltf", ".glb")


@functools.lru_cache(maxsize=32)
def load_mesh_file(path: str, digest: str | None, size: int, max_triangles: int):
    """The mesh of a file, loaded once per content of the file (``digest``, its bytes' sha256:
    :func:`flock3d.io.meshes._content_digest`) and limit, or the message saying why not.

    Args:
        path: the file; digest: its bytes' sha256 (None: not a regular file); size: its bytes.
        max_triangles: the most triangles the mesh may have.
    """
    import trimesh

    if not os.path.isfile(path):
        return "not a regular file; a mesh is an OBJ, STL, PLY, glTF or GLB file"
    if not path.lower().endswith(MESH_SUFFIXES):
        return f"not a mesh file: its name must end in {', '.join(MESH_SUFFIXES)}"
    try:
        with open(path, "rb") as handle:
            handle.read(1)
        problem = _text_problem(path)
        if problem:
            return problem
        # Unprocessed: processing would drop non-finite vertices (and their triangles) unsaid.
        # errstate: trimesh's arithmetic on huge coordinates would print warnings before our line.
        with np.errstate(all="ignore"):
            loaded = trimesh.load(path, force="mesh", process=False, resolver=_regular_files(path))
    except PermissionError as error:
        return f"cannot read ({error.strerror})"
    except Exception as error:  # trimesh raises what its parsers raise: any of them means "not a mesh"
        if _is_encoding_error(error):  # a text format trimesh could not decode as UTF-8
            return _not_utf8(path) or "is not UTF-8 text; save it as UTF-8 (or plain ASCII)"
        reason = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
        return f"not a mesh trimesh can read ({reason})"
    if not isinstance(loaded, trimesh.Trimesh) or len(loaded.faces) == 0:
        return "holds no triangles; a mesh needs at least one"
    problem = _array_problem(np.asarray(loaded.vertices), np.asarray(loaded.faces))
    if problem:
        return problem
    if len(loaded.faces) > max_triangles:
        return f"has {len(loaded.faces):,} triangles; a mesh may have at most {max_triangles:,} (simplify it)"
    loaded.merge_vertices()  # triangles sharing corners share vertices: what watertight is judged on
    if loaded.is_watertight and loaded.is_winding_consistent and loaded.volume < 0:
        loaded.invert()  # a closed mesh facing inwards: its inside is what it encloses
    return loaded


def _array_problem(vertices: np.ndarray, faces: np.ndarray) -> str | None:
    """What is wrong with the vertices and triangles trimesh read, or None.

    trimesh takes them as the file gives them: a triangle may name a vertex past the end or a
    negative one (numpy would wrap it round to another vertex), and coordinates of any size.
    Beyond :data:`MAX_MAGNITUDE` the world's arithmetic is no longer exact enough (merging
    vertices alone rounds them to int64 at 1e-8 and overflows near 1e11).
    """
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        return f"has vertices of {vertices.shape[-1]} coordinates; a mesh's vertices need 3 (x, y, z)"
    if faces.ndim != 2 or faces.shape[1] != 3:
        return f"has faces of {faces.shape[-1]} corners that trimesh could not split into triangles"
    low, high = int(faces.min()), int(faces.max())
    if low < 0 or high >= len(vertices):
        bad = low if low < 0 else high
        return (
            f"has a triangle naming vertex {bad} (numbered from 0), but it holds {len(vertices):,} vertices; "
            "the file is damaged"
        )
    if not np.isfinite(vertices).all():
        return "has vertices that are not finite numbers (NaN or inf); a mesh needs finite coordinates"
    largest = float(np.abs(vertices).max())
    if largest > MAX_MAGNITUDE:
        return (
            f"has a coordinate of {largest:g}; a mesh's coordinates must be at most {MAX_MAGNITUDE:g} "
            "in size (rescale the file, then size it with the object's scale)"
        )
    return None


#: What an OBJ's text is searched for before trimesh reads it: a vertex of fewer than 3
#: coordinates, and a face index 0 (indices count from 1, or back from -1). trimesh accepts
#: both: the first garbles every vertex, the second silently names the last vertex. Each
#: pattern begins at the newline before its line, a literal the regex engine scans for fast.
_OBJ_SHORT_VERTEX = re.compile(rb"\n[ \t]*v(?:[ \t]+[^ \t\r\n]+){0,2}[ \t]*\r?(?=\n|\Z)")
_OBJ_ZERO_INDEX = re.compile(rb"\n[ \t]*f(?=[ \t])[^\n]*?[ \t/][-+]?0+(?=[/ \t\r\n]|\Z)")


def _text_problem(path: str) -> str | None:
    """What trimesh would misread in a text mesh (OBJ, ASCII STL): text that is not UTF-8 (which
    trimesh would guess at, with a module flock3d does not install), and the OBJ flaws above."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in (".obj", ".stl"):
        return None
    with open(path, "rb") as handle:
        data = handle.read()
    # A binary STL says how many triangles follow its 80-byte header, and is that long; an ASCII
    # one begins "solid" (a binary header may too).
    if suffix == ".stl" and not data.lstrip().startswith(b"solid"):
        if len(data) < 84:
            return f"is too short for a binary STL ({len(data)} bytes; its header alone takes 84)"
        triangles = int.from_bytes(data[80:84], "little")
        if len(data) != 84 + 50 * triangles:
            return (
                f"is a binary STL of {triangles:,} triangles, which takes {84 + 50 * triangles:,} bytes, "
                f"but it has {len(data):,}: the file is truncated or damaged"
            )
        return None
    if suffix == ".stl" and len(data) >= 84 and len(data) == 84 + 50 * int.from_bytes(data[80:84], "little"):
        return None
    problem = _not_utf8(path, data)
    if problem or suffix != ".obj":
        return problem
    text = b"\n" + data  # every line, the first included, after a newline
    for pattern, what in (
        (_OBJ_SHORT_VERTEX, "has a vertex of fewer than 3 coordinates; a mesh's vertices need x, y and z"),
        (_OBJ_ZERO_INDEX, "has a face with index 0; an OBJ's indices count from 1 (or back from -1)"),
    ):
        found = pattern.search(text)
        if found:
            line = text.count(b"\n", 0, found.start() + 1)
            return f"line {line}: {what}"
    return None


def _not_utf8(path: str, data: bytes | None = None) -> str | None:
    """The line saying where the file stops being UTF-8 text, or None when it is UTF-8."""
    if data is None:
        with open(path, "rb") as handle:
            data = handle.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return (
            f"is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start:,}); save it as UTF-8 "
            "(or plain ASCII)"
        )
    return None


def _is_encoding_error(error: BaseException) -> bool:
    """Whether trimesh failed to decode text: a UnicodeDecodeError, or its fallback's missing module."""
    while error is not None:
        if isinstance(error, UnicodeDecodeError) or (
            isinstance(error, ImportError) and error.name == "charset_normalizer"
        ):
            return True
        error = error.__cause__ or error.__context__
    return False


def _regular_files(path: str):
    """trimesh's resolver for the files a mesh names (a glTF's buffers and images, an OBJ's
    materials), confined to the mesh's folder as trimesh's own is, and refusing anything but a
    regular file: a FIFO there would block the read forever, a device never end it."""
    from trimesh.resolvers import FilePathResolver

    class RegularFiles(FilePathResolver):
        def get(self, name: str):
            for candidate in (name.strip(), name.strip().lstrip("/"), os.path.split(name)[-1]):
                try:
                    found = self.absolute(candidate)
                except ValueError:  # outside the folder: trimesh's own get refuses it
                    continue
                if found.exists() and not found.is_file():
                    raise ValueError(f"{name!r} is not a regular file")
            try:
                return super().get(name)
            except ValueError:  # trimesh's words for a name outside the folder advise a programmer
                raise ValueError(f"{name!r} lies outside the mesh's folder") from None

    return RegularFiles(path)
