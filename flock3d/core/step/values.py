"""The values a layout's step reads: where each lies in ``pv``, the flat array of numbers a step
is called with, and the per-boid state that rides after them.

The generator (:mod:`flock3d.core.step.generate`) learns which values a step reads as it writes
it; the stepper (:mod:`flock3d.core.assemble`) packs them in that order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from flock3d.core.models import MODELS_BY_NAME
from flock3d.core.params import TERMS
from flock3d.core.terms import PairTerm, Term

__all__ = [
    "WORLD_TERMS", "CALLS_AT", "SPECIES_VALUES", "MATRICES", "riders", "value_slots", "offsets",
    "predators_keepers", "predators_shield", "NO_SHIELD",
]  # fmt: skip

#: The terms with world data, in the registry's order: the k-th holds entries ``world_at[k] ..
#: world_at[k + 1]`` of the packed, flat world array (none when the flock lacks it).
WORLD_TERMS: tuple[Term, ...] = tuple(term for term in TERMS if term.world_width)
#: Where in ``world_at`` the addresses of the functions a step calls at their addresses start
#: (the generated module's ``CALLED`` names them, in order): after the world terms' offsets.
CALLS_AT = len(WORLD_TERMS) + 1

#: Values each species has its own of (one slot per species in pv); the rest are the flock's.
SPECIES_VALUES = frozenset(
    {"view2", "cone", "s_min", "s_max", "max_angle", "cos_max", "cos_half", "sin_half"}
).union(*(term.species_values for term in TERMS))
#: The interaction matrix of the species, one (S * S,) array per rule (> 0: acts): sees, and the
#: matrix of each pair term.
MATRICES = ("sees_m", *(term.matrix for term in TERMS if isinstance(term, PairTerm)))


def predators_keepers(layout: Any) -> list[tuple[int, Any]]:
    """The world terms of ``layout`` whose constraint keeps the predators out of the world after
    their move, as it keeps the boids (:attr:`~flock3d.core.terms.Term.keeps_predators`), each
    with its index in :data:`WORLD_TERMS` (its record in ``world`` runs from ``world_at[k]`` to
    ``world_at[k + 1]``)."""
    return [
        (k, term)
        for k, term in enumerate(WORLD_TERMS)
        if term.keeps_predators is not None and term.name in layout.stages
    ]


#: The shield of a world the predators fly through (:func:`predators_shield`).
NO_SHIELD = np.zeros(3, dtype=np.int64)


def predators_shield(layout: Any, world_at: np.ndarray) -> np.ndarray:
    """What the synchronous driver's hunt keeps the predators out of the world with
    (:func:`~flock3d.core.kernel.predators.kept_out`): the start and end of the record of the
    term that holds them (:func:`predators_keepers`: the objects, the one such term) in
    ``world``, and its compiled constraint's address. Nothing holds them (start == end) where the
    layout lacks such a term."""
    keepers = predators_keepers(layout)
    if not keepers:
        return NO_SHIELD
    (k, term), *others = keepers
    if others:
        raise NotImplementedError("the driver keeps the predators out of one term's world")
    return np.array([world_at[k], world_at[k + 1], term.keeps_predators.address()], dtype=np.int64)


def riders(layout: Any) -> list[tuple[str, int]]:
    """The per-boid state arrays (FlockState's) that ride after the values in pv, in order, with
    how many numbers each boid has in it: each present term's that
    :attr:`~flock3d.core.terms.Term.carries` one, the model's (:attr:`~flock3d.core.models.Model.carries`:
    an inertial spin model's spins), the adaptive radii."""
    carried = [(c.name, c.width) for term in TERMS if term.name in layout.stages for c in term.carries]
    carried += [(c.name, c.width) for c in MODELS_BY_NAME[layout.model].carries]
    return carried + ([("radii", 1)] if layout.neighbours == "adaptive" else [])


def value_slots(layout: Any, name: str) -> int:
    """How many numbers value ``name`` takes in pv: one, one per species, or an array's length."""
    if name == "ends":
        return max(layout.species - 1, 0)
    if name in MATRICES:
        return layout.species * layout.species
    return layout.species if layout.species and name in SPECIES_VALUES else 1


def offsets(layout: Any, names: Sequence[str]) -> dict[str, int]:
    """Where each value starts in pv."""
    out, at = {}, 0
    for name in names:
        out[name] = at
        at += value_slots(layout, name)
    return out
