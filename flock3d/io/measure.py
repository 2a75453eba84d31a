"""Measuring a recording: the per-frame table of :mod:`flock3d.metrics` over a trajectory's
frames (with the velocity correlations and the nearest neighbours' anisotropy when asked for),
and the maximum-entropy fit of :mod:`flock3d.inference` to some of its frames.

These are what ``flock3d metrics`` and ``flock3d infer maxent`` compute; a notebook calls
:func:`measure_recording` or :func:`fit_recording` with an open
:class:`~flock3d.io.trajectory.Trajectory` and gets the same results.
"""

from __future__ import annotations

import itertools
import sys
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from flock3d import inference, metrics
from flock3d.errors import Flock3dError

if TYPE_CHECKING:
    from flock3d.io.trajectory import Trajectory

__all__ = ["RecordingMeasures", "fit_recording", "measure_recording"]


@dataclass
class RecordingMeasures:
    """What :func:`measure_recording` measured."""

    columns: dict[str, np.ndarray]
    """Per measured frame: :data:`flock3d.metrics.COLUMNS`, then the ``extra`` columns."""
    extra: list[str] = field(default_factory=list)
    """The columns added by the correlations (xi_velocity, xi_orientation, xi_speed) and the
    anisotropy (n_c), in that order."""
    correlation: dict[str, np.ndarray] | None = None
    """C(r) of the fluctuations, one row per measured frame and distance bin (None: not asked for)."""
    anisotropy: dict[str, np.ndarray] | None = None
    """gamma(n), one row per measured frame and neighbour rank (None: not asked for)."""
    warnings: list[str] = field(default_factory=list)
    """What the per-frame table could not measure, one message each."""


def measure_recording(
    trajectory: Trajectory,
    *,
    stride: int = 1,
    bins: int | None = None,
    neighbours: int | None = None,
    progress: bool | None = None,
) -> RecordingMeasures:
    """Measure every ``stride``-th frame of a flock3d recording.

    Groups are connected at the scene's view distance; a periodic arena is measured through
    its faces (minimum image).

    Args:
        trajectory: an open flock3d recording with at least one frame.
        stride: measure every ``stride``-th frame [frames], >= 1.
        bins: if given, also compute the velocity correlation functions in this many distance
            bins (:func:`flock3d.metrics.correlation_table`).
        neighbours: if given, also compute the anisotropy of the 1st to ``neighbours``-th
            nearest neighbour (:func:`flock3d.metrics.anisotropy_table`).
        progress: a progress bar on stderr per pass over the frames (None: only on a terminal).

    Raises:
        Flock3dError: the file is another program's H5MD (no flock3d scene) or has no frames.
    """
    from tqdm import tqdm

    scene = trajectory.scene
    if scene is None:
        raise Flock3dError(f"{trajectory.path}: an H5MD file from another program (no flock3d scene)")
    if trajectory.n_frames == 0:
        raise Flock3dError(f"{trajectory.path}: the trajectory has no frames")
    period = metrics.periodic_box(scene.params)
    total = len(range(0, trajectory.n_frames, stride))

    def frames(what: str):
        bar = tqdm(total=total, unit="frame", desc=what, file=sys.stderr,
                   disable=None if progress is None else not progress)  # fmt: skip
        with bar:
            for state in itertools.islice(trajectory.frames(), 0, None, stride):
                yield state
                bar.update()

    with warnings.catch_warnings(record=True) as unmeasured:
        warnings.simplefilter("always", metrics.MeasurementWarning)
        columns = metrics.table(frames("metrics"), scene.params.perception_distance, period)
    measures = RecordingMeasures(columns, warnings=[str(w.message) for w in unmeasured])
    if bins is not None:
        lengths, measures.correlation = metrics.correlation_table(frames("correlation"), bins=bins,
                                                                  period=period)  # fmt: skip
        for name in ("xi_velocity", "xi_orientation", "xi_speed"):
            columns[name] = lengths[name]
            measures.extra.append(name)
    if neighbours is not None:
        ranges, measures.anisotropy = metrics.anisotropy_table(frames("anisotropy"), neighbours=neighbours,
                                                               period=period)  # fmt: skip
        columns["n_c"] = ranges["n_c"]
        measures.extra.append("n_c")
    return measures


def fit_recording(
    trajectory: Trajectory,
    indices,
    *,
    n_max: int,
    bins: int = 50,
    progress: bool | None = None,
) -> inference.MaxentFit:
    """The topological maximum-entropy model fitted to frames ``indices`` of a recording.

    Args:
        trajectory: an open H5MD file, a flock3d recording or another program's.
        indices: the frame indices to fit, e.g. :func:`flock3d.inference.spread_frames`.
        n_max: the largest range n_c tried [neighbours], below the number of boids.
        bins: distance bins of the correlation function C(r), 0 to the flock's size.
        progress: a progress bar on stderr (None: only on a terminal).

    Raises:
        ValueError: a frame the fit cannot take (see :func:`flock3d.inference.maxent_frames`);
            one holding NaN, infinite or huge values is named.
    """
    from tqdm import tqdm

    from flock3d.metrics.values import measurable

    def frames():
        for i in indices:
            state = trajectory.frame(int(i))
            if not (measurable(state.positions) and measurable(state.velocities)):
                raise ValueError(
                    f"frame {int(i):,} (t = {state.time:g} s) holds NaN, infinite or huge positions or "
                    "velocities, which no fit can take: choose --frames without it"
                )
            yield state

    with tqdm(total=len(indices), unit="frame", desc="maxent", file=sys.stderr,
              disable=None if progress is None else not progress) as bar:  # fmt: skip
        return inference.maxent_frames(
            frames(),
            n_c_range=range(1, n_max + 1),
            period=trajectory.period,
            bins=bins,
            progress=bar.update,
        )
