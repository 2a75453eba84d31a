"""The species of a mixed flock: their records, and what a flock's parameters make of them.

A species is a record (:class:`Species`) in ``Params.species``: its boids, the parameters it sets
for itself (:data:`SPECIES_FIELDS`) and whom it interacts with (:data:`SPECIES_RULES`). Their
checks are part of the parameters' (:mod:`flock3d.core.validation`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any, NamedTuple

from flock3d.core.fields import is_sequence, is_whole_number, record

if TYPE_CHECKING:
    from flock3d.core.params import Params

__all__ = [
    "Species",
    "SPECIES_FIELDS",
    "SPECIES_RULES",
    "normalise",
    "counted_by_species",
    "species_params",
    "interaction_matrix",
]

SPECIES_FIELDS = (
    "separation_distance", "separation", "alignment", "cohesion", "view_distance", "fov",
    "min_speed", "max_speed", "max_turn_rate",
)  # fmt: skip
"""The parameters a species may set for itself (the flock's values otherwise)."""
SPECIES_RULES = ("sees", "separates", "aligns", "coheres")
"""The interaction matrix: for each species, the species it sees, and among them those it
separates from, aligns with and coheres with."""


class Species(NamedTuple):
    """One species of a mixed flock: its boids, its own parameters and whom it interacts with.

    The boids of a flock are numbered species after species, in the order of
    ``Params.species``. A parameter left None takes the flock's value. ``sees`` names the
    species whose boids this one perceives at all (None: every species, itself included);
    ``separates``, ``aligns`` and ``coheres`` name, among those, the ones each rule acts on
    (None: all it sees).
    """

    name: str
    count: int
    separation_distance: float | None = None
    separation: float | None = None
    alignment: float | None = None
    cohesion: float | None = None
    view_distance: float | None = None
    fov: float | None = None
    min_speed: float | None = None
    max_speed: float | None = None
    max_turn_rate: float | None = None
    sees: tuple[str, ...] | None = None
    separates: tuple[str, ...] | None = None
    aligns: tuple[str, ...] | None = None
    coheres: tuple[str, ...] | None = None


def _names(value: Any) -> Any:
    if is_sequence(value) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return value


def normalise(value: Any) -> Any:
    """One species given as a record, a dict or a tuple, as a :class:`Species` with tuples of names
    and a plain int count; anything else as it is, for the validation to report."""

    def plain(s: Species) -> Species:
        changes = {rule: _names(getattr(s, rule)) for rule in SPECIES_RULES if getattr(s, rule) is not None}
        if is_whole_number(s.count):
            changes["count"] = int(s.count)
        return s._replace(**changes)

    return record(value, Species, plain)


def counted_by_species(species: Any) -> bool:
    """Whether ``species`` make the flock: then ``count`` is their total."""
    return (
        is_sequence(species)
        and len(species) > 0
        and all(isinstance(s, Species) and is_whole_number(s.count) for s in species)
    )


@functools.lru_cache(maxsize=256)
def species_params(params: Params, k: int) -> Params:
    """The parameters boids of species k live by (``Params.of_species``, for a flock with species)."""
    own = {name: getattr(params.species[k], name) for name in SPECIES_FIELDS}
    return dataclasses.replace(
        params, species=(), count=params.species[k].count,
        **{name: value for name, value in own.items() if value is not None},
    )  # fmt: skip


@functools.lru_cache(maxsize=64)
def interaction_matrix(params: Params) -> tuple[tuple[tuple[bool, bool, bool, bool], ...], ...]:
    """[a][b]: whether a boid of species a sees, separates from, aligns with and coheres with one of
    species b (``Params.interacts``, for a flock with species)."""
    names = [s.name for s in params.species]
    rows = []
    for s in params.species:
        sees = set(names if s.sees is None else s.sees)
        lists = [sees] + [sees if getattr(s, rule) is None else set(getattr(s, rule)) & sees
                          for rule in SPECIES_RULES[1:]]  # fmt: skip
        rows.append(tuple(tuple(name in rule for rule in lists) for name in names))
    return tuple(rows)
