"""Plots of flock measurements (matplotlib, drawn off-screen)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from flock3d.core.atomic import AtomicFile

__all__ = ["plot_metrics", "plot_maxent", "pyplot", "save_figure"]


def pyplot():
    """matplotlib's ``pyplot``, drawing off-screen (Agg).

    matplotlib keeps its settings and font cache in the user's config and cache folders, and
    where they cannot be written (a read-only HOME, HOME a file) it says so in two lines every
    time it is imported. flock3d's plots need neither: there, they go to a folder of flock3d's
    in the temporary directory, quietly (``MPLCONFIGDIR``, unless the user set it)."""
    import os
    import sys

    if "matplotlib" not in sys.modules and not os.environ.get("MPLCONFIGDIR"):
        home = os.path.expanduser("~")
        if sys.platform.startswith(("linux", "freebsd")):  # where matplotlib keeps them (its own rule)
            folders = [os.path.join(os.environ.get(k) or os.path.join(home, d), "matplotlib") for k, d in
                       (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"))]  # fmt: skip
        else:
            folders = [os.path.join(home, ".matplotlib")]
        if not all(_writable(folder) for folder in folders):
            from flock3d.core.numba_cache import temporary_cache

            own = temporary_cache("matplotlib")
            # Ours alone: matplotlib reads a matplotlibrc there, which no other user may have put.
            if _writable(own) and (not hasattr(os, "getuid") or os.stat(own).st_uid == os.getuid()):
                os.environ["MPLCONFIGDIR"] = own
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _writable(folder: str) -> bool:
    """Whether ``folder`` exists or can be made, and takes files."""
    import os

    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    return os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)


def save_figure(fig, path: str | Path) -> Path:
    """Write the matplotlib figure ``fig`` to ``path`` at 100 dpi (the format from the suffix)
    and close it; returns the path.

    The file at ``path`` is replaced only once the new one is whole
    (:class:`~flock3d.core.atomic.AtomicFile`): a failed write leaves it as it was. Logarithmic
    axes are labelled with plain numbers (2, 30, 0.4), not matplotlib's 2x10^0.
    """
    plt = pyplot()
    import matplotlib
    from matplotlib.ticker import LogFormatter

    class Plain(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            return f"{x:g}"

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log":
                axis.set_major_formatter(Plain())
                axis.set_minor_formatter(Plain(labelOnlyBase=False))
    path = Path(path)
    # The format is the target's (matplotlib's default without a suffix), not the temporary name's.
    fmt = path.suffix[1:].lower() or matplotlib.rcParams["savefig.format"]
    try:
        with AtomicFile(path) as file:
            fig.savefig(file.temp, dpi=100, format=fmt)
    finally:
        plt.close(fig)
    return path


def plot_metrics(columns: dict[str, np.ndarray], path: str | Path, title: str = "") -> Path:
    """Order parameters, distances, the flock's extent and group count against time, as a PNG.

    Args:
        columns: the output of :func:`flock3d.metrics.table`, optionally with the
            correlation lengths of :func:`flock3d.metrics.correlation_table`.
        path: PNG file to write.
    """
    plt = pyplot()
    from matplotlib.ticker import MaxNLocator

    t = columns["time"]
    fig, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True, constrained_layout=True)
    order, spacing, shape, groups = axes
    order.plot(t, columns["polarization"], label="polarization")
    order.plot(t, columns["group_polarization"], label="polarization within groups", linestyle="--")
    order.plot(t, columns["milling"], label="milling")
    order.set_ylim(-0.02, 1.02)
    order.set_ylabel("order")
    order.legend(loc="best", fontsize="small")
    spacing.plot(t, columns["mean_distance"], label="mean distance")
    spacing.plot(t, columns["nn_mean"], label="mean nearest neighbour")
    spacing.plot(t, columns["nn_min"], label="closest pair", linestyle=":")
    if any(np.any(columns[name] > 0.0) for name in ("mean_distance", "nn_mean", "nn_min")):
        spacing.set_yscale("log")  # not when every boid is at one point: no distance to draw on it
    spacing.set_ylabel("distance (units)")
    spacing.legend(loc="best", fontsize="small")
    lines = {"size": "size L", "length": "length (ellipsoid)", "width": "width (ellipsoid)",
             "thickness": "thickness (ellipsoid)",
             "xi_velocity": "correlation length", "xi_speed": "speed correlation length"}  # fmt: skip
    for name, label in lines.items():
        if name in columns and np.isfinite(columns[name]).any():
            shape.plot(t, columns[name], label=label, linestyle="--" if name.startswith("xi") else "-")
    shape.set_ylabel("extent (units)")
    if shape.lines:
        shape.legend(loc="best", fontsize="small")
    else:  # a periodic box: the flock has no outline
        shape.text(
            0.5, 0.5, "no outline in a periodic box", ha="center", va="center", transform=shape.transAxes
        )
    groups.step(t, columns["groups"], where="post")
    groups.yaxis.set_major_locator(MaxNLocator(integer=True))
    groups.set_ylabel("groups")
    groups.set_xlabel("time (s)")
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def plot_maxent(fit, path: str | Path, title: str = "") -> Path:
    """A maximum-entropy fit as a PNG: log-likelihood per bird against n_c, C(r) measured and predicted.

    Args:
        fit: a :class:`flock3d.inference.MaxentFit`.
        path: PNG file to write.
    """
    plt = pyplot()

    fig, (likelihood, correlation) = plt.subplots(2, 1, figsize=(8, 8), constrained_layout=True)
    likelihood.plot(fit.n_c_values, fit.log_likelihood, "o-", ms=3)
    likelihood.axvline(fit.n_c, color="C3", lw=1, label=f"fit: n_c = {fit.n_c:.2f}, J = {fit.J:.3g}")
    likelihood.set_xlabel("range n_c (nearest neighbours)")
    likelihood.set_ylabel("log-likelihood per bird")
    likelihood.legend(fontsize="small")
    correlation.plot(fit.r, fit.measured, "o", ms=3, label="measured")
    correlation.plot(fit.r, fit.predicted, "-", label="predicted by the fitted model")
    correlation.axhline(0.0, color="k", lw=0.5)
    correlation.set_xlabel("distance r")
    correlation.set_ylabel("C(r), direction fluctuations")
    correlation.legend(fontsize="small")
    fig.suptitle(title or f"Topological maximum-entropy model: {fit.frames} snapshots of {fit.boids} boids")
    return save_figure(fig, path)
