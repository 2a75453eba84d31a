"""The world extra (trimesh, libigl, imageio), which reads the meshes and heightfield images of
a scene's objects: whether it is installed, and the one-line error of a file it cannot use.
"""

from __future__ import annotations

from flock3d import extras
from flock3d.errors import Flock3dError

__all__ = ["MeshError", "world_extra_installed", "require_world_extra"]


class MeshError(Flock3dError):
    """A mesh or image that cannot be used, in one line naming the file and the problem."""


def world_extra_installed() -> bool:
    """Whether this install can read meshes and heightfield images (the world extra)."""
    return not extras.missing("world")


def require_world_extra(what: str) -> None:
    """Refuse ``what`` (a file to read, named) where the world extra is not installed."""
    extras.require("world", what, error=MeshError)
