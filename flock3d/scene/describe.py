"""Scenes and their keys told to people, all derived from the declarations: the arena in a few
words (``flock3d scenes``, ``flock3d check``), the template scene file listing every key
(``flock3d scenes --template``) and the parameter tables of ``docs/model.md``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from flock3d.core.fields import spec_of
from flock3d.core.models import MODELS
from flock3d.core.params import SPEC_FIELDS, TERMS, Params
from flock3d.scene.scene import Scene
from flock3d.scene.schema import KEYS, ViewHints
from flock3d.scene.writing import plain, toml_value

__all__ = ["describe_arena", "template", "parameter_table", "parameter_groups"]


def describe_arena(params: Params) -> str:
    """The arena in a few words, as ``flock3d scenes`` and ``check`` show it: ``sphere R=30``,
    ``box, side 60``, ``periodic square, side 50``, ``open space``, ``a mesh arena``; and its
    objects, ``with 3 objects``."""
    arena = next((o.shape for o in params.objects if o.role == "arena"), None)
    count = len(params.objects) - (arena is not None)
    objects = f", with {count} object{'s' if count != 1 else ''}" if count else ""
    if params.arena_shape == "none":
        return (f"a {arena} arena" if arena else "open space") + objects
    return _describe_walls(params) + objects


def _describe_walls(params: Params) -> str:
    planar = params.dimensions == 2
    if params.arena_shape == "sphere":
        return f"{'circle' if planar else 'sphere'} R={params.arena_radius:g}"
    sides = [2.0 * h for h in params.half_extents[: 2 if planar else 3]]
    cube = len(set(sides)) == 1
    kind = ("square" if cube else "rectangle") if planar else ("box" if cube else "cuboid")
    prefix = {"periodic": "periodic ", "wrap": "wrap-around "}.get(params.arena_shape, "")
    size = f"side {sides[0]:g}" if cube else " x ".join(f"{s:g}" for s in sides)
    return f"{prefix}{kind}, {size}"


def template() -> str:
    """A scene file listing every key with its default and what it means, derived from the
    declarations (``flock3d scenes --template``): keys whose default is unset, and the
    structured tables (none by default), commented out with an example."""
    defaults: dict[str, Any] = {"name": "Template", "description": "Every key with its default.", "seed": 0}
    for key in KEYS:
        target = {"params": Params(), "view": ViewHints(), "scene": Scene()}[key.target]
        defaults.setdefault(key.name, getattr(target, key.field))
    specs = {f.name: spec_of(f) for f in dataclasses.fields(Params)}
    lines = [
        "# Every scene key with its default (flock3d scenes --template). A scene file needs only the",
        "# keys it changes; `flock3d check FILE` explains any mistake; docs/model.md describes the model.",
    ]
    sections: dict[str, list[str]] = {}
    tables: list[str] = []
    for key in KEYS:
        value = defaults[key.name]
        section, _, leaf = key.name.rpartition(".")
        if key.kind in ("items", "table"):
            tables += ["#", f"# {'[[' + key.name + ']]' if key.kind == 'items' else '[' + key.name + ']'}"
                       f"  {key.doc}"]  # fmt: skip
            tables += [f"# {part.name} = ...{'  (required)' if part.required else ''}" for part in key.parts]
            continue
        spec = specs.get(key.field) if key.target == "params" else None
        comment = key.doc
        if value is None:
            example = spec.example if spec is not None and spec.example is not None else "..."
            text = f"# {leaf} = {example if isinstance(example, str) else toml_value(example)}"
        else:
            text = f"{leaf} = {toml_value(plain(value))}"
        sections.setdefault(section, []).append(f"{text:<31} # {comment}")
    lines += ["", *sections.pop("")]
    for section, entries in sections.items():
        lines += ["", f"[{section}]", *entries]
    lines += ["", "# Structured values: none by default. Tables come last in a TOML file."]
    lines += tables[1:]
    return "\n".join(lines) + "\n"


def parameter_table(names: Sequence[str]) -> str:
    """The Markdown table of the Params fields ``names`` (symbol, scene key, field, meaning, unit,
    default, allowed values), derived from their declarations, as ``docs/model.md`` shows it."""
    fields = {f.name: f for f in dataclasses.fields(Params)}
    rows = ["| symbol | scene key | `Params` field | meaning | unit | default | allowed |", "|---" * 7 + "|"]
    for name in names:
        spec, default = spec_of(fields[name]), fields[name].default
        if default is None:
            shown = f"unset: {spec.unset}"
        elif isinstance(default, float):
            shown = f"{default:g}"
        elif isinstance(default, (tuple, list)) and default and not isinstance(default[0], (tuple, list)):
            shown = "(" + ", ".join(f"{v:g}" for v in default) + ")"
        else:
            shown = toml_value(plain(default)).replace("|", "\\|")
        allowed = spec.allowed_text().replace(">=", "≥").replace("<=", "≤")
        cells = [spec.symbol, f"`{spec.key}`", f"`{name}`", spec.doc.replace("|", "/"), spec.unit or "–"]
        rows.append("| " + " | ".join([*cells, shown, allowed]) + " |")
    return "\n".join(rows) + "\n"


#: The sections of a scene file whose keys ``docs/model.md`` tabulates apart from the rest (besides
#: the models' own tables, :attr:`flock3d.core.models.Model.table`).
_OWN_TABLES = ("flight",)


def parameter_groups() -> dict[str, tuple[str, ...]]:
    """The groups of Params fields ``docs/model.md`` tabulates: the model's own, each term's
    (by its name), and the rest (the variants and the Couzin and Vicsek models)."""
    groups = {"model": SPEC_FIELDS, **{term.name: term.fields for term in TERMS if term.fields}}
    groups.update({model.table: tuple(model.fields) for model in MODELS if model.table})
    for section in _OWN_TABLES:  # a model's section of the scene file, tabulated by itself
        groups[section] = tuple(f.name for f in dataclasses.fields(Params)
                                if spec_of(f).key.startswith(f"{section}."))  # fmt: skip
    owned = {name for names in groups.values() for name in names}
    groups["other"] = tuple(f.name for f in dataclasses.fields(Params) if f.name not in owned)
    return groups
