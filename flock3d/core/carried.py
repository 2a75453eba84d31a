"""Per-boid state a term or a model carries from step to step, declared in its own module.

A stateful term (the perching timer), model (the inertial spin model's spins) or option of
perception (the adaptive radius) declares each array it keeps as a :class:`Carried` record,
next to the code that reads and writes it::

    PERCHES = Carried("perches", 1, "each boid's perching timer, in seconds: ...")

    class Perching(Term):
        carries = (PERCHES,)

Everything else is derived from the declarations: :class:`~flock3d.core.state.FlockState`'s
arrays (an attribute each, ``state.perches``), their copy, assignment and check, the first
state a flock starts from, the reference engine's per-boid entries and the arrays the fast
step carries in its value vector (:func:`flock3d.core.step.generate.riders`).

Invariant: a carried array is float64 (it rides in the step's float64 value vector pv), one
row per boid, and each boid reads and writes its own row only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from flock3d.core.params import Params

__all__ = ["Carried"]


@dataclass(frozen=True)
class Carried:
    """One per-boid array of state that a term, a model or the perception keeps between steps.

    Attributes:
        name: the :class:`~flock3d.core.state.FlockState` attribute holding it (an identifier).
        width: numbers a boid, >= 1: 1 makes it an (N,) array, more an (N, width) one.
        doc: what each boid's entry is, with its unit in words.
        initial: what a flock starts with: one number for every entry, or a function of the
            flock's Params returning the whole (count,) or (count, width) array.
        restart: whether a flock retuned from the first Params to the second starts the array
            again from ``initial`` (None: never; it keeps its values).
        note: a model's: the generated step's comment on the batch array of it.
    """

    name: str
    width: int
    doc: str
    initial: float | Callable[[Params], np.ndarray] = 0.0
    restart: Callable[[Params, Params], bool] | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a carried array's name must be an identifier (got {self.name!r})")
        if int(self.width) != self.width or self.width < 1:
            raise ValueError(f"carried array {self.name!r} has width {self.width!r}; it must be >= 1")

    def shape(self, n: int) -> tuple[int, ...]:
        """The array's shape for ``n`` boids: (n,) or (n, width)."""
        return (n,) if self.width == 1 else (n, self.width)

    def zeros(self, n: int) -> np.ndarray:
        """The array of ``n`` boids, all zero (a state made without Params starts so)."""
        return np.zeros(self.shape(n))

    def start(self, params: Params) -> np.ndarray:
        """The array a flock with ``params`` starts with (:attr:`initial`), float64, C-contiguous."""
        if callable(self.initial):
            return np.ascontiguousarray(self.initial(params), dtype=np.float64)
        return np.full(self.shape(params.count), float(self.initial))
