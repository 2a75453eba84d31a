"""The stages of a boids flock's step: the built-in terms in the order they act, which of them a
flock has, and the order its stages run in (``rule_order``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flock3d.core.declarations import as_attributes, field_values
from flock3d.core.fields import Problem
from flock3d.core.terms import PairTerm
from flock3d.core.terms import alignment as alignment_term
from flock3d.core.terms import attractors as attractors_term
from flock3d.core.terms import cohesion as cohesion_term
from flock3d.core.terms import confinement as confinement_term
from flock3d.core.terms import containment as containment_term
from flock3d.core.terms import escape as escape_term
from flock3d.core.terms import flee as flee_term
from flock3d.core.terms import flight as flight_term
from flock3d.core.terms import objects as objects_term
from flock3d.core.terms import obstacles as obstacles_term
from flock3d.core.terms import path as path_term
from flock3d.core.terms import perching as perching_term
from flock3d.core.terms import separation as separation_term
from flock3d.core.terms import speed as speed_term
from flock3d.core.terms import wander as wander_term
from flock3d.core.terms import wind as wind_term

if TYPE_CHECKING:
    from flock3d.core.params import Params

__all__ = ["TERMS", "STAGES", "TERMS_BY_NAME", "used_stages", "stage_names", "rule_order_problems"]

#: The built-in terms of the boids model, in the order they act: summed in this order, or
#: chained in it unless ``rule_order`` says otherwise (your pair rules follow the pair terms,
#: your forces the other terms, before ``speed``). The one list of them: the fast step, the
#: reference engine, validation and the scene schema all read it. A new term is its module,
#: its fields' lines in :class:`~flock3d.core.params.Params` and its place here.
TERMS = (
    separation_term.TERM,
    alignment_term.TERM,
    cohesion_term.TERM,
    confinement_term.TERM,
    containment_term.TERM,
    attractors_term.TERM,
    path_term.TERM,
    obstacles_term.TERM,
    flee_term.TERM,
    escape_term.TERM,
    wind_term.TERM,
    wander_term.TERM,
    flight_term.TERM,
    perching_term.TERM,
    objects_term.TERM,
    speed_term.TERM,
)
STAGES = tuple(term.name for term in TERMS)
"""The built-in stages of a chained update, in their default order."""
TERMS_BY_NAME = {term.name: term for term in TERMS}


def used_stages(params: Params | Mapping[str, Any]) -> list[str]:
    """The built-in stages (:data:`STAGES`) a boids flock with these parameters has, in their
    default order: the one place that says which terms a flock has, for the assembly of its step,
    the reference engine and the check of ``rule_order``.

    Args:
        params: a ``Params``, or a mapping of valid field values (missing ones take their defaults).
    """
    params = as_attributes(params)
    return [term.name for term in TERMS if term.present(params)]


def stage_names(params: Params, rule_names: Sequence[str] = (), force_names: Sequence[str] = ()) -> list[str]:
    """The stages a flock runs, in the order they act: ``rule_order`` first, then the rest in
    the registry's order, your pair rules (``rule0``...) after the pair terms and your forces
    (``force0``...) after the other terms, before the speed limit.

    Raises:
        ValueError: ``rule_order`` names a stage the flock does not have.
    """
    used = [TERMS_BY_NAME[name] for name in used_stages(params)]
    present = [t.name for t in used if isinstance(t, PairTerm)] + [f"rule{k}" for k in range(len(rule_names))]
    present += [t.name for t in used if not isinstance(t, PairTerm) and not t.clamps]
    present += [f"force{k}" for k in range(len(force_names))] + [t.name for t in used if t.clamps]
    names = {name: f"rule{k}" for k, name in enumerate(rule_names)}
    names.update({name: f"force{k}" for k, name in enumerate(force_names)})
    problems = rule_order_problems(params, list(names))
    if problems:
        raise ValueError(str(problems[0]))
    ordered = [names.get(name, name) for name in params.rule_order]
    return ordered + [s for s in present if s not in ordered]


def rule_order_problems(
    params: Params | Mapping[str, Any], rule_names: Sequence[str] | None = None
) -> list[Problem]:
    """The names in ``rule_order`` that name no stage of the flock, or two: a built-in stage and
    one of your rules or forces of the same name.

    Args:
        params: a ``Params``, or a mapping of field values valid but for ``rule_order``'s names.
        rule_names: the names of your rules and forces the flock runs with; None when they are
            not known yet: then a name that is no built-in stage may be one of them, and passes.
    """
    v = field_values(params)
    used = used_stages(v)
    yours = list(rule_names or ())
    stages = ", ".join(repr(name) for name in used + yours)
    problems = []
    for name in v["rule_order"]:
        if name in yours and name in STAGES:  # which of the two would the chain order?
            why = "which is both a built-in stage and one of your rules: rename yours to order it"
        elif name in yours or name in used:
            continue
        elif name in STAGES:
            why = f"which this flock does not use: {TERMS_BY_NAME[name].needs} (its stages: {stages})"
        elif yours:
            why = f"which is neither a stage of this flock nor one of your rules (its stages: {stages})"
        elif rule_names is not None:
            why = f"which is no stage of this flock, and no rules of yours are given (its stages: {stages})"
        else:
            continue
        problems.append(Problem("rule_order", f"names {name!r}, {why}"))
    return problems
