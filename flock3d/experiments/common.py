"""What every experiment shares: its :class:`Result`, the registry and the pieces of their runs.

An experiment is a function of ``(quick, seed, progress)`` registered with :func:`experiment`;
:func:`run_experiment` runs it by name and times it.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from flock3d import extras, metrics
from flock3d.flock import Flock


@dataclass
class Result:
    """What an experiment found.

    Attributes:
        columns: the table, equal-length arrays by column name (the CSV).
        lines: the figure, as lines of text: the numbers next to the paper's.
        plot: draws the figure into the PNG file at the path it is given.
        seconds: how long the run took [s] (wall clock, set by :func:`run_experiment`).
        media: further files it writes beside the table and the plot, by suffix (``.mp4``): what
            writes each to the path it is given.
    """

    columns: dict[str, np.ndarray]
    lines: list[str]
    plot: Callable[[Path], None]
    seconds: float = 0.0
    media: dict[str, Callable[[Path], None]] = field(default_factory=dict)


@dataclass(frozen=True)
class Experiment:
    """A registered experiment: its name on the command line, what it reproduces, how to run it.

    Attributes:
        name: its name on the command line (``flock3d experiment NAME``).
        title: what it shows, in a line.
        reference: the paper it reproduces.
        run: the function ``run(quick, seed, progress) -> Result``.
        renders: the modules of the viewer extra it renders its flocks with (none: it draws no
            frame), checked before it runs (:meth:`require`).
    """

    name: str
    title: str
    reference: str
    run: Callable[[bool, int, bool | None], Result] = field(repr=False)
    renders: tuple[str, ...] = ()

    def require(self) -> None:
        """Refuse, before any work, where the viewer extra it renders with is missing.

        Raises:
            Flock3dError: in one line, naming the extra and the modules missing.
        """
        if self.renders:
            extras.require("viewer", f"{self.name} renders its flocks:", self.renders)


#: The experiments by name, in the order they were registered.
EXPERIMENTS: dict[str, Experiment] = {}


#: What every experiment's run takes and gives: appended to its docstring by :func:`experiment`,
#: so that each states it and none writes it again.
RUN_SECTIONS = """
Args:
    quick: run the small instance (seconds; the one the tests run) rather than the full
        reproduction.
    seed: the seed every run's seed is made from.
    progress: show a progress bar on stderr (None: only on a terminal).

Returns:
    The :class:`Result`: its table, the figure's lines beside the paper's, and its plot.
"""


def experiment(name: str, title: str, reference: str, renders: tuple[str, ...] = ()):
    """Register ``run(quick, seed, progress) -> Result`` as the experiment ``name``.

    Args:
        name: its name on the command line, the key of :data:`EXPERIMENTS`.
        title: what it shows, in a line.
        reference: the paper it reproduces.
        renders: the modules of the viewer extra it renders with (:attr:`Experiment.renders`).

    Returns:
        The decorator: it registers its function and returns it, :data:`RUN_SECTIONS` appended
        to its docstring; one that renders first checks that it can (:meth:`Experiment.require`).
    """

    def register(run: Callable[[bool, int, bool | None], Result]):
        @functools.wraps(run)
        def checked(quick: bool = False, seed: int = 0, progress: bool | None = None) -> Result:
            entry.require()
            return run(quick, seed, progress)

        entry = Experiment(name, title, reference, checked, renders)
        EXPERIMENTS[name] = entry
        checked.__doc__ = inspect.cleandoc(run.__doc__ or "") + "\n" + RUN_SECTIONS
        return checked

    return register


#: The engine that steps the flocks of the experiment running (run_experiment's ``engine``).
_ENGINE: ContextVar[str] = ContextVar("flock3d_experiment_engine", default="fast")


def new_flock(params, **kwargs) -> Flock:
    """A flock of the running experiment, stepped by the engine it was asked for.

    Args:
        params: the flock's parameters.
        **kwargs: the rest of :class:`~flock3d.Flock`'s arguments.

    Returns:
        The flock; a GPU engine that does not run the experiment's flock says so in one line
        (:class:`~flock3d.errors.GpuError`).
    """
    return Flock(params, engine=_ENGINE.get(), **kwargs)


def run_experiment(
    name: str, quick: bool = False, seed: int = 0, progress: bool | None = None, engine: str = "fast"
) -> Result:
    """Run the experiment ``name`` and time it.

    Args:
        name: a key of :data:`EXPERIMENTS`.
        quick: run the small instance rather than the full reproduction.
        seed: the seed every run's seed is made from.
        progress: show a progress bar on stderr (None: only on a terminal).
        engine: what steps its flocks (``Flock``'s ``engine``).

    Returns:
        Its :class:`Result`, ``seconds`` set to the run's wall-clock time.

    Raises:
        KeyError: no experiment is named ``name``.
    """
    if name not in EXPERIMENTS:
        raise KeyError(f"no experiment is named {name!r}; choose one of {', '.join(EXPERIMENTS)}")
    start = time.perf_counter()
    token = _ENGINE.set(engine)
    try:
        result = EXPERIMENTS[name].run(quick, seed, progress)
    finally:
        _ENGINE.reset(token)
    result.seconds = time.perf_counter() - start
    return result


def _bar(total: int, what: str, progress: bool | None):
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=what,
        unit="step",
        file=sys.stderr,
        disable=None if progress is None else not progress,
    )


def _figure(rows: int, height: float):
    from flock3d.plots import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(rows, 1, figsize=(8, height), constrained_layout=True)
    return plt, fig, np.atleast_1d(axes)


# -- Couzin et al. (2002): collective memory ------------------------------------------------


def _order_over(flock: Flock, steps: int, every: int = 10) -> tuple[float, float]:
    """Mean polarization and milling over the next ``steps`` steps, sampled every ``every``."""
    pol, mill = [], []
    for _ in range(max(1, steps // every)):
        flock.step(every)
        pol.append(metrics.polarization(flock.velocities))
        mill.append(metrics.milling(flock.positions, flock.velocities))
    return float(np.mean(pol)), float(np.mean(mill))


#: Boids per cubic unit of the initial ball: the default scene's (500 boids in a ball of radius 15).
_DENSITY = 500 / (4 / 3 * math.pi * 15.0**3)


def polarized_start(n: int, seed: int, spread: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """n boids uniform in a ball at the default scene's density, heading +x with Gaussian scatter.

    Args:
        n: the number of boids.
        seed: seed of ``numpy.random.default_rng`` for the draw.
        spread: the standard deviation of the Gaussian scatter added to the unit +x heading
            (each component) before it is normalised.

    Returns:
        ``(positions, velocities)``: (n, 3) positions [units] and (n, 3) velocities [units/s],
        speeds uniform in [3, 6] (the default limits).
    """
    rng = np.random.default_rng(seed)
    radius = (3 * n / (4 * math.pi * _DENSITY)) ** (1 / 3)
    d = rng.normal(size=(n, 3))
    positions = d / np.linalg.norm(d, axis=1, keepdims=True) * radius * rng.uniform(0, 1, (n, 1)) ** (1 / 3)
    headings = np.array([1.0, 0.0, 0.0]) + spread * rng.normal(size=(n, 3))
    headings /= np.linalg.norm(headings, axis=1, keepdims=True)
    return positions, headings * rng.uniform(3.0, 6.0, (n, 1))
