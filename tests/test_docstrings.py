"""The public API's docstrings keep one style: Google style, units in brackets.

The API checked is what ``flock3d`` exports and every public name of ``flock3d.metrics``,
``flock3d.experiments`` and ``flock3d.io`` (recordings, exports, tables): each function, each
class, and each public method and property a class defines. Every docstring opens with a
one-line, one-sentence summary; a callable with parameters names them all, in order, under
``Args:``; one that returns a value has ``Returns:``; a record (a dataclass or named tuple)
names its fields, in order, under ``Attributes:``, unless each field is documented where it
is declared (``Params``, ``FlockState``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap

import pytest

import flock3d
import flock3d.experiments
import flock3d.io
import flock3d.metrics
from flock3d.core import state as state_module
from flock3d.core.fields import spec_of

#: The sections of a Google-style docstring this package uses.
SECTIONS = {"Args", "Returns", "Yields", "Raises", "Attributes", "Examples", "Note"}

#: Records whose fields are documented where each is declared: the fields' Specs (Params)
#: and the string under each field (FlockState).
DECLARED_FIELDS = {flock3d.Params, flock3d.FlockState}

#: Parameters and fields with a unit, and the unit their entry gives in brackets.
UNITS = {
    "positions": "[units]",
    "velocities": "[units/s]",
    "seconds": "[s]",
    "dt": "[s]",
    "distance": "[units]",
    "group_distance": "[units]",
    "r_max": "[units]",
}


def _is_record(cls: type) -> bool:
    return dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields"))


def _fields(cls: type) -> list[str]:
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return list(cls._fields)


def _members(cls: type) -> list[tuple[str, object]]:
    """The public methods and properties of ``cls``, its own and those it inherits from flock3d's
    classes (Flock's views of its state, say), each under ``cls``'s name."""
    if cls in DECLARED_FIELDS:
        return []  # their class docstring and their fields' declarations are checked
    found, seen = [], set()
    for owner in cls.__mro__:
        if not owner.__module__.startswith("flock3d"):
            continue
        for name, member in vars(owner).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(member, property | classmethod | staticmethod) or inspect.isfunction(member):
                found.append((f"{cls.__qualname__}.{name}", member))
    return found


def _api() -> list[tuple[str, object]]:
    """(name, object) of every function, class, method and property of the public API."""
    names = [(f"flock3d.{n}", getattr(flock3d, n)) for n in flock3d.__all__ if n != "io"]  # below
    for package in (flock3d.metrics, flock3d.experiments, flock3d.io):
        names += [(f"{package.__name__}.{n}", getattr(package, n)) for n in package.__all__]
    api = []
    for name, obj in names:
        if inspect.isclass(obj):
            api.append((name, obj))
            api += [(f"{obj.__module__}.{member}", m) for member, m in _members(obj)]
        elif callable(obj) and not inspect.ismodule(obj):
            api.append((name, obj))
    return api


API = _api()


def test_the_api_checked_is_the_whole_public_api():
    # Guards the collection itself: a change that emptied it would pass every check below.
    names = {name for name, _ in API}
    for expected in ("flock3d.Flock", "flock3d.flock.Flock.step", "flock3d.flock.Flock.positions",
                     "flock3d.load_scene", "flock3d.Params", "flock3d.show",
                     "flock3d.metrics.velocity_correlation", "flock3d.metrics.Correlation",
                     "flock3d.experiments.run_experiment", "flock3d.experiments.couzin_memory",
                     "flock3d.experiments.Result", "flock3d.scene.scene.Scene.save", "flock3d.io.Trajectory",
                     "flock3d.io.trajectory_writer.TrajectoryWriter.append"):  # fmt: skip
        assert expected in names
    assert len(API) > 80


def _function(obj):
    """The function behind a method, property, classmethod or staticmethod."""
    if isinstance(obj, property):
        return obj.fget
    if isinstance(obj, classmethod | staticmethod):
        return obj.__func__
    return obj


def _parameters(obj) -> list[str]:
    """Parameter names as an ``Args:`` section writes them (``*args``, ``**kwargs``)."""
    if inspect.isclass(obj):
        signature = inspect.signature(obj.__init__)
        skip = 1
    else:
        signature = inspect.signature(_function(obj))
        qualname = _function(obj).__qualname__
        method = "." in qualname and "<locals>" not in qualname and not isinstance(obj, staticmethod)
        skip = 1 if method else 0
    written = []
    for p in list(signature.parameters.values())[skip:]:
        star = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        written.append(star + p.name)
    return written


def _returns_a_value(function) -> bool:
    """Whether the function's own body (not a nested function's) returns something other than None."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    body = tree.body[0]

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                continue
            if isinstance(child, ast.Return) and child.value is not None:
                if not (isinstance(child.value, ast.Constant) and child.value.value is None):
                    return True
            if walk(child):
                return True
        return False

    return walk(body)


