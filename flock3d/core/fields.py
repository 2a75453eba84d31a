"""How a parameter is declared: once, with everything the package derives from it.

Each field of :class:`~flock3d.core.params.Params` carries a :class:`Spec` (its dataclass
field's metadata): the scene key that sets it, what it means, its unit and symbol, and the
values it may take. From it come the range check that validation applies to the value,
the scene schema's entry, the line of ``flock3d scenes --template`` and the row of the
parameter tables in ``docs/model.md``. A term's fields are declared in its module
(:mod:`flock3d.core.terms`), the model's own in :mod:`flock3d.core.declarations`; checks that
relate several values (a minimum below a maximum) stay code: a term's in its module, the rest
in :mod:`flock3d.core.validation`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

__all__ = [
    "is_whole_number",
    "checked_count",
    "checked_number",
    "Kind",
    "Part",
    "Spec",
    "declare",
    "spec_of",
    "Problem",
    "is_real_number",
    "short_repr",
    "number_problem",
    "allowed_text",
    "MAX_MAGNITUDE",
    "MAX_DT",
]

#: The largest finite length, speed, weight or rate a parameter may take. Beyond it the
#: arithmetic of a step overflows (1e308 * anything is inf) long before a flock could use it.
MAX_MAGNITUDE = 1e9
#: The longest time step, seconds.
MAX_DT = 1e3

Kind = Literal[
    "number", "integer", "string", "boolean", "vector3", "matrix3", "points", "choice", "items", "table",
    "names", "color", "numbers", "scale", "motion",
]  # fmt: skip


@dataclass(frozen=True)
class Part:
    """A key inside a structured value (an attractor's ``weight``, a path's ``points``)."""

    name: str
    kind: Kind
    required: bool = False
    choices: tuple[str, ...] = ()
    """For ``choice``: the values it may take."""


@dataclass(frozen=True)
class Spec:
    """The declaration of one parameter.

    ``doc`` says what the value means in a few words (no range: that comes from the
    limits); ``allowed`` overrides the range's text where code, not the limits, checks it.
    For a number, ``low`` to ``high`` with open or closed ends is checked by
    :func:`number_problem` unless ``checked`` is False (its own check is then code).
    ``unset`` says what None means for a field that may be left unset, and ``example`` is
    the value the template shows for it, commented out.
    """

    key: str
    doc: str
    kind: Kind = "number"
    unit: str = ""
    symbol: str = ""
    low: float = 0.0
    high: float = MAX_MAGNITUDE
    low_open: bool = False
    high_open: bool = False
    allow_inf: bool = False
    checked: bool = True
    allowed: str = ""
    unset: str = ""
    example: Any = None
    choices: tuple[str, ...] = ()
    parts: tuple[Part, ...] = ()
    model: str = ""
    """The model it belongs to when only one uses it (``couzin``, ``vicsek``)."""
    label: str = ""
    slider: tuple[float, float] | None = None
    """For a term's weight the viewer's panel tunes live: its label there and the slider's range."""

    def allowed_text(self) -> str:
        """The values it may take, in words (the docs table's last column)."""
        if self.allowed:
            return self.allowed
        if self.kind == "number":
            text = allowed_text(self.low, self.high, self.low_open, self.high_open)
            return f"{text}, or inf" if self.allow_inf else text
        if self.kind == "choice":
            return ", ".join(self.choices)
        if self.kind == "boolean":
            return "true, false"
        return ""


def declare(default: Any, spec: Spec) -> Any:
    """A Params field with ``default`` and its declaration ``spec`` (in the field's metadata)."""
    return dataclasses.field(default=default, metadata={"spec": spec})


def spec_of(field: dataclasses.Field) -> Spec:
    """The declaration of a Params field."""
    return field.metadata["spec"]


class Problem(NamedTuple):
    """One invalid parameter: the field it concerns and what is wrong."""

    field: str
    message: str
    """Reads after the field's name, e.g. ``must be > 0 (got -1)``, or after an item's
    index, e.g. ``[1].weight must be >= 0 (got -1)``."""

    def __str__(self) -> str:
        return f"{self.field}{'' if self.message.startswith(('[', '.')) else ' '}{self.message}"


