"""Measurements of a flock: order, spacing, groups, shape, correlations and neighbour anisotropy.

One module a job: :mod:`~flock3d.metrics.order`, :mod:`~flock3d.metrics.spacing` (spacing and
groups), :mod:`~flock3d.metrics.shape`, :mod:`~flock3d.metrics.correlation`,
:mod:`~flock3d.metrics.anisotropy`, :mod:`~flock3d.metrics.tables` (every frame of a
recording at once), on :mod:`~flock3d.metrics.periodic` (minimum image) and
:mod:`~flock3d.metrics.values` (what can be measured). Every public name is here.

All functions take plain arrays, so they work on a live flock
(``polarization(flock.velocities)``) and on recorded frames alike. Positions are
(N, 3) float64 in world units, velocities (N, 3) float64 in units/s.

Periodic arenas: the functions that measure distances between boids take
``period``, the box's side per axis (0 for an axis that does not wrap, see
:func:`periodic_box`), and then use the minimum image: a group that straddles a
face is one group and nearest neighbours are found through the faces. Milling,
the flock's size and its principal axes need a centre and an outline, which a
flock spread through a periodic box has not: milling is measured on the wrapped
coordinates, size and shape are NaN in :func:`summary` and :func:`table`.

The analyses of collective-motion studies:

- :func:`velocity_correlation`, :func:`correlation_length`: the connected
  correlation function C(r) of velocity, direction and speed fluctuations and its
  first zero xi (Cavagna et al. 2010, PNAS 107:11865).
- :func:`neighbour_anisotropy`, :func:`topological_range`: the anisotropy factor
  gamma(n) of the n-th nearest neighbour and the range n_c where it falls to the
  isotropic value (Ballerini et al. 2008, PNAS 105:1232).
- :func:`principal_axes`, :func:`flock_size`: thickness, width and length along the
  principal axes, and the largest distance between two boids.

:func:`table` measures every frame of a recording at once (compiled, parallel over
frames); :func:`correlation_table` and :func:`anisotropy_table` add the analyses.
:func:`finite_mean` averages a column over frames, :func:`mean_anisotropy` averages
gamma(n) over frames before reading n_c off it.

A frame holding a NaN or infinite value, or one larger than :data:`MAX_MEASURED` in
size, cannot be measured (its squared distances would overflow): it measures NaN
throughout, and :func:`table` says how many such frames it met in one
:class:`MeasurementWarning`.
"""

from flock3d.metrics.anisotropy import (
    MAX_NEIGHBOURS,
    Anisotropy,
    anisotropy_table,
    mean_anisotropy,
    neighbour_anisotropy,
    topological_range,
)
from flock3d.metrics.correlation import (
    MAX_BINS,
    Correlation,
    correlation_length,
    correlation_table,
    velocity_correlation,
)
from flock3d.metrics.order import milling, polarization
from flock3d.metrics.periodic import periodic_box
from flock3d.metrics.shape import Shape, flock_size, principal_axes
from flock3d.metrics.spacing import (
    MAX_PAIRS,
    NearestNeighbourStats,
    group_polarization,
    groups,
    mean_pair_distance,
    nearest_neighbour_distances,
    nearest_neighbour_stats,
)
from flock3d.metrics.tables import COLUMNS, EXTRA_COLUMNS, species_summary, summary, table
from flock3d.metrics.values import MAX_MEASURED, MeasurementWarning, finite_mean

__all__ = [
    "polarization",
    "milling",
    "periodic_box",
    "nearest_neighbour_distances",
    "NearestNeighbourStats",
    "nearest_neighbour_stats",
    "mean_pair_distance",
    "groups",
    "group_polarization",
    "flock_size",
    "Shape",
    "principal_axes",
    "Correlation",
    "velocity_correlation",
    "correlation_length",
    "Anisotropy",
    "neighbour_anisotropy",
    "topological_range",
    "summary",
    "species_summary",
    "table",
    "correlation_table",
    "anisotropy_table",
    "finite_mean",
    "mean_anisotropy",
    "COLUMNS",
    "EXTRA_COLUMNS",
    "MAX_PAIRS",
    "MAX_MEASURED",
    "MAX_BINS",
    "MAX_NEIGHBOURS",
    "MeasurementWarning",
]
