"""Scene files: TOML descriptions of a world (model parameters, seed, viewing hints)."""

from flock3d.scene.describe import describe_arena, template
from flock3d.scene.scene import (
    Scene,
    SceneError,
    default_scene,
    load_scene,
    load_shipped,
    parse_scene,
    resolve_scene,
    shipped_scenes,
)
from flock3d.scene.schema import KEYS, ViewHints

__all__ = [
    "KEYS",
    "Scene",
    "SceneError",
    "ViewHints",
    "default_scene",
    "describe_arena",
    "load_scene",
    "load_shipped",
    "parse_scene",
    "resolve_scene",
    "shipped_scenes",
    "template",
]
