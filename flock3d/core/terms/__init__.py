"""The model's built-in terms: one module each, everything about a term in one place.

A term is a rule or a force of the model (``docs/model.md``). Its module holds:

- its fields: the :class:`~flock3d.core.fields.Spec` of each parameter it owns (the
  :class:`~flock3d.core.params.Params` field declares itself with it), from which
  validation, the scene schema, the scene template and the docs tables are derived;
- :meth:`Term.present`: whether a flock with given parameters uses it;
- :meth:`Term.values`: the numbers it reads, packed into the step's value vector ``pv``,
  and :meth:`Term.world`: its rows of world data (attractors, obstacles...), packed into
  the step's world array;
- :attr:`Term.carries`: the per-boid state it keeps from step to step, if any (declared in its
  module; the state's arrays are derived from it);
- its numba component(s): small functions the generated step inlines;
- :meth:`Term.line`: the line(s) the generator writes to call them;
- :meth:`Term.reference`: the readable per-boid computation the reference engine runs;
- for a term that keeps boids out of places (or holds them still), :meth:`Term.constraint`: the
  lines the generator writes after a boid's move, and :meth:`Term.constrained`, their readable
  twin in the reference engine.

The ordered registry of the terms is :data:`flock3d.core.stages.TERMS`: adding a term is its
module, its fields' lines in ``Params`` and its place there. Order matters: terms
are summed (or chained) in it, and the reference engine follows it too.

Conventions of the numba components: ``(px, py, pz)``, ``(vx, vy, vz)`` and
``(fx, fy, fz)`` are the boid's position, velocity and unit heading; ``box`` (6,) holds the
arena's centre and half side lengths; each returns an acceleration (units/s^2), or for a
pair term a neighbour's contribution that the step sums and then finishes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from flock3d.core.carried import Carried
from flock3d.core.fields import Problem

# The components' decorator: compiled as part of the generated step that calls them, so
# nothing is called per pair or per boid.
from flock3d.core.kernel import inlined

if TYPE_CHECKING:
    from flock3d.core.params import Params

__all__ = ["Term", "PairTerm", "Emit", "inlined"]


class Emit:
    """What a term's :meth:`Term.line` may ask of the generator (documentation of its interface).

    ``layout``: the :class:`~flock3d.core.assemble.Layout` being written;
    ``v(name)``: the local variable holding value ``name`` of pv (recording that it is read);
    ``term(term)``: the name the generated module imports the term's module under;
    ``world(term)``: the local name of the term's world data: a (rows, width) array, or the flat
    record of a term of ``world_width`` 1;
    ``called(term, c)``: what the lines call for the compiled function ``c`` of the term's
    :attr:`Term.called` (the function at its address, or on the GPU the function itself).
    """

    layout: Any

    def v(self, name: str) -> str:  # pragma: no cover - the generator implements it
        raise NotImplementedError

    def term(self, term: Term) -> str:  # pragma: no cover
        raise NotImplementedError

    def world(self, term: Term) -> str:  # pragma: no cover
        raise NotImplementedError

    def called(self, term: Term, called: Any) -> str:  # pragma: no cover
        raise NotImplementedError


class Term:
    """A built-in term of the boids model. Subclasses set the class attributes and override
    the methods their term needs; the defaults describe a term with no fields or data."""

    name: ClassVar[str]
    """Its stage name (what ``rules.order`` names)."""
    module: ClassVar[str] = ""
    """The dotted module holding its numba components (the generated step imports it)."""
    fields: ClassVar[tuple[str, ...]] = ()
    """The Params fields it owns."""
    switches: ClassVar[tuple[str, ...]] = ()
    """The fields that turn it on (a world feature: other models refuse them set)."""
    decided_by: ClassVar[tuple[str, ...] | None] = None
    """The fields :meth:`present` reads (None: its switches)."""
    needs: ClassVar[str] = ""
    """What a flock needs to have it, in words a message ends with ("it needs obstacles")."""
    clamps: ClassVar[bool] = False
    """Whether it sets the velocity itself (the chain's speed limit) rather than adding an
    acceleration."""
    weight: ClassVar[str | None] = None
    """The field scaling its acceleration: what to lower when it blows a boid up."""
    world_width: ClassVar[int] = 0
    """Numbers in each row of its world data (0: it has none)."""
    species_values: ClassVar[frozenset[str]] = frozenset()
    """Its values that each species has its own of."""
    label: ClassVar[str] = ""
    """How ``flock3d bench --variants`` names the scene of :meth:`example`."""
    constrains: ClassVar[bool] = False
    """Whether it acts after the move too (:meth:`constraint`, :meth:`constrained`); the terms that
    do act there in the registry's order, whatever the chain's order."""
    carries: ClassVar[tuple[Carried, ...]] = ()
    """Its per-boid state, declared here only (:class:`~flock3d.core.carried.Carried`): each
    becomes a :class:`~flock3d.core.state.FlockState` array, and the reference boid's entry
    ``boid.carried[name]``. The fast step reads and writes it in pv, after the values: boid i's
    entries at ``pv[<name>_at + width * i]`` onwards, its own only."""
    called: ClassVar[tuple[Any, ...]] = ()
    """The compiled functions its lines call through their address
    (:class:`~flock3d.core.kernel.calls.Called`), as ``g.called(term, c)`` names them: compiling
    the step does not compile them (a large chain a scene may lack, compiled beside it)."""
    keeps_predators: ClassVar[Any] = None
    """The compiled constraint (one of :attr:`called`, of signature
    :data:`~flock3d.core.kernel.predators.KEEP_OUT_SIGNATURE`) that keeps the predators out of
    this term's world after their move, as it keeps the boids (:meth:`constraint`); None: the
    predators fly through it. Its readable twin is :meth:`constrained`, on a predator."""
    reads_chosen: ClassVar[bool] = False
    """Whether its lines read the public indices of a boid's k nearest chosen (``kid``, ``n_sel``):
    the GPU step then keeps them, as the CPU's compacted column does."""

    def present(self, params: Params) -> bool:
        """Whether a flock with ``params`` uses this term."""
        return True

    def values(self, params: Params) -> dict[str, float]:
        """The numbers its components read, by name (pv's entries)."""
        return {}

    def world(self, params: Params, fields: Any = None) -> np.ndarray:
        """(rows, world_width) float64: its world data (none by default). ``fields``: what the
        flock's objects read from files became (:attr:`flock3d.Flock.fields`). A term of
        ``world_width`` 1 gives one record of a layout of its own, which the step reads as one
        flat (L,) array."""
        return np.zeros((0, max(self.world_width, 1)))

    def line(self, g: Emit) -> list[str]:
        """The generated lines that set ``tx, ty, tz`` to its acceleration for the boid."""
        raise NotImplementedError(self.name)

    def reference(self, boid: Any, world: Any, velocity: np.ndarray, params: Params) -> np.ndarray:
        """The readable computation of its acceleration for ``boid`` (the reference engine's),
        with ``params`` those of its species."""
        raise NotImplementedError(self.name)

    def constraint(self, g: Emit) -> list[str]:
        """The generated lines run after a boid moved (for a term that :attr:`constrains`): they may
        change its new position ``mx, my, mz``, velocity ``mvx, mvy, mvz`` and orientation
        ``quat[k]`` (row ``k``, public index ``boid``), knowing its start-of-step state (column
        ``slot`` of ``staged``, rows as :data:`flock3d.core.kernel.STAGED` says) and ``later``, the
        time after the step."""
        return []

    def constrained(self, boid: Any, before: Any, world: Any, params: Params) -> Any:
        """The readable :meth:`constraint`: ``boid`` after its move (a new ReferenceBoid), ``before``
        as it was at the start of the step; returns the boid where it may be."""
        return boid

    def problems(self, values: dict[str, Any], reported: set[str]) -> list[Problem]:
        """What is wrong with its fields, beyond each one's declared range (``reported``: the
        fields already found wrong, whose relations are then not judged)."""
        return []

    def example(self, base: Params) -> Params | None:
        """``base`` with this term turned on, as ``flock3d bench --variants`` measures it; None:
        not a row of its own."""
        return None

    def __repr__(self) -> str:
        return f"<term {self.name}>"


class PairTerm(Term):
    """A term summed over the neighbours a boid sees (separation, alignment, cohesion): the
    generator writes its contribution into the one fused pair loop, then finishes the sums."""

    matrix: ClassVar[str] = ""
    """The species interaction matrix deciding whom it acts on (pv's name)."""
    rule_index: ClassVar[int] = 0
    """Its column in the reference engine's interaction matrix (1, 2, 3)."""

    def neighbourhood(self, layout: Any) -> tuple[str, str]:
        """(radius^2, cone) value names of the neighbours it sums over."""
        raise NotImplementedError

    def contribution(self, g: Emit, buffer: dict[str, str]) -> str:
        """The line setting ``tx, ty, tz`` to candidate j's contribution (``buffer``: the names of
        the candidate columns, x, y, z, vx, vy, vz)."""
        raise NotImplementedError

    def finish(self, g: Emit) -> list[str]:
        """The lines turning its sums (``n_<name>``, ``s_<name>_x``...) into an acceleration."""
        raise NotImplementedError
