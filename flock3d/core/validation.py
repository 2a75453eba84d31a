"""Every check of a set of parameter values: each value against its declaration, the values that
must agree, each species' values and interactions, and the flock as a whole (a periodic arena's
grid, the stages ``rule_order`` names).

:func:`params_problems` is the one check: ``Params`` applies it when made, and the scene loader
applies it to a scene's values, so that a scene file and a Python caller see the same rules; the
numerical core then trusts its parameters. A term's own checks are in its module
(:meth:`flock3d.core.terms.Term.problems`), a model's in its own (:mod:`flock3d.core.models`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flock3d.core.declarations import Values, either, field_values, params_fields
from flock3d.core.fields import (
    FINITE_VECTOR,
    MAX_MAGNITUDE,
    Problem,
    Spec,
    finite_vector,
    is_real_number,
    is_sequence,
    is_whole_number,
    number_problem,
    short_repr,
    spec_of,
)
from flock3d.core.models import MODELS as MODEL_REGISTRY
from flock3d.core.models import MODELS_BY_NAME, model_of
from flock3d.core.species import SPECIES_FIELDS, SPECIES_RULES, Species, counted_by_species
from flock3d.core.stages import TERMS, rule_order_problems

if TYPE_CHECKING:
    from flock3d.core.params import Params

__all__ = ["params_problems", "MAX_BOIDS", "MAX_SPECIES", "MAX_PREDATORS", "MAX_CELLS_PER_SIDE"]

#: Upper bounds that keep a typo from asking for terabytes.
MAX_BOIDS = 100_000_000
#: Species a flock may have: the compiled step unrolls the interaction matrix's entries (which
#: keeps its pair loop vectorised), so its compile time and memory grow with their number; this
#: many keep a first compile within a minute on two cores.
MAX_SPECIES = 16
MAX_PREDATORS = 10_000
#: The most cells along a side of a periodic arena's grid, whose cells are at least one reach
#: wide (the longest view distance; r_a in the Couzin model). The step counts the cells in
#: int64 (at most 1e18 in 3D) and coarsens them to its cap of cells per boid a slice a pass,
#: milliseconds a step at this bound. Real scenes have tens to thousands of cells a side.
MAX_CELLS_PER_SIDE = 1_000_000


def _declared_problem(spec: Spec, value: Any) -> str | None:
    """What a field's declaration alone says is wrong with ``value``, or None. Fields whose check
    needs more than the declaration (``checked=False``) are judged by code below."""
    if spec.kind == "choice" and value not in spec.choices:
        return f"must be one of {', '.join(map(repr, spec.choices))} (got {value!r})"
    if not spec.checked:
        return None
    if spec.kind == "number":
        return number_problem(value, spec.low, spec.high, spec.low_open, spec.high_open, spec.allow_inf)
    if spec.kind == "boolean" and not isinstance(value, bool):
        return f"must be true or false (got {value!r})"
    if spec.kind == "vector3" and not finite_vector(value):
        return f"must be {FINITE_VECTOR} (got {value!r})"
    if spec.kind == "matrix3" and not (
        is_sequence(value) and len(value) == 3 and all(map(finite_vector, value))
    ):
        return f"must be a 3 x 3 matrix of finite numbers (got {value!r})"
    return None


def params_problems(
    values: Params | Mapping[str, Any], rule_names: Sequence[str] | None = None
) -> list[Problem]:
    """Every problem with a set of parameter values, in field order.

    Args:
        values: a ``Params`` or a mapping of field names to values (missing
            fields take their defaults).
        rule_names: the names of your rules and forces the flock will run with, which
            ``rule_order`` may name too. None when they are not known (a ``Params`` alone):
            then a name that is no built-in stage may be one of them, and passes.

    Returns:
        An empty list when the values are valid.
    """
    values = field_values(values)
    problems = _value_problems(values)
    problems += _whole_flock_problems(values, {p.field for p in problems}, rule_names)
    order = [f.name for f in params_fields()]
    problems.sort(key=lambda p: order.index(p.field))
    return problems


def _value_problems(values: dict[str, Any]) -> list[Problem]:
    """The problems of each value, and of values that must agree (a species' own values are
    checked by the same, in place of the flock's)."""
    problems: list[Problem] = []
    ok: dict[str, bool] = {}
    for field in params_fields():
        problem = _declared_problem(spec_of(field), values[field.name])
        if problem:
            problems.append(Problem(field.name, problem))
        else:
            ok[field.name] = True
    reported = {p.field for p in problems}
    for term in TERMS:
        problems += term.problems(values, reported)

    if ok.get("min_speed") and ok.get("max_speed") and values["min_speed"] > values["max_speed"]:
        problems.append(
            Problem(
                "min_speed", f"must be <= max_speed (got {values['min_speed']!r} > {values['max_speed']!r})"
            )
        )

    for name, top in (("count", MAX_BOIDS), ("predator_count", MAX_PREDATORS)):
        count = values[name]
        if name == "count" and counted_by_species(values["species"]):
            continue  # the species' total, checked with them
        if not is_whole_number(count) or not 0 <= count <= top:
            problems.append(
                Problem(name, f"must be a whole number from 0 to {top:,} (got {short_repr(count)})")
            )

    init = values["init_radius"]
    if init is not None and (not is_real_number(init) or not 0 < init <= MAX_MAGNITUDE):
        problems.append(
            Problem(
                "init_radius",
                f"must be > 0 and at most {MAX_MAGNITUDE:g}, or unset for 0.5 * arena_radius "
                f"(got {short_repr(init)})",
            )
        )

    model = MODELS_BY_NAME.get(values["model"])
    if model is not None and values["arena_shape"] not in model.arenas:
        shapes = [repr(shape) + (" (open space)" if shape == "none" else "") for shape in model.arenas]
        problems.append(
            Problem(
                "arena_shape",
                f"must be {either(shapes)} for the {model.name} model (got {values['arena_shape']!r})",
            )
        )
    for other in MODEL_REGISTRY:
        problems += other.problems(values, ok) if other is model else other.foreign_problems(values)
    problems += _neighbour_problems(values)
    if values["dimensions"] not in (2, 3) or isinstance(values["dimensions"], bool):
        problems.append(Problem("dimensions", f"must be 2 or 3 (got {values['dimensions']!r})"))
    problems += _mode_problems(values)
    if (
        values["arena_shape"] == "periodic"
        and ok.get("arena_radius")
        and not any(p.field == "arena_size" for p in problems)
    ):
        problems += _periodic_reach_problems(values, ok)

    if model is not None and model.update_kind != "terms":
        problems += _model_world_problems(values, {p.field for p in problems})
    elif is_sequence(values["species"]) and values["species"]:
        problems += _species_problems(values)
    return problems


def _mode_problems(values: dict[str, Any]) -> list[Problem]:
    """The arena's size, and how a step is carried out: known choices that work together."""
    problems: list[Problem] = []
    size = values["arena_size"]
    if size is not None:
        if not (finite_vector(size) and all(v > 0 for v in size)):
            problems.append(
                Problem("arena_size", f"must be unset or 3 numbers in (0, {MAX_MAGNITUDE:g}] (got {size!r})")
            )
        elif values["arena_shape"] not in ("box", "periodic", "wrap"):
            problems.append(
                Problem(
                    "arena_size", f"applies to box, periodic and wrap arenas (got {values['arena_shape']!r})"
                )
            )
    order = values["rule_order"]
    if not (is_sequence(order) and all(isinstance(name, str) and name.isidentifier() for name in order)):
        problems.append(Problem("rule_order", f"must be a list of stage names (got {short_repr(order)})"))
    elif len(set(order)) != len(order):
        problems.append(Problem("rule_order", f"names a stage twice (got {list(order)!r})"))
    elif order and values["combine"] != "chain":
        problems.append(Problem("rule_order", 'orders a chain: it needs combine = "chain"'))
    if values["update"] == "per_rule" and values["combine"] != "chain":
        problems.append(
            Problem("update", '"per_rule" applies the rules one after another: it needs combine = "chain"')
        )
    if model_of(Values(values)).update_kind != "terms":
        for name, default in (("update", "synchronous"), ("combine", "sum"), ("turn_limit", "heading")):
            if values[name] != default:
                problems.append(
                    Problem(
                        name, f"must be {default!r} for the {values['model']} model (got {values[name]!r})"
                    )
                )
    return problems


def _neighbour_problems(values: dict[str, Any]) -> list[Problem]:
    """Topological neighbours and the adaptive radius: a whole k, and what the radius needs."""
    problems = []
    k = values["neighbours"]
    if k is not None and not (is_whole_number(k) and 1 <= k <= MAX_BOIDS):
        problems.append(
            Problem(
                "neighbours", f"must be unset or a whole number from 1 to {MAX_BOIDS:,} (got {short_repr(k)})"
            )
        )
    adaptive = values["adaptive"]
    if not isinstance(adaptive, bool):
        problems.append(Problem("adaptive", f"must be true or false (got {adaptive!r})"))
    elif adaptive:
        if k is None:
            problems.append(Problem("adaptive", "needs neighbours = k: the radius holds the k nearest"))
        rv, model = values["view_distance"], model_of(Values(values))
        if model.adaptive and is_real_number(rv) and math.isinf(rv):
            problems.append(Problem("adaptive", "needs a finite view_distance: the largest radius"))
        if not model.adaptive:
            adapting = [m.name for m in MODEL_REGISTRY if m.adaptive]
            problems.append(
                Problem(
                    "adaptive",
                    f"applies to the {either(adapting).replace(' or ', ' and ')} models (got model "
                    f"{values['model']!r})",
                )
            )
        if values["update"] == "per_rule":
            problems.append(Problem("adaptive", 'needs update = "synchronous" or "sequential"'))
    return problems


def _species_problems(values: dict[str, Any]) -> list[Problem]:
    """Each species: a unique name, a count, its own values valid as the flock's would be, and an
    interaction matrix naming known species (a rule acts only on species it sees); and no more
    boids in all than a flock may have."""
    species = values["species"]
    if len(species) > MAX_SPECIES:
        return [
            Problem(
                "species",
                f"may be at most {MAX_SPECIES} (got {len(species):,}): the compiled step holds each "
                "species' interactions, and its compile time and memory grow with their number",
            )
        ]
    problems: list[Problem] = []
    if counted_by_species(species) and (total := sum(s.count for s in species)) > MAX_BOIDS:
        problems.append(
            Problem("species", f"hold {total:,} boids in all; a flock may have at most {MAX_BOIDS:,}")
        )
    names = [s.name for s in species if isinstance(s, Species)]
    for i, s in enumerate(species):
        where = f"[{i}]"
        if not isinstance(s, Species):
            problems.append(Problem("species", f"{where} must have a name and a count (got {short_repr(s)})"))
            continue
        if not (isinstance(s.name, str) and s.name.isidentifier()):
            problems.append(
                Problem("species", f"{where}.name must be a name of letters, digits and _ (got {s.name!r})")
            )
        elif names.count(s.name) > 1:
            problems.append(Problem("species", f"{where}.name {s.name!r} is used by another species"))
        if not (is_whole_number(s.count) and 0 <= s.count <= MAX_BOIDS):
            problems.append(
                Problem(
                    "species",
                    f"{where}.count must be a whole number from 0 to {MAX_BOIDS:,} "
                    f"(got {short_repr(s.count)})",
                )
            )
        own = {name: getattr(s, name) for name in SPECIES_FIELDS if getattr(s, name) is not None}
        if own:  # what the species' own values break that the flock's did not
            base = set(_value_problems({**values, "species": (), "count": 0}))
            for p in _value_problems({**values, **own, "species": (), "count": 0}):
                if p not in base:
                    problems.append(Problem("species", f"{where}.{p.field} {p.message}"))
        for rule in SPECIES_RULES:
            listed = getattr(s, rule)
            if listed is None:
                continue
            if not (is_sequence(listed) and all(isinstance(n, str) for n in listed)):
                problems.append(
                    Problem(
                        "species",
                        f"{where}.{rule} must be a list of species names (got {short_repr(listed)})",
                    )
                )
                continue
            for name in listed:
                if name not in names:
                    problems.append(
                        Problem("species", f"{where}.{rule} names {name!r}, which is no species here")
                    )
                elif rule != "sees" and s.sees is not None and name not in s.sees:
                    problems.append(
                        Problem("species", f"{where}.{rule} names {name!r}, which it does not see")
                    )
    return problems


#: The fields that size a periodic arena's grid, and those that decide which stages a flock has:
#: while one of them is wrong, what they decide together is not judged.
_GRID_FIELDS = frozenset({
    "arena_shape", "arena_radius", "arena_size", "dimensions", "model", "view_distance", "species",
}).union(*(model.reach_fields for model in MODEL_REGISTRY))  # fmt: skip
_STAGE_FIELDS = frozenset({"model", "combine", "rule_order", "arena_shape"}).union(
    *(term.switches if term.decided_by is None else term.decided_by for term in TERMS)
)


def _whole_flock_problems(
    values: dict[str, Any], reported: set[str], rule_names: Sequence[str] | None
) -> list[Problem]:
    """What the flock as a whole breaks beyond its values one by one (and beyond a species' own
    values): the cells of a periodic arena's grid, sized by the longest sight of any species, and
    the stages ``rule_order`` names."""
    problems = []
    if values["arena_shape"] == "periodic" and not reported & _GRID_FIELDS:
        problems += _grid_problems(values)
    if values["rule_order"] and not reported & _STAGE_FIELDS:
        problems += rule_order_problems(values, rule_names)
    return problems


def _grid_problems(values: dict[str, Any]) -> list[Problem]:
    """A periodic arena must be at most MAX_CELLS_PER_SIDE reaches wide (valid values)."""
    sides = values["arena_size"] or (2.0 * values["arena_radius"],) * 3
    side = max(sides[: 2 if values["dimensions"] == 2 else 3])
    least = side / MAX_CELLS_PER_SIDE
    where = (
        f"in a periodic arena whose longest side is {side:g}: its grid's cells are {{}} wide, "
        f"at most {MAX_CELLS_PER_SIDE:,} along a side"
    )
    own = model_of(Values(values)).grid_problem(values, least, where)
    if own is not None:
        return own
    own = [s.view_distance for s in values["species"] if s.view_distance is not None]
    reach = max([values["view_distance"], *own])
    if reach >= least:
        return []
    got = f"the longest of the species' is {reach:g}" if own else f"got {reach:g}"
    return [
        Problem(
            "view_distance",
            f"must be at least {least:g} {where.format('a view distance')} ({got}); raise it "
            "or make the arena smaller",
        )
    ]


def _periodic_reach_problems(values: dict[str, Any], ok: dict[str, bool]) -> list[Problem]:
    """A periodic arena must be wider than the longest sight, so that the nearest image is the one seen."""
    radius = values["arena_radius"]
    why = f"arena_radius {radius!r} in a periodic arena, so that the nearest image is the one seen"
    if values["arena_size"] is not None:
        axes = 2 if values["dimensions"] == 2 else 3
        radius = 0.5 * min(values["arena_size"][:axes])
        why = f"half the arena's shortest side ({radius:g}), so that the nearest image is the one seen"
    own = model_of(Values(values)).periodic_problem(values, ok, radius, why)
    if own is not None:
        return own
    if ok.get("view_distance") and values["view_distance"] >= radius:
        return [Problem("view_distance", f"must be < {why} (got {values['view_distance']!r})")]
    return []


def _model_world_problems(values: dict[str, Any], reported: set[str]) -> list[Problem]:
    """The models other than boids have none of the boids model's world features (the fields that
    switch a term on) or species: say so, not ignore them."""
    model = values["model"]
    problems = []
    if is_sequence(values["species"]) and values["species"]:
        problems.append(Problem("species", f"belong to the boids model; the {model} model has none"))
    defaults = {f.name: f.default for f in params_fields()}
    for name in (name for term in TERMS for name in term.switches):
        if name in reported:
            continue
        value, empty = values[name], defaults[name]
        if is_sequence(value) and is_sequence(empty):
            is_empty = _flatten(value) == _flatten(empty)
        else:
            is_empty = value == empty
        if not is_empty:
            problems.append(
                Problem(
                    name,
                    f"is a feature of the boids model; the {model} model has none (got {short_repr(value)})",
                )
            )
    return problems


def _flatten(value: Any) -> list:
    return [x for item in value for x in (_flatten(item) if is_sequence(item) else [item])]
