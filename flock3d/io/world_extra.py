"""The world extra (trimesh, libigl, imageio), which reads the meshes and heightfield images of
a scene's objects: whether it is installed, and the one-line error of a file it cannot use.
"""

from __future__ import annotations

import importlib.util

from flock3d.errors import Flock3dError

__all__ = ["MeshError", "world_extra_installed", "require_world_extra"]

#: The modules of the world extra, by import name.
_EXTRA = ("trimesh", "igl", "imageio")


class MeshError(Flock3dError):
    """A mesh or image that cannot be used, in one line naming the file and the problem."""


def _missing() -> list[str]:
    return [m for m in _EXTRA if importlib.util.find_spec(m) is None]


def world_extra_installed() -> bool:
    """Whether this install can read meshes and heightfield images (the world extra)."""
    return not _missing()


def require_world_extra(what: str) -> None:
    """Refuse ``what`` (a file to read, named) where the world extra is not installed."""
    missing = _missing()
    if missing:
        raise MeshError(
            f"{what} needs the world extra (missing {', '.join(missing)}): "
            "python -m pip install 'flock3d[world]'"
        )
