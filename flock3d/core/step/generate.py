"""Writing a layout's step: the template's functions with their holes filled.

A flock's fast step is Python source, compiled by numba: the skeleton of
:mod:`flock3d.core.step.template` (the loops every layout shares) with each ``hole(NAME)``
line replaced by the code that the layout needs: the built-in terms it has (each term
writes its own lines, :mod:`flock3d.core.terms`), the user's rules and forces, its kind of
neighbours and its species. Only what a scene uses is compiled, the pair terms in one fused,
branch-free loop over the candidates.

The generator writes a module twice: the first pass learns which values the step reads, in
the order it first reads them (the layout of ``pv``); the second writes each value's place
in ``pv`` where it is unpacked. Nothing edits the text afterwards.

The generator is one class, :class:`_Generator`, of parts with one job each:
:mod:`~flock3d.core.step.module` (what terms and models ask of it, the module and its holes,
the values each function unpacks), :mod:`~flock3d.core.step.pairs` (a boid's candidates and
the pair loops, built-in and the user's), :mod:`~flock3d.core.step.update` (a boid's desired
velocity, staged in the batch) and :mod:`~flock3d.core.step.moves` (the batch's turn and move,
the in-place updates). :mod:`~flock3d.core.step.values` says where each value lies in ``pv``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# The parts' names stay importable from here (``X as X``: re-exported), as the GPU generator
# (flock3d.core.step.cuda_generate, a subclass of _Generator) and the stepper import them.
from flock3d.core.step.lines import _Lines as _Lines
from flock3d.core.step.module import _HOLE as _HOLE
from flock3d.core.step.module import _Module
from flock3d.core.step.moves import _Moves
from flock3d.core.step.pairs import _CANDIDATES as _CANDIDATES
from flock3d.core.step.pairs import _CHOSEN as _CHOSEN
from flock3d.core.step.pairs import _Pairs
from flock3d.core.step.update import _BoidUpdate
from flock3d.core.step.values import MATRICES, SPECIES_VALUES, WORLD_TERMS, offsets, riders, value_slots

__all__ = ["generate", "WORLD_TERMS", "SPECIES_VALUES", "MATRICES", "value_slots", "riders", "offsets"]


def generate(layout: Any) -> tuple[str, list[str]]:
    """The source of the step module of ``layout`` and the names of the values it reads, in pv order."""
    return written(layout, lambda at, reads: _Generator(layout, at, reads))


def written(
    layout: Any, make: Callable[[dict[str, int] | None, set[str] | None], _Generator]
) -> tuple[str, list[str]]:
    """The module the generator ``make(at, reads)`` writes for ``layout``, in its two passes, and
    the names of the values it reads, in pv order."""
    first = make(None, None)
    first.module()
    names = list(first.used)
    return make(offsets(layout, names), first.reads).module(), names


class _Generator(_Module, _Pairs, _BoidUpdate, _Moves):
    """Writes the module of one layout: fills the template's holes, term by term."""
