"""Scenes: loading, validating and writing scene files."""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from flock3d.core.atomic import atomic_write
from flock3d.core.fields import spec_of
from flock3d.core.models import MODELS_BY_NAME
from flock3d.core.objects import covered_start_problems, needs_field
from flock3d.core.params import Params, Problem, params_problems, short_repr
from flock3d.errors import Flock3dError
from flock3d.scene.schema import (
    KEYS,
    KEYS_BY_NAME,
    PARAM_KEY_OF_FIELD,
    SECTIONS,
    STRUCTURED,
    TOP_LEVEL_PARAMS,
    ViewHints,
    check_kind,
    convert_structured,
    look_parts,
    species_looks,
    structured_to_toml,
)

__all__ = [
    "Scene",
    "SceneError",
    "load_scene",
    "parse_scene",
    "parse_value",
    "shipped_scenes",
    "resolve_scene",
    "default_scene",
    "describe_arena",
    "toml_value",
    "unknown_key_message",
]

DEFAULT_SCENE = "default"


class SceneError(Flock3dError):
    """A scene that cannot be used, with every problem found in it.

    ``problems`` holds one line per problem, each naming the source and the key.
    """

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Scene:
    """A world to simulate: model parameters, a seed and viewing hints.

    Two scenes are equal when they describe the same world; where they were
    read from (``source``, ``text``) does not count.
    """

    params: Params = field(default_factory=Params)
    name: str = "untitled"
    description: str = ""
    seed: int = 0
    view: ViewHints = field(default_factory=ViewHints)
    source: str | None = field(default=None, compare=False)
    """Where the scene came from: a file path, ``shipped:<name>`` or None."""
    text: str | None = field(default=None, compare=False)
    """The TOML text it was read from, if any."""
    fields: Mapping[int, Any] | None = field(default=None, compare=False, repr=False)
    """What its objects read from files became when it was loaded (meshes' grids, heightfields'
    heights), by object index: :func:`flock3d.io.meshes.object_fields`."""

    def to_toml(self, folder: str | Path | None = None) -> str:
        """The scene as a complete TOML scene file (every key written out); the objects' files
        named from ``folder`` when given (where the file will be), else as they are held."""
        values = _values_of(self)
        if folder is not None:
            values["objects"] = tuple(_named_from(o, Path(folder)) for o in values["objects"])
        lines = [f"name = {toml_value(self.name)}", f"description = {toml_value(self.description)}"]
        lines.append(f"seed = {self.seed}")
        lines += [f"{name} = {toml_value(values[name])}" for name in TOP_LEVEL_PARAMS]
        for section in SECTIONS:
            lines += ["", f"[{section}]"]
            for key in KEYS:
                if key.name.startswith(section + ".") and values.get(key.name) is not None:
                    lines.append(f"{key.name.split('.', 1)[1]} = {toml_value(values[key.name])}")
        for name in STRUCTURED:  # tables come last: TOML puts every key after them inside them
            looks = self.view.species if name == "species" else ()
            lines += structured_to_toml(KEYS_BY_NAME[name], values[name], toml_value, looks)
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_toml` to ``path``; returns the path.

        Raises:
            OSError: the file cannot be written; a scene already at ``path`` is left as it was.
        """
        path = Path(path)
        text = self.to_toml(path.resolve().parent)
        with atomic_write(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path

    def with_overrides(self, assignments: Iterable[str], rule_names: Sequence[str] | None = None) -> Scene:
        """This scene with ``key=value`` assignments applied (values in TOML syntax), validated
        (``rule_names`` as for :func:`load_scene`)."""
        data = _data_of(self)
        problems = apply_assignments(data, assignments)
        return _build(data, self.source or self.name, self.source, self.text, problems, rule_names)

    def replace(self, **changes: Any) -> Scene:
        return dataclasses.replace(self, **changes)


# -- reading --------------------------------------------------------------------------


#: Largest scene file read, bytes. Real scenes are a few kilobytes (a path of 10,000
#: waypoints is about 400 KB); the bound keeps `flock3d check /dev/zero` from reading forever.
MAX_SCENE_BYTES = 1 << 20

#: Deepest nesting of tables and arrays a scene may hold: the deepest real value,
#: a path's points, is 3 levels below its section.
MAX_SCENE_DEPTH = 8


def load_scene(
    path: str | Path, overrides: Iterable[str] = (), rule_names: Sequence[str] | None = None
) -> Scene:
    """Read and validate a scene file, or a shipped scene by name.

    Args:
        path: a ``.toml`` file, or the name of a shipped scene (``"torus"``,
            ``"couzin/swarm"``, also written ``"scenes/torus.toml"``), as the
            command line takes them; a file that exists wins over a name.
        overrides: ``key=value`` assignments applied on top of the file (as
            ``flock3d run --set``), each value one TOML value, validated like the
            file's own keys.
        rule_names: the names of the rules and forces of yours the scene will run
            with, which ``rules.order`` may name too. None (the default) when they
            are not known yet: then a name that is no built-in stage may be one of
            them, and is checked when the flock is made with them.

    Raises:
        SceneError: listing every problem found (syntax, unknown keys with the
            closest valid one, wrong types, values out of range), each naming
            the file and the key.
    """
    return resolve_scene(path, overrides, rule_names)


def _read_scene_file(path: Path) -> bytes:
    """The bytes of a scene file: a regular file of at most MAX_SCENE_BYTES, else SceneError."""
    import stat

    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise SceneError([f"{path}: is a directory, not a scene file"])
        if not stat.S_ISREG(info.st_mode):  # a device or a FIFO: reading could never end
            raise SceneError([f"{path}: not a regular file; a scene is a TOML file"])
        if info.st_size > MAX_SCENE_BYTES:
            raise SceneError(
                [f"{path}: {info.st_size:,} bytes; a scene file may hold at most {MAX_SCENE_BYTES:,}"]
            )
        with path.open("rb") as handle:
            raw = handle.read(MAX_SCENE_BYTES + 1)  # the file may have grown since stat
    except FileNotFoundError:
        raise SceneError([f"{path}: no such file"]) from None
    except OSError as error:
        raise SceneError([f"{path}: cannot read ({error.strerror or error})"]) from None
    if len(raw) > MAX_SCENE_BYTES:
        raise SceneError([f"{path}: more than {MAX_SCENE_BYTES:,} bytes; too large for a scene file"])
    return raw


def parse_scene(
    text: str | bytes,
    source: str = "<scene>",
    overrides: Iterable[str] = (),
    rule_names: Sequence[str] | None = None,
) -> Scene:
    """Validate scene TOML text (see :func:`load_scene`); ``source`` names it in messages."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise SceneError(
                [f"{source}: not a text file (invalid UTF-8 at byte {error.start}); expected a TOML scene"]
            ) from None
    if "\x00" in text:
        raise SceneError([f"{source}: not a text file (contains NUL bytes); expected a TOML scene"])
    if not text.strip():
        raise SceneError([f'{source}: empty file; a scene needs at least one key, e.g. name = "my scene"'])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SceneError([f"{source}: {_syntax_message(error, text)}"]) from None
    except RecursionError:  # the parser recurses once per level of nesting
        raise SceneError([f"{source}: {_too_deep()}"]) from None
    problems = apply_assignments(data, overrides)
    return _build(data, source, source, text, problems, rule_names)


def _too_deep() -> str:
    return f"arrays or tables nested too deeply (a scene needs at most {MAX_SCENE_DEPTH} levels)"


def _depth(data: Any) -> int:
    """How deeply lists and dicts nest in ``data``, counted without recursion."""
    deepest, stack = 0, [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth + 1)
            if deepest > MAX_SCENE_DEPTH:
                break
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def parse_value(text: str) -> Any:
    """One value written in TOML syntax (``120``, ``[1, 2, 3]``, ``true``); a bare word stays a string.

    Raises:
        SceneError: when the text holds a line break (after which TOML would read more keys
            or tables, e.g. ``120\n[arena]\nradius = 1e308``), or nests arrays or tables too
            deeply to read. Its one problem reads after the key, e.g. ``--set perception.fov: ...``.
    """
    text = text.strip()
    if "\n" in text or "\r" in text:
        raise SceneError([f"expected one TOML value on one line (got {short_repr(text)})"])
    try:
        data = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return text  # a bare word: treat it as a string (e.g. view.mesh=cone)
    except RecursionError:
        raise SceneError([_too_deep()]) from None
    return data["v"]  # one line holds one key = value: nothing else can follow it


def _syntax_message(error: tomllib.TOMLDecodeError, text: str) -> str:
    message = str(error)
    match = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if match:
        where = f"line {match[1]}, column {match[2]}"
        message = message[: match.start()].strip()
    else:  # "(at end of document)"
        lines = text.splitlines() or [""]
        where = f"line {len(lines)}, column {len(lines[-1]) + 1} (end of file)"
        message = re.sub(r"\s*\(at end of document\)", "", message)
    return f"TOML syntax error at {where}: {message}"


def apply_assignments(data: dict, assignments: Iterable[str]) -> list[str]:
    """Set ``key=value`` assignments into nested TOML data; returns problems with them."""
    problems = []
    for assignment in assignments:
        key, sep, value_text = assignment.partition("=")
        key = key.strip()
        if not sep or not key or not key.isprintable():
            problems.append(f"--set {short_repr(assignment)}: expected key=value, e.g. perception.fov=120")
            continue
        if key not in KEYS_BY_NAME:
            problems.append(unknown_key_message(key))
            continue
        try:
            value = parse_value(value_text)
        except SceneError as error:
            problems.append(f"--set {key}: {error.problems[0]}")
            continue
        section, _, leaf = key.rpartition(".")
        table = data.setdefault(section, {}) if section else data
        if not isinstance(table, dict):
            problems.append(f"{section}: expected a [{section}] table, got {table!r}")
            continue
        table[leaf] = value
    return problems


def unknown_key_message(name: str) -> str:
    """``name: unknown key``, with the closest valid key when there is one."""
    close = difflib.get_close_matches(name, list(KEYS_BY_NAME), n=1, cutoff=0.6)
    if not close and "." not in name:  # a bare leaf: "fov" -> "perception.fov"
        close = [k for k in KEYS_BY_NAME if k.rpartition(".")[2] == name][:1]
    if not close:
        # A misspelt section with a known leaf: "percepton.fov" -> "perception.fov".
        leaf = name.rpartition(".")[2]
        close = difflib.get_close_matches(
            name, [k for k in KEYS_BY_NAME if k.rpartition(".")[2] == leaf], n=1, cutoff=0.3
        )
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"{name}: unknown key{hint}"


def _flatten(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Dotted keys -> values, and problems with the layout (unknown sections, non-tables)."""
    flat, problems = {}, []
    for top, value in data.items():
        if top in SECTIONS:
            if not isinstance(value, dict):
                problems.append(f"{top}: expected a [{top}] table, got {value!r}")
                continue
            for leaf, inner in value.items():
                flat[f"{top}.{leaf}"] = inner
        elif isinstance(value, dict) and top not in KEYS_BY_NAME:
            close = difflib.get_close_matches(top, list(SECTIONS), n=1, cutoff=0.6)
            hint = f"; did you mean [{close[0]}]?" if close else f"; sections are {', '.join(SECTIONS)}"
            problems.append(f"[{top}]: unknown section{hint}")
        else:
            flat[top] = value
    return flat, problems


#: A field's name in a Params message, to be written as its key; a quoted word is a value (a
#: stage's name, which may be a field's too), not a field.
_FIELD_WORD = re.compile(
    r"(?<!')\b(" + "|".join(sorted(PARAM_KEY_OF_FIELD, key=len, reverse=True)) + r")\b(?!')"
)


def _build(
    data: Mapping[str, Any],
    origin: str,
    source: str | None,
    text: str | None,
    earlier: list[str],
    rule_names: Sequence[str] | None = None,
) -> Scene:
    """Validate nested scene data into a Scene; raise SceneError with ``earlier`` + new problems."""
    if _depth(data) > MAX_SCENE_DEPTH:  # before anything walks or prints the values
        raise SceneError([f"{origin}: {_too_deep()}"])
    flat, problems = _flatten(data)
    problems = list(earlier) + problems
    scene_values: dict[str, Any] = {}
    view_values: dict[str, Any] = {}
    param_values: dict[str, Any] = {}
    for name, value in flat.items():
        key = KEYS_BY_NAME.get(name)
        if key is None:
            problems.append(unknown_key_message(name))
            continue
        if key.kind in ("items", "table"):
            tables = value
            value, found = convert_structured(key, value)
            if found:
                problems += found
                continue
            if name == "species":
                view_values["species"] = species_looks(tables)
        else:
            problem = check_kind(key, value)
            if problem:
                problems.append(f"{name} {problem}")
                continue
        target = {"scene": scene_values, "view": view_values, "params": param_values}[key.target]
        target[key.field] = value
    if param_values.get("objects"):  # files named in a scene are found beside it
        param_values["objects"] = _objects_found_from(param_values["objects"], source)
    if param_values.get("model") in MODELS_BY_NAME:  # unset keys take the model's and its paper's values
        param_values = {**MODELS_BY_NAME[param_values["model"]].scene_defaults, **param_values}
    species = param_values.get("species")
    if species and "count" in param_values and param_values["count"] != sum(s.count for s in species):
        problems.append(
            f"flock.count is {param_values.pop('count')} but the [[species]] tables hold "
            f"{sum(s.count for s in species)} boids; leave flock.count out"
        )
    # Values of the wrong kind were reported above and left out, so every problem found
    # here is real, including cross-key ones (min_speed > max_speed) where one key is a default.
    problems += [_key_problem(p) for p in params_problems(param_values, rule_names)]
    if problems:
        raise SceneError([f"{origin}: {p}" for p in problems])
    params = Params(**param_values)
    problems, fields = _object_file_problems(params)
    if problems:
        raise SceneError([f"{origin}: {p}" for p in problems])
    if "name" not in scene_values and source and not source.startswith("shipped:"):
        scene_values["name"] = Path(source).stem
    return Scene(
        params=params,
        view=ViewHints(**view_values),
        source=source,
        text=text,
        fields=fields,
        **scene_values,
    )


def _scene_folder(source: str | None) -> Path | None:
    """The folder a scene's files are named from: its file's, a shipped scene's in the library,
    or None (the working directory) for text of no file."""
    if source and source.startswith("shipped:"):
        *folders, _ = source.removeprefix("shipped:").split("/")
        return Path(str(_library().joinpath(*folders)))
    if source and Path(source).is_file():
        return Path(source).resolve().parent
    return None


def _objects_found_from(objects: tuple, source: str | None) -> tuple:
    """The objects with their files (meshes, images) named from the scene's folder."""
    folder = _scene_folder(source)
    if folder is None:
        return objects
    found = []
    for o in objects:
        changes = {
            name: os.path.normpath(folder / getattr(o, name))
            for name in ("file", "image")
            if isinstance(getattr(o, name), str) and getattr(o, name)
        }
        found.append(o._replace(**changes))
    return tuple(found)


def _object_file_problems(params: Params) -> tuple[list[str], dict[int, Any] | None]:
    """What the objects' files break (a missing or open mesh, an image that is no greyscale PNG),
    then whether the objects read from them leave room to place the boids (their grids are
    sampled, or read from the cache, to tell); and the fields they became."""
    if not any(needs_field(o) for o in params.objects):
        return [], None
    from flock3d.io.worlds import read_world

    problems, fields = read_world(params)
    if problems:
        return problems, None
    values = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
    return [_key_problem(Problem(*p)) for p in covered_start_problems(values, fields)], fields


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


def _key_problem(p: Problem) -> str:
    """A problem of Params as a scene's problem: its fields written as their keys."""
    # A species' problems name the keys of its table, which are the fields' own names.
    message = (
        p.message if p.field == "species" else _FIELD_WORD.sub(lambda m: PARAM_KEY_OF_FIELD[m[1]], p.message)
    )
    return str(Problem(PARAM_KEY_OF_FIELD[p.field], message))


# -- writing --------------------------------------------------------------------------


def _values_of(scene: Scene) -> dict[str, Any]:
    values: dict[str, Any] = {"name": scene.name, "description": scene.description, "seed": scene.seed}
    for key in KEYS:
        if key.target == "params":
            values[key.name] = getattr(scene.params, key.field)
        elif key.target == "view":
            values[key.name] = getattr(scene.view, key.field)
    return values


def _data_of(scene: Scene) -> dict[str, Any]:
    """The scene as nested TOML-like data (what :func:`tomllib.loads` would give)."""
    data: dict[str, Any] = {}
    for name, value in _values_of(scene).items():
        if value is None:
            continue
        if name == "species":
            tables = _plain(value)
            for table, look in zip(tables, scene.view.species, strict=False):
                table.update(look_parts(look))
            data[name] = tables
            continue
        section, _, leaf = name.rpartition(".")
        table = data.setdefault(section, {}) if section else data
        table[leaf] = _plain(value)
    return data


def _plain(value: Any) -> Any:
    """A Params value as TOML would give it back: lists and tables, no tuples."""
    if hasattr(value, "_asdict"):  # an Attractor, Obstacle, WaypointPath or Species (unset fields left out)
        return {k: _plain(v) for k, v in value._asdict().items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
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


# -- the shipped library ----------------------------------------------------------------


def _library() -> resources.abc.Traversable:
    """The shipped scenes: the package data flock3d.scenes, or, where the source checkout's
    flock3d is the one imported (Python started in the repository after a non-editable
    install), the checkout's own scenes/ folder beside it, which that package data is built from."""
    try:
        return resources.files("flock3d.scenes")
    except ModuleNotFoundError:
        checkout = Path(__file__).resolve().parents[2] / "scenes"
        if not (checkout / "default.toml").is_file():
            raise
        return checkout


def shipped_scenes() -> list[str]:
    """Names of the scenes shipped with flock3d, e.g. ``default``, ``classics/reynolds-2d``."""
    names = []

    def walk(folder, prefix):
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.is_dir() and not entry.name.startswith(("_", ".")):
                walk(entry, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".toml"):
                names.append(prefix + entry.name[: -len(".toml")])

    walk(_library(), "")
    return names


def load_shipped() -> tuple[list[tuple[str, Scene]], list[str]]:
    """Every shipped scene this install can read: (name, scene) pairs in the library's order,
    and the names of those it cannot without the world extra (worlds of meshes or images)."""
    loaded, missing = [], []
    for name in shipped_scenes():
        try:
            loaded.append((name, resolve_scene(name)))
        except SceneError as error:
            if "world extra" not in str(error):
                raise
            missing.append(name)
    return loaded, missing


def resolve_scene(
    name_or_path: str | Path | None,
    overrides: Iterable[str] = (),
    rule_names: Sequence[str] | None = None,
) -> Scene:
    """A scene from a file path, or else from the shipped library by name (None: the default).

    ``flock3d run murmuration`` and ``flock3d run scenes/murmuration.toml`` find the same scene.
    ``overrides`` and ``rule_names`` as for :func:`load_scene`.
    """
    if name_or_path is None:
        name_or_path = DEFAULT_SCENE
    path = Path(name_or_path)
    if path.exists() or path.is_symlink():
        return parse_scene(_read_scene_file(path), str(path), overrides, rule_names)
    name = str(name_or_path).removesuffix(".toml")
    if name.startswith("scenes/"):
        name = name[len("scenes/") :]
    parts = name.split("/")
    entry = _library().joinpath(*parts[:-1], f"{parts[-1]}.toml")
    if ".." not in parts and entry.is_file():
        return parse_scene(entry.read_bytes(), f"shipped:{name}", overrides, rule_names)
    close = difflib.get_close_matches(name, shipped_scenes(), n=1, cutoff=0.7)
    hint = f"; did you mean {close[0]}?" if close else "; `flock3d scenes` lists the shipped ones"
    raise SceneError([f"{name_or_path}: no such file or shipped scene{hint}"])


def default_scene() -> Scene:
    """The embedded default scene (works from an installed wheel)."""
    return resolve_scene(None)


def template() -> str:
    """A scene file listing every key with its default and what it means, derived from the
    declarations (``flock3d scenes --template``): keys whose default is unset, and the
    structured tables (none by default), commented out with an example."""
    defaults: dict[str, Any] = {"name": "Template", "description": "Every key with its default.", "seed": 0}
    for key in KEYS:
        target = {"params": Params(), "view": ViewHints()}.get(key.target)
        if target is not None:
            defaults[key.name] = getattr(target, key.field)
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
            text = f"{leaf} = {toml_value(_plain(value))}"
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
            shown = toml_value(_plain(default)).replace("|", "\\|")
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
    from flock3d.core.models import MODELS
    from flock3d.core.params import SPEC_FIELDS, TERMS

    groups = {"model": SPEC_FIELDS, **{term.name: term.fields for term in TERMS if term.fields}}
    groups.update({model.table: tuple(model.fields) for model in MODELS if model.table})
    for section in _OWN_TABLES:  # a model's section of the scene file, tabulated by itself
        groups[section] = tuple(f.name for f in dataclasses.fields(Params)
                                if spec_of(f).key.startswith(f"{section}."))  # fmt: skip
    owned = {name for names in groups.values() for name in names}
    groups["other"] = tuple(f.name for f in dataclasses.fields(Params) if f.name not in owned)
    return groups
