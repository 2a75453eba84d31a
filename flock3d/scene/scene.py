"""Scenes: the Scene record, reading and validating scene files, and the shipped library.

A scene is written out by :mod:`flock3d.scene.writing` and told to people (the arena in words,
the template) by :mod:`flock3d.scene.describe`; ``toml_value`` is
importable from here too."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from flock3d.core.atomic import atomic_write
from flock3d.core.models import MODELS_BY_NAME
from flock3d.core.objects import covered_start_problems, needs_field
from flock3d.core.params import Params, Problem, params_problems, short_repr
from flock3d.errors import Flock3dError
from flock3d.scene.schema import (
    KEYS_BY_NAME,
    PARAM_KEY_OF_FIELD,
    SECTIONS,
    ViewHints,
    check_kind,
    convert_structured,
    species_looks,
)
from flock3d.scene.writing import scene_data, scene_toml, toml_value

__all__ = [
    "Scene",
    "SceneError",
    "load_scene",
    "parse_scene",
    "parse_value",
    "shipped_scenes",
    "resolve_scene",
    "default_scene",
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
    read from (``source``, ``text``) and what runs them (``engine``) do not count.

    Attributes:
        params: the model parameters.
        name: the scene's name.
        description: one line saying what the scene shows.
        seed: seed of the flock's random initial state.
        view: how the viewer and ``flock3d render`` show it (:class:`ViewHints`).
        source: where the scene came from: a file path, ``shipped:<name>`` or None.
        text: the TOML text it was read from, if any.
        engine: what steps its flock (``sim.engine``): how it is run, not what it is, so it takes
            no part in equality, as ``source`` and ``text`` do not.
        fields: what its objects read from files became when it was loaded (meshes' grids,
            heightfields' heights), by object index: :func:`flock3d.io.meshes.object_fields`.
    """

    params: Params = field(default_factory=Params)
    name: str = "untitled"
    description: str = ""
    seed: int = 0
    view: ViewHints = field(default_factory=ViewHints)
    source: str | None = field(default=None, compare=False)
    text: str | None = field(default=None, compare=False)
    engine: str = field(default="fast", compare=False)
    fields: Mapping[int, Any] | None = field(default=None, compare=False, repr=False)

    def to_toml(self, folder: str | Path | None = None) -> str:
        """The scene as a complete TOML scene file, every key written out.

        Args:
            folder: the folder the file will be in, from which the objects' files are named;
                None: they are named as they are held.

        Returns:
            The TOML text.
        """
        return scene_toml(self, folder)

    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_toml` to ``path``.

        Args:
            path: the scene file to write.

        Returns:
            ``path``, as a :class:`~pathlib.Path`.

        Raises:
            OSError: the file cannot be written; a scene already at ``path`` is left as it was.
        """
        path = Path(path)
        text = self.to_toml(path.resolve().parent)
        with atomic_write(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path

    def with_overrides(self, assignments: Iterable[str], rule_names: Sequence[str] | None = None) -> Scene:
        """This scene with ``key=value`` assignments applied and validated.

        Args:
            assignments: ``key=value`` strings, each value one TOML value.
            rule_names: the names of your rules and forces, as for :func:`load_scene`.

        Returns:
            The new scene.

        Raises:
            SceneError: listing every problem found, each naming the key.
        """
        data = scene_data(self)
        problems = apply_assignments(data, assignments)
        return _build(data, self.source or self.name, self.source, self.text, problems, rule_names)

    def replace(self, **changes: Any) -> Scene:
        """A copy with some fields changed (as :func:`dataclasses.replace`; not validated).

        Args:
            **changes: new values by field name.

        Returns:
            The new scene.
        """
        return dataclasses.replace(self, **changes)


# -- reading --------------------------------------------------------------------------


#: Largest scene file read, bytes. Real scenes are a few kilobytes (a path of 10,000
#: waypoints is about 400 KB); the bound keeps `flock3d check /dev/zero` from reading forever.
MAX_SCENE_BYTES = 1 << 20

#: Deepest nesting of tables and arrays a scene may hold: the deepest real value,
#: a path's points, is 3 levels below its section.
MAX_SCENE_DEPTH = 8

#: Most dots before the ``=`` of a line a scene may have: a key of more parts is refused before
#: it is parsed. tomllib takes time quadratic in a dotted key's parts (20,000 parts took seconds;
#: a 1 MB file of one key would take most of an hour), and a scene's keys have at most
#: MAX_SCENE_DEPTH; the margin leaves alone any line of a multi-line string that has a few dots.
MAX_KEY_DOTS = 64


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
            file's own keys; one assignment may be given as a string alone.
        rule_names: the names of the rules and forces of yours the scene will run
            with, which ``rules.order`` may name too. None (the default) when they
            are not known yet: then a name that is no built-in stage may be one of
            them, and is checked when the flock is made with them.

    Returns:
        The validated :class:`Scene`.

    Raises:
        SceneError: listing every problem found (syntax, unknown keys with the
            closest valid one, wrong types, values out of range), each naming
            the file and the key.
    """
    return resolve_scene(path, overrides, rule_names)


#: How an HDF5 file (a flock3d recording) begins.
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
#: What a recording given for a scene is for.
_READ_RECORDINGS = "render, metrics, export and infer read recordings named .h5 or .hdf5"
#: Files flock3d writes that are no scene, by suffix: named for what they are, not read as TOML
#: (a .glb said "more bytes than a scene may hold", a .usda "TOML syntax error": the artist's walk).
_NOT_SCENES = {
    ".glb": "a glTF file (an export?)",
    ".gltf": "a glTF file (an export?)",
    ".usd": "a USD stage (an export?)",
    ".usda": "a USD stage (an export?)",
    ".usdc": "a USD stage (an export?)",
    ".html": "a web page (an export?)",
    ".mp4": "a video",
    ".png": "an image",
    ".csv": "a table",
    ".parquet": "a table",
}


def _read_scene_file(path: Path) -> bytes:
    """The bytes of a scene file: a regular file of at most MAX_SCENE_BYTES, else SceneError."""
    import stat

    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise SceneError([f"{path}: is a directory, not a scene file"])
        if not stat.S_ISREG(info.st_mode):  # a device or a FIFO: reading could never end
            raise SceneError([f"{path}: not a regular file; a scene is a TOML file"])
        if path.suffix.lower() in _NOT_SCENES:
            raise SceneError(
                [f"{path}: {_NOT_SCENES[path.suffix.lower()]}, not a scene; a scene is a TOML file (.toml), "
                 f"and {_READ_RECORDINGS}"]
            )  # fmt: skip
        with path.open("rb") as handle:
            if handle.read(len(_HDF5_SIGNATURE)) == _HDF5_SIGNATURE:
                raise SceneError([f"{path}: an HDF5 file (a recording?), not a scene; {_READ_RECORDINGS}"])
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
            text = text.decode("utf-8-sig")  # a byte-order mark (Notepad writes one) read as none
        except UnicodeDecodeError as error:
            raise SceneError([
                f"{source}: not UTF-8 text (byte {error.start} is not UTF-8, as in a file saved as "
                "Latin-1, or binary); a scene is a TOML file, which is UTF-8: save it as UTF-8"
            ]) from None  # fmt: skip
    if "\x00" in text:
        raise SceneError([f"{source}: not a text file (contains NUL bytes); expected a TOML scene"])
    if not text.strip():
        raise SceneError([f'{source}: empty file; a scene needs at least one key, e.g. name = "my scene"'])
    if any(line.partition("=")[0].count(".") > MAX_KEY_DOTS for line in text.splitlines() if "=" in line):
        raise SceneError([f"{source}: {_too_deep()}"])
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
    twice = re.fullmatch(r"Cannot declare \(('[^']*',?\s*)+\) twice", message)
    if twice:  # tomllib names the table as a Python tuple: ('objects',)
        name = ".".join(re.findall(r"'([^']*)'", message))
        many = (
            f"; several [{name}] tables are written [[{name}]], one per item"
            if (name in KEYS_BY_NAME and KEYS_BY_NAME[name].kind == "items")
            else ""
        )
        message = f"[{name}] is declared twice{many}"
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
        tables = key.partition("[")[0].partition(".")[0]  # objects[1].position: a field of a table
        if key != tables and tables in KEYS_BY_NAME and KEYS_BY_NAME[tables].kind in ("items", "table"):
            problems.append(
                f"--set {short_repr(key)}: --set sets a whole key, not a field of {tables}: give "
                f"{tables}=... whole, or change it in the scene file"
            )
            continue
        if key not in KEYS_BY_NAME:
            problems.append(unknown_key_message(key))
            continue
        if not value_text.strip():  # an empty string is written "" (a bare word would be nothing)
            problems.append(f"--set {key}: expected a value after '=' (an empty text is written {key}=\"\")")
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


def _key_problem(p: Problem) -> str:
    """A problem of Params as a scene's problem: its fields written as their keys."""
    # A species' problems name the keys of its table, which are the fields' own names.
    message = (
        p.message if p.field == "species" else _FIELD_WORD.sub(lambda m: PARAM_KEY_OF_FIELD[m[1]], p.message)
    )
    return str(Problem(PARAM_KEY_OF_FIELD[p.field], message))


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
    if isinstance(overrides, str):  # one assignment, not its characters
        overrides = [overrides]
    if not str(name_or_path).strip():  # Path("") is ".", the working folder
        raise SceneError(["no scene given: name a shipped scene (`flock3d scenes` lists them) or a file"])
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