def _doc(obj) -> str:
    return inspect.cleandoc(_function(obj).__doc__ or "")


def _sections(doc: str) -> dict[str, list[str]]:
    """The docstring's sections by name, each the lines indented under its heading."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in doc.splitlines():
        if re.fullmatch(r"[A-Z][A-Za-z ]*:", line):
            current = line[:-1]
            sections[current] = []
        elif line and not line.startswith(" "):
            current = None
        elif current is not None and line.strip():
            sections[current].append(line)
    return sections


def _entries(lines: list[str]) -> dict[str, str]:
    """``name: text`` entries (4 spaces in) of an Args or Attributes section, with their continuations."""
    entries: dict[str, str] = {}
    name = None
    for line in lines:
        match = re.fullmatch(r" {4}(\*{0,2}\w+)(?: \([^)]*\))?: (.+)", line)
        if match:
            name = match[1]
            entries[name] = match[2]
        elif name is not None and line.startswith(" " * 8):
            entries[name] += " " + line.strip()
        else:
            name = None
            entries[f"<not an entry: {line.strip()!r}>"] = ""
    return entries


def _ids(items):
    return [name for name, _ in items]


@pytest.mark.parametrize(("name", "obj"), API, ids=_ids(API))
def test_each_docstring_opens_with_a_one_sentence_summary_line(name, obj):
    doc = _doc(obj)
    assert doc, f"{name} has no docstring"
    paragraph = doc.split("\n\n")[0].splitlines()
    summary = paragraph[0]
    assert len(paragraph) == 1, f"{name}: the summary runs over {len(paragraph)} lines"
    assert summary.endswith("."), f"{name}: the summary is not a sentence ending in a period"
    assert not re.search(r"[a-z0-9)`][.!?] +[A-Z]", summary), f"{name}: the summary holds two sentences"


@pytest.mark.parametrize(("name", "obj"), API, ids=_ids(API))
def test_each_docstring_uses_only_google_sections(name, obj):
    doc = _doc(obj)
    headings = re.findall(r"^([A-Z][A-Za-z ]*):{1,2}$", doc, re.M)
    assert set(headings) <= SECTIONS, f"{name}: sections {sorted(set(headings) - SECTIONS)}"
    assert not re.search(r"^[A-Z][A-Za-z ]*::$|^-{3,}$", doc, re.M), f"{name}: reST or numpydoc headings"


def _documents_arguments(obj) -> bool:
    """Callables whose parameters an ``Args:`` section names (records name fields; errors take a message)."""
    if isinstance(obj, property):
        return False
    if inspect.isclass(obj):
        return not (_is_record(obj) or obj in DECLARED_FIELDS or issubclass(obj, Warning | Exception))
    return True


ARGUMENTED = [(n, o) for n, o in API if _documents_arguments(o)]


@pytest.mark.parametrize(("name", "obj"), ARGUMENTED, ids=_ids(ARGUMENTED))
def test_args_name_every_parameter_in_order(name, obj):
    parameters = _parameters(obj)
    sections = _sections(_doc(obj))
    if not parameters:
        assert "Args" not in sections, f"{name} takes no arguments but has an Args section"
        return
    assert "Args" in sections, f"{name}({', '.join(parameters)}) has no Args section"
    entries = _entries(sections["Args"])
    assert list(entries) == parameters, f"{name}: Args names {list(entries)}, the signature {parameters}"
    for parameter, text in entries.items():
        assert text.strip(), f"{name}: {parameter} is not described"
        unit = UNITS.get(parameter)
        assert unit is None or unit in text, f"{name}: {parameter} does not give its unit {unit}"


FUNCTIONS = [(n, o) for n, o in ARGUMENTED if not inspect.isclass(o)]


@pytest.mark.parametrize(("name", "obj"), FUNCTIONS, ids=_ids(FUNCTIONS))
def test_a_function_that_returns_a_value_says_what_under_returns(name, obj):
    sections = _sections(_doc(obj))
    if _returns_a_value(_function(obj)):
        assert sections.get("Returns"), f"{name} returns a value but has no Returns section"
    else:
        assert "Returns" not in sections, f"{name} returns None but has a Returns section"


RECORDS = [(n, o) for n, o in API if inspect.isclass(o) and _is_record(o) and o not in DECLARED_FIELDS]


@pytest.mark.parametrize(("name", "obj"), RECORDS, ids=_ids(RECORDS))
def test_a_record_names_its_fields_in_order_under_attributes(name, obj):
    sections = _sections(_doc(obj))
    assert "Attributes" in sections, f"{name} has no Attributes section"
    entries = _entries(sections["Attributes"])
    assert list(entries) == _fields(obj), (
        f"{name}: Attributes names {list(entries)}, the fields {_fields(obj)}"
    )
    for field, text in entries.items():
        unit = UNITS.get(field)
        assert unit is None or unit in text, f"{name}: {field} does not give its unit {unit}"


def test_params_and_flock_state_document_each_field_where_it_is_declared():
    for field in dataclasses.fields(flock3d.Params):
        assert spec_of(field).doc.strip(), f"Params.{field.name} has no doc in its Spec"
    # FlockState's fields each have a string under their declaration.
    tree = ast.parse(inspect.getsource(state_module))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "FlockState")
    documented = set()
    for field, after in zip(cls.body, cls.body[1:], strict=False):
        if isinstance(field, ast.AnnAssign) and isinstance(after, ast.Expr):
            if isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
                documented.add(field.target.id)
    undocumented = [f.name for f in dataclasses.fields(flock3d.FlockState) if f.name not in documented]
    assert undocumented == []


def test_a_misstyled_docstring_fails_the_checks():
    # The checks themselves can fail: a numpydoc docstring, a missing and a misordered argument.
    def numpydoc(positions, dt):
        """Move boids.

        Parameters
        ----------
        positions : (N, 3)
        """
        return positions

    def misordered(positions, dt):
        """Move boids. Then stop.

        Args:
            dt: the step [s].
            positions: (N, 3) positions.
        """

    assert "Args" not in _sections(inspect.cleandoc(numpydoc.__doc__))
    with pytest.raises(AssertionError, match="numpydoc headings"):
        test_each_docstring_uses_only_google_sections("numpydoc", numpydoc)
    assert _returns_a_value(numpydoc) and not _returns_a_value(misordered)
    entries = _entries(_sections(inspect.cleandoc(misordered.__doc__))["Args"])
    assert list(entries) != _parameters(misordered) == ["positions", "dt"]
    assert UNITS["positions"] not in entries["positions"]
    with pytest.raises(AssertionError, match="two sentences"):
        test_each_docstring_opens_with_a_one_sentence_summary_line("misordered", misordered)
    with pytest.raises(AssertionError, match="Args names"):
        test_args_name_every_parameter_in_order("misordered", misordered)
