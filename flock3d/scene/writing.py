"""Scenes written out: a scene as a TOML scene file, and as the nested data TOML reads back.

:meth:`flock3d.scene.Scene.to_toml` and :meth:`~flock3d.scene.Scene.save` write through here;
:meth:`~flock3d.scene.Scene.with_overrides` edits the data and reads it back.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flock3d.scene.schema import (
    KEYS,
    KEYS_BY_NAME,
    SECTIONS,
    STRUCTURED,
    TOP_LEVEL_PARAMS,
    look_parts,
    structured_to_toml,
)

if TYPE_CHECKING:
    from flock3d.scene.scene import Scene

__all__ = ["scene_toml", "scene_data", "scene_values", "plain", "toml_value"]


def scene_toml(scene: Scene, folder: str | Path | None = None) -> str:
    """The scene as a complete TOML scene file (every key written out); the objects' files
    named from ``folder`` when given (where the file will be), else as they are held."""
    values = scene_values(scene)
    if folder is not None:
        values["objects"] = tuple(_named_from(o, Path(folder)) for o in values["objects"])
    lines = [f"name = {toml_value(scene.name)}", f"description = {toml_value(scene.description)}"]
    lines.append(f"seed = {scene.seed}")
    lines += [f"{name} = {toml_value(values[name])}" for name in TOP_LEVEL_PARAMS]
    for section in SECTIONS:
        lines += ["", f"[{section}]"]
        for key in KEYS:
            if key.name.startswith(section + ".") and values.get(key.name) is not None:
                lines.append(f"{key.name.split('.', 1)[1]} = {toml_value(values[key.name])}")
    for name in STRUCTURED:  # tables come last: TOML puts every key after them inside them
        looks = scene.view.species if name == "species" else ()
        lines += structured_to_toml(KEYS_BY_NAME[name], values[name], toml_value, looks)
    return "\n".join(lines) + "\n"


def _named_from(o: Any, folder: Path) -> Any:
    """The object with its files named relative to ``folder``, as a scene file there names them."""
    changes = {}
    for name in ("file", "image"):
        value = getattr(o, name)
        if isinstance(value, str) and os.path.isabs(value):
            try:
                changes[name] = os.path.relpath(value, folder)
            except ValueError:  # another drive: only the full name reaches it
                pass
    return o._replace(**changes)


def scene_values(scene: Scene) -> dict[str, Any]:
    """Every key of the scene file (``name``, ``seed``, ``perception.fov``...) -> its value in ``scene``."""
    values: dict[str, Any] = {"name": scene.name, "description": scene.description, "seed": scene.seed}
    for key in KEYS:
        if key.target == "params":
            values[key.name] = getattr(scene.params, key.field)
        elif key.target == "view":
            values[key.name] = getattr(scene.view, key.field)
        else:
            values[key.name] = getattr(scene, key.field)
    return values


def scene_data(scene: Scene) -> dict[str, Any]:
    """The scene as nested TOML-like data (what :func:`tomllib.loads` would give)."""
    data: dict[str, Any] = {}
    for name, value in scene_values(scene).items():
        if value is None:
            continue
        if name == "species":
            tables = plain(value)
            for table, look in zip(tables, scene.view.species, strict=False):
                table.update(look_parts(look))
            data[name] = tables
            continue
        section, _, leaf = name.rpartition(".")
        table = data.setdefault(section, {}) if section else data
        table[leaf] = plain(value)
    return data


def plain(value: Any) -> Any:
    """A Params value as TOML would give it back: lists and tables, no tuples."""
    if hasattr(value, "_asdict"):  # an Attractor, Obstacle, WaypointPath or Species (unset fields left out)
        return {k: plain(v) for k, v in value._asdict().items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def toml_value(value: Any) -> str:
    """A Python value written as a TOML value (numbers, strings, booleans, nested arrays)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON strings are valid TOML basic strings
    if hasattr(value, "_asdict"):  # a record inside a table (an object's motion): an inline table
        items = [f"{k} = {toml_value(v)}" for k, v in value._asdict().items() if v is not None]
        return "{ " + ", ".join(items) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")
