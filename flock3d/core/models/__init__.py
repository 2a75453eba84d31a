"""The models a flock may follow: one module each, everything about a model in one place.

``Params.model`` names one of them. A model's module holds:

- its own fields: ``FIELDS``, name -> (default, :class:`~flock3d.core.fields.Spec`), which
  :class:`~flock3d.core.params.Params` declares from here (validation, the scene schema, the
  template, the docs tables and the viewer's panel are derived from them);
- :attr:`Model.defaults`: the values that make a flock this model (no view cone or turn limit
  where it has none, an arena it accepts), which apply however ``Params`` is built
  (``Params(model=...)``, a scene file, ``params.replace(model=...)``) to the fields the caller
  leaves unset, and :attr:`Model.setup`: the paper's set-up (its N, dt, density...), which a
  scene file with ``model = NAME`` starts from too;
- :attr:`Model.arenas`, :attr:`Model.carries` (its per-boid state) and its validation
  (:meth:`Model.problems`);
- :meth:`Model.values` and :meth:`Model.update`: the numbers its fast step reads and the lines
  the generator writes for a boid's update, through the verbs of :class:`Emit`;
- :meth:`Model.step`: its readable reference step.

The boids model (:mod:`.boids`) is the one whose update is the sum of the terms
(:mod:`flock3d.core.terms`); the others write their own. The registry, :data:`MODELS`, is
the one list of them: adding a model is its module and its name below.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar

from flock3d.core.carried import Carried
from flock3d.core.fields import Problem, Spec

if TYPE_CHECKING:
    from flock3d.core.params import Params
    from flock3d.core.state import FlockState

__all__ = ["Model", "Emit", "MODELS", "MODELS_BY_NAME", "model_of", "columns", "MODEL_FIELDS", "ARENA_SHAPES"]

#: Every arena shape (``Params.arena_shape``); see :data:`flock3d.core.declarations.ARENA_SHAPES`.
ARENA_SHAPES = ("sphere", "box", "periodic", "wrap", "none")


class Emit:
    """What a model's :meth:`Model.update` may ask of the generator (its interface, documented).

    Names of the boid's quantities, each a tuple of three locals: ``position``, ``heading`` (its
    unit forward axis), ``velocity`` and ``desired`` (the desired velocity the update sets).
    ``noise``: the arguments keying the counter-based noise (seed, step, boid); ``planar``: the
    flag of a planar flock; ``components``: the module of :mod:`flock3d.core.components`.
    """

    layout: Any
    position: tuple[str, str, str]
    heading: tuple[str, str, str]
    velocity: tuple[str, str, str]
    desired: tuple[str, str, str]
    noise: str
    planar: str
    components: str

    def v(self, name: str) -> str:  # pragma: no cover - the generator implements it
        """The local holding value ``name`` of pv (recording that it is read)."""
        raise NotImplementedError

    def model(self, model: Model) -> str:  # pragma: no cover
        """The name the generated module imports the model's module under."""
        raise NotImplementedError

    def choose(self, c: Any, r2: str, cone: str) -> dict[str, str]:  # pragma: no cover
        """Write the choice of the candidates within sqrt(r2) and ``cone`` (the k nearest of them
        with topological neighbours); returns the names of the columns to sum over (``x``, ``y``,
        ``z``, ``vx``, ``vy``, ``vz``, ``id`` and the count ``m``)."""
        raise NotImplementedError

    def summed(self, c: Any, targets: str, function: str, b: dict[str, str], arguments: str) -> None:
        """Write ``targets = function(columns, arguments)``: a numba function whose first
        arguments are the candidates' columns ``b`` (:func:`columns`) and whose results are each
        a sum over them (counts, sums of vectors), so that an engine may call it on parts of
        the candidates and add the parts up (the GPU's runs of them)."""
        raise NotImplementedError  # pragma: no cover

    def carried(self, c: Any, name: str) -> tuple[list[str], list[str]]:  # pragma: no cover
        """The boid's entries of per-boid state ``name`` (one of :attr:`Model.carries`): where its
        values at the start of the step are read, and where its new ones are written."""
        raise NotImplementedError

    def stage(
        self, c: Any, s_min: str | None, s_max: str | None, position: tuple[str, ...] | None = None
    ) -> None:
        """Stage the boid's desired velocity: it turns to it and moves at its speed clamped to
        [s_min, s_max] (None: unclamped), from ``position`` (the boid's own by default)."""
        raise NotImplementedError  # pragma: no cover