def is_whole_number(value: object) -> bool:
    """An integer of any integral type, booleans excepted (``True`` is no count)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def checked_count(value: object, name: str, least: int = 0, most: int | None = None) -> int:
    """``value`` as the count ``name``: TypeError for anything but a whole number (a float, a
    bool, a numeric string: never rounded or parsed), ValueError outside ``[least, most]``."""
    if not is_whole_number(value):
        raise TypeError(f"{name} must be a whole number (got {value!r})")
    if value < least or (most is not None and value > most):
        bound = f">= {least:,}" if most is None else f"from {least:,} to {most:,}"
        raise ValueError(f"{name} must be {bound} (got {value:,})")
    return int(value)


def checked_number(
    value: object, name: str, low: float, low_open: bool = False, allow_inf: bool = True
) -> float:
    """``value`` as the float ``name``: ValueError unless a number above ``low`` (or equal to it,
    unless ``low_open``), infinite only with ``allow_inf``, in the parameters' own words
    (:func:`number_problem`)."""
    problem = number_problem(value, low, math.inf, low_open, True, allow_inf)
    if problem:
        raise ValueError(f"{name} {problem}")
    return float(value)


def is_real_number(value: object) -> bool:
    """A real number that converts to a float (a 400-digit integer does not)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


def short_repr(value: object) -> str:
    """repr(value), shortened when huge (a 400-digit integer)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def allowed_text(low: float, high: float, low_open: bool, high_open: bool) -> str:
    """``> 0``, ``>= 0`` or ``in (0, 1]``: a range in words (a cap is stated when it is exceeded)."""
    if math.isinf(high) or high in (MAX_MAGNITUDE, MAX_DT):
        return f"> {low:g}" if low_open else f">= {low:g}"
    return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def number_problem(value: Any, low, high, low_open, high_open, allow_inf) -> str | None:
    """The problem with one number against a range, or None."""
    rule = allowed_text(low, high, low_open, high_open)
    if not is_real_number(value) or math.isnan(value):
        return f"must be a number {rule} (got {short_repr(value)})"
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if math.isinf(value) and not allow_inf:
        return f"must be finite and {rule} (got {short_repr(value)})"
    if too_low:
        return f"must be {rule} (got {short_repr(value)})"
    if too_high and not (allow_inf and math.isinf(value)):
        if high in (MAX_MAGNITUDE, MAX_DT):
            inf = " or inf" if allow_inf else ""
            return f"must be at most {high:g}{inf} (got {short_repr(value)})"
        return f"must be {rule} (got {short_repr(value)})"
    return None


def spec_problem(spec: Spec, value: Any) -> str | None:
    """What the declaration alone says is wrong with ``value`` (a number out of its range), or None."""
    if spec.kind == "number" and spec.checked:
        return number_problem(value, spec.low, spec.high, spec.low_open, spec.high_open, spec.allow_inf)
    return None


# -- values that hold several numbers ---------------------------------------------------


def is_sequence(value: object) -> bool:
    """A list, tuple or array (not a string, bytes or mapping)."""
    return hasattr(value, "__len__") and not isinstance(value, (str, bytes, dict))


def vector(value: object) -> tuple[float, float, float] | None:
    """``value`` as 3 plain floats, or None when it is not 3 numbers."""
    if is_sequence(value) and len(value) == 3 and all(is_real_number(v) for v in value):
        return tuple(float(v) for v in value)
    return None


#: What :func:`finite_vector` takes, in a problem's words.
FINITE_VECTOR = f"3 finite numbers of at most {MAX_MAGNITUDE:g}"


def finite_vector(value: Any) -> bool:
    """Three finite numbers, each at most MAX_MAGNITUDE in size (:data:`FINITE_VECTOR`)."""
    return (
        is_sequence(value)
        and len(value) == 3
        and all(is_real_number(v) and abs(v) <= MAX_MAGNITUDE for v in value)
    )


def record(value: Any, cls: type, normalise) -> Any:
    """``value`` as a ``cls`` record (a NamedTuple) when it is a dict or a plain tuple holding the
    fields that ``cls`` requires (and no others), with ``normalise`` applied; anything else is
    returned as it is, for the validation to report."""
    fields = cls._fields
    required = fields[: len(fields) - len(cls._field_defaults)]
    if isinstance(value, dict) and set(required) <= set(value) <= set(fields):
        value = cls(**value)
    if isinstance(value, tuple) and not isinstance(value, cls) and len(required) <= len(value) <= len(fields):
        value = cls(*value)
    return normalise(value) if isinstance(value, cls) else value


def item_problems(name: str, items: Any, check) -> list[Problem]:
    """The problems of each item of a list field (``check(item)`` -> messages after its index)."""
    if not is_sequence(items):
        return [Problem(name, f"must be a list (got {items!r})")]
    return [Problem(name, f"[{i}]{p}") for i, item in enumerate(items) for p in check(item)]
