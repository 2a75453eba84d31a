"""A scene's world read from its files: each object's mesh or heightfield image checked, then
the fields they all become (a mesh's grid of signed distances, a heightfield's heights).

Scene validation asks this module (:mod:`flock3d.scene` imports it, never the reverse), so
that reading and sampling files stays in :mod:`flock3d.io`.
"""

from __future__ import annotations

from typing import Any

from flock3d.core.objects import needs_field, scales
from flock3d.core.params import Params
from flock3d.io.meshes import MeshError, object_fields, read_heights, read_mesh

__all__ = ["read_world"]


def read_world(params: Params) -> tuple[list[str], dict[int, Any] | None]:
    """The fields of the objects of ``params`` read from files, or what their files break.

    Returns:
        ``(problems, fields)``: ``problems`` one line each naming the object's key (a missing
        or open mesh, an image that is no greyscale PNG, a world whose grids are too large),
        and then ``fields`` None; or no problems and ``fields`` by object index, as
        :func:`flock3d.io.meshes.object_fields` gives them (None when no object reads a file).
    """
    if not any(needs_field(o) for o in params.objects):
        return [], None
    problems = []
    for k, o in enumerate(params.objects):
        try:
            if o.shape == "mesh":
                read_mesh(o.file, o.role, scales(o))
            elif needs_field(o):
                read_heights(o.image)
        except MeshError as error:
            problems.append(f"objects[{k}].{'file' if o.file else 'image'}: {error}")
    if problems:
        return problems, None
    try:
        return [], object_fields(params)
    except MeshError as error:
        return [str(error)], None