class Model:
    """A model of the flock. Subclasses set the class attributes and override what they need."""

    name: ClassVar[str]
    """What ``Params.model`` (the scene's ``model``) names it."""
    words: ClassVar[str]
    """What it is, in a few words (the ``model`` field's description)."""
    title: ClassVar[str] = ""
    """The title of its box of controls on the viewer's panel."""
    module: ClassVar[str] = ""
    """The dotted module holding its numba components, when the generated step imports it."""
    fields: ClassVar[dict[str, tuple[Any, Spec]]] = {}
    """Its own fields: name -> (default, declaration)."""
    defaults: ClassVar[dict[str, Any]] = {}
    """What makes a flock this model, where the caller sets nothing else: applied however Params is
    built. (The paper's set-up is :attr:`setup`.)"""
    setup: ClassVar[dict[str, Any]] = {}
    """The paper's set-up (N, dt, the density, the neighbours...) that a scene file with this model
    starts from, besides :attr:`defaults`; a Python caller chooses their own."""
    arenas: ClassVar[tuple[str, ...]] = ARENA_SHAPES
    """The arena shapes it accepts."""
    carries: ClassVar[tuple[Carried, ...]] = ()
    """Its per-boid state, declared here only (:class:`~flock3d.core.carried.Carried`, whose
    ``note`` says what the batch keeps): each becomes a :class:`~flock3d.core.state.FlockState`
    array, which the fast step carries in pv after the values."""
    update_kind: ClassVar[str] = "own"
    """``terms``: a boid's update is the sum (or chain) of the terms; ``own``: :meth:`update`."""
    sees_headings: ClassVar[bool] = True
    """Whether the candidates' buffer holds headings (a constant-speed model's) or velocities."""
    constant_speed: ClassVar[bool] = True
    """Whether every individual moves at ``Params.speed`` (its initial speed too)."""
    fills_box: ClassVar[bool] = False
    """Whether, without an ``init_radius``, a flock starts spread over its whole box."""
    reach_fields: ClassVar[tuple[str, ...]] = ()
    """Its own fields that size its reach (:meth:`reach`), when that is not the view distance."""
    adaptive: ClassVar[bool] = False
    gpu_refusal: ClassVar[str] = ""
    """Why the GPU engine does not run its update, in a few words ("": it does: each sum over the
    candidates goes through :meth:`Emit.summed`, and its numba functions compile as device code)."""
    """Whether it accepts the adaptive radius (``perception.adaptive``)."""
    panel: ClassVar[tuple[str, ...]] = ()
    """The fields the viewer's panel shows for it, besides its own (those with a slider)."""
    table: ClassVar[str] = ""
    """The name of its own parameter table in ``docs/model.md`` ("": in the table of the rest)."""

    @property
    def scene_defaults(self) -> dict[str, Any]:
        """What a scene file with this model starts from: its defaults and its paper's set-up."""
        return {"model": self.name, **self.defaults, **self.setup}

    @property
    def ident(self) -> str:
        """Its name as a Python identifier."""
        return self.name.replace("-", "_")

    def reach(self, params: Params) -> float:
        """How far an individual perceives (``Params.perception_distance``)."""
        return params.view_distance

    def values(self, params: Params) -> dict[str, float]:
        """The numbers its update reads, by name (pv's entries)."""
        return {}

    def update(self, g: Emit, c: Any) -> None:
        """Write (``c(line, ...)``) a boid's update: its desired velocity, staged (``g.stage``)."""
        raise NotImplementedError(self.name)

    def step(self, state: FlockState, params: Params, seed: int) -> FlockState:
        """The reference engine's step: the whole flock's next state, ``seed`` keying its noise."""
        raise NotImplementedError(self.name)

    def problems(self, values: dict[str, Any], ok: dict[str, bool]) -> list[Problem]:
        """What is wrong with a flock of this model beyond each field's declared range (``ok``:
        the fields whose own value is valid)."""
        return []

    def foreign_problems(self, values: dict[str, Any]) -> list[Problem]:
        """What is wrong with its fields set in a flock of another model."""
        return []

    def grid_problem(self, values: dict[str, Any], least: float, where: str) -> list[Problem] | None:
        """For a periodic arena, when its reach is not the view distance: the problem of a reach
        shorter than ``least`` (``where`` says why); None: the view distance is checked."""
        return None

    def periodic_problem(
        self, values: dict[str, Any], ok: dict[str, bool], radius: float, why: str
    ) -> list[Problem] | None:
        """For a periodic arena, when its reach is not the view distance: the problem of a reach
        of ``radius`` or more (``why`` says why); None: the view distance is checked."""
        return None

    def __repr__(self) -> str:
        return f"<model {self.name}>"


def columns(b: dict[str, str]) -> str:
    """The candidates' columns and their count (what :meth:`Emit.choose` returns), as arguments."""
    return ", ".join(b[k] for k in ("x", "y", "z", "vx", "vy", "vz", "m"))


#: The modules of the models, in the order ``model`` lists them.
_MODULES = ("boids", "couzin", "vicsek", "ism", "cucker_smale", "pearce")
MODELS: tuple[Model, ...] = tuple(import_module(f"{__name__}.{name}").MODEL for name in _MODULES)
MODELS_BY_NAME = {model.name: model for model in MODELS}
#: Every model's own fields, name -> (default, declaration), in the registry's order.
MODEL_FIELDS = {name: entry for model in MODELS for name, entry in model.fields.items()}


def model_of(params: Any) -> Model:
    """The model of ``params`` (a Params, or anything with a ``model``; an unknown name: the first)."""
    return MODELS_BY_NAME.get(getattr(params, "model", None), MODELS[0])
