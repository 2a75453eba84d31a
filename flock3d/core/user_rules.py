"""The user's rules and forces as the core sees them: checked records of their functions.

:func:`flock3d.pair_rule` and :func:`flock3d.force` make them; both engines run them (the fast
step compiles them into its loop, the reference engine calls them with read-only copies).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from flock3d.core.fields import MAX_MAGNITUDE, is_real_number, number_problem, short_repr

__all__ = ["Force", "PairRule", "describe", "read_only_copy"]


@dataclass(frozen=True, eq=False)
class Force:
    """A per-boid force: ``fn(position, velocity, time) -> acceleration`` (each (3,) float64).

    Made by :func:`flock3d.force`. ``weight`` multiplies what ``fn`` returns. Checked when
    made and by :meth:`replace`: a bad field raises TypeError or ValueError naming it.
    """

    fn: Callable
    name: str
    weight: float = 1.0

    def __post_init__(self) -> None:
        _check_user_function(self, "force")
        _set(self, "weight", _checked_weight(self))

    def replace(self, **changes: Any) -> Force:
        return replace(self, **changes)


@dataclass(frozen=True, eq=False)
class PairRule:
    """A neighbour rule: ``fn(p_i, v_i, p_j, v_j) -> contribution`` (each (3,) float64),
    summed over the neighbours j that boid i sees within ``radius`` and the cone ``fov``
    (None: the view's), averaged when ``average``, times ``weight``: an acceleration.

    Made by :func:`flock3d.pair_rule`. In a periodic arena p_j is the nearest image.
    Checked when made and by :meth:`replace`: a bad field raises TypeError or ValueError
    naming it.
    """

    fn: Callable
    name: str
    radius: float | None = None
    fov: float | None = None
    average: bool = True
    weight: float = 1.0

    def __post_init__(self) -> None:
        _check_user_function(self, "pair_rule")
        for field_name, low, high, unset in (
            ("radius", 0.0, MAX_MAGNITUDE, "the view distance"),
            ("fov", 0.0, 360.0, "the view's field of view, in degrees"),
        ):
            value = getattr(self, field_name)
            if value is None:
                continue
            problem = number_problem(value, low, high, True, False, False)
            if problem:
                error = ValueError if is_real_number(value) else TypeError
                raise error(f"pair_rule {describe(self.fn)}: {field_name} {problem}; or None for {unset}")
            _set(self, field_name, float(value))
        if not isinstance(self.average, (bool, np.bool_)):
            got = short_repr(self.average)
            raise TypeError(f"pair_rule {describe(self.fn)}: average must be True or False (got {got})")
        _set(self, "average", bool(self.average))
        _set(self, "weight", _checked_weight(self))

    def replace(self, **changes: Any) -> PairRule:
        return replace(self, **changes)


#: What each kind of user function takes, as its messages say.
_SIGNATURES = {
    "force": (3, "(position, velocity, time) -> acceleration"),
    "pair_rule": (4, "(p_i, v_i, p_j, v_j) -> contribution"),
}


def describe(fn: Callable) -> str:
    """``'name' (file.py:line)``: how messages name a user function."""
    fn = getattr(fn, "py_func", fn)
    name = getattr(fn, "__name__", None) or short_repr(fn)
    try:
        lines, line = inspect.getsourcelines(fn)
        where = f"{Path(inspect.getsourcefile(fn)).name}:{line}"
    except (OSError, TypeError):
        return repr(name)
    if fn.__code__.co_filename.startswith("<") and f"def {name}" not in lines[0]:
        return repr(name)  # made by exec: under Python 3.13 "<string>" may be a -c command's text
    return f"{name!r} ({where})"


def read_only_copy(array: Any) -> np.ndarray:
    """A read-only float64 copy: what a user function is given when called in plain Python
    (the reference engine, the test call), as the fast step gives it read-only views."""
    out = np.array(array, dtype=np.float64)
    out.flags.writeable = False
    return out


def _set(item: Force | PairRule, name: str, value: Any) -> None:
    object.__setattr__(item, name, value)  # the normalised value of a frozen field


def _check_user_function(item: Force | PairRule, kind: str) -> None:
    """``fn`` is a Python function numba can call with the kind's arguments; ``name`` a string.

    numba compiles the function and the step calls it with exactly those arguments, so a
    signature that takes more (without defaults), ``*args``, ``**kwargs`` or keyword-only
    arguments is refused here rather than as a compile error of the whole step.
    """
    count, signature = _SIGNATURES[kind]
    fn = getattr(item.fn, "py_func", item.fn)  # a numba dispatcher: its Python function
    if not inspect.isfunction(fn):
        raise TypeError(f"{kind} must be made from a Python function {signature} (got {short_repr(item.fn)})")
    parameters = list(inspect.signature(fn).parameters.values())
    odd = next((p for p in parameters if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)), None)
    if odd is not None:
        takes = {odd.VAR_POSITIONAL: f"*{odd.name}", odd.VAR_KEYWORD: f"**{odd.name}"}.get(
            odd.kind, f"the keyword-only argument {odd.name!r}"
        )
    elif len(parameters) < count or any(p.default is p.empty for p in parameters[count:]):
        takes = f"{len(parameters)} argument{'s' if len(parameters) != 1 else ''}"
    else:
        takes = None
    if takes is not None:
        raise TypeError(
            f"{kind} {describe(fn)} takes {takes}; it must take {count}: {signature} "
            "(any after those with a default)"
        )
    if not isinstance(item.name, str) or not item.name:
        raise (ValueError if isinstance(item.name, str) else TypeError)(
            f"{kind} {describe(fn)}: name must be a non-empty string (got {short_repr(item.name)})"
        )


def _checked_weight(item: Force | PairRule) -> float:
    weight, kind = item.weight, "force" if isinstance(item, Force) else "pair_rule"
    if not is_real_number(weight):
        raise TypeError(f"{kind} {describe(item.fn)}: weight must be a number (got {short_repr(weight)})")
    if not abs(weight) <= MAX_MAGNITUDE:
        raise ValueError(
            f"{kind} {describe(item.fn)}: weight must be finite and at most {MAX_MAGNITUDE:g} in size "
            f"(got {short_repr(weight)})"
        )
    return float(weight)
