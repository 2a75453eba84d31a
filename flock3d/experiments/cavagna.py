"""Cavagna et al. (2010): scale-free correlations."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from flock3d import metrics
from flock3d.core.params import Params
from flock3d.plots import save_figure

from .common import Result, _bar, _figure, experiment, new_flock, polarized_start

#: Fewest pairs a distance bin of the drawn C(r) holds; the flock's few widest pairs (r near L)
#: fill the last bins with a handful each, whose mean swings from -1 to 1.
FEW_PAIRS = 50


@experiment(
    "cavagna-correlations",
    "Scale-free correlations: the correlation length grows with the flock's size",
    "Cavagna, Cimarelli, Giardina, Parisi, Santagati, Stefanini and Viale (2010), PNAS 107:11865-11870",
)
def cavagna_correlations(quick: bool, seed: int, progress: bool | None) -> Result:
    """Correlation length xi against the flock's size L for polarized boids flocks of growing N.

    The boids model with its default parameters in open space (no arena). Each flock
    starts polarized (a ball at the default density, headings +x with Gaussian scatter
    0.5, polarization ~0.9) and flies for a while to reach its own steady fluctuations;
    then, at a few instants, its largest group (boids linked within the view distance)
    is measured: L (largest distance between two members), the first zeros xi of the
    correlation functions of velocity, direction and speed fluctuations, and xi with
    the group's overall rotation and dilation removed first.
    """
    if quick:
        sizes, settle, snapshots, gap = [300, 1000], 600, 2, 60
    else:
        sizes, settle, snapshots, gap = [1000, 3000, 10_000, 30_000, 100_000], 2400, 5, 120
    params = Params(arena_shape="none")
    names = ("n", "time", "boids", "polarization", "size", "xi_velocity", "xi_orientation", "xi_speed",
             "xi_velocity_members")  # fmt: skip
    rows = {k: [] for k in names}
    curves = {}
    with _bar(len(sizes) * (settle + snapshots * gap), "cavagna-correlations", progress) as bar:
        for n in sizes:
            positions, velocities = polarized_start(n, seed * 1000 + n)
            flock = new_flock(params.replace(count=n), positions=positions, velocities=velocities)
            flock.step(settle)
            bar.update(settle)
            for _ in range(snapshots):
                flock.step(gap)
                bar.update(gap)
                _, labels = metrics.groups(flock.positions, params.view_distance)
                group = labels == np.bincount(labels).argmax()
                p, v = flock.positions[group], flock.velocities[group]
                c = metrics.velocity_correlation(p, v)
                members = metrics.velocity_correlation(p, v, remove_modes=True)
                values = (n, flock.time, int(group.sum()), metrics.polarization(v), c.size, c.xi_velocity,
                          c.xi_orientation, c.xi_speed, members.xi_velocity)  # fmt: skip
                for key, value in zip(names, values, strict=True):
                    rows[key].append(value)
                # A bin of a few pairs (near r = L) is noise, not a correlation: left out of the curve.
                curves.setdefault(n, []).append(
                    (c.r / c.size, np.where(c.pairs >= FEW_PAIRS, c.velocity, np.nan))
                )
    columns = {k: np.array(v, dtype=np.int64 if k in ("n", "boids") else np.float64) for k, v in rows.items()}

    def per_size(name: str, divide: bool = True) -> np.ndarray:
        value = columns[name] / columns["size"] if divide else columns[name]
        return np.array([value[columns["n"] == n].mean() for n in sizes])

    ratio = {k: per_size(k) for k in ("xi_velocity", "xi_orientation", "xi_speed", "xi_velocity_members")}
    size, pol = per_size("size", False), per_size("polarization", False)
    lines = [
        f"{'N':>8} {'P':>6} {'L':>7} {'xi_v':>7} {'xi_v/L':>7} {'xi_o/L':>7} {'xi_s/L':>7} {'members':>8}"
    ]
    lines += [
        f"{n:>8,} {pol[k]:>6.3f} {size[k]:>7.1f} {ratio['xi_velocity'][k] * size[k]:>7.1f} "
        f"{ratio['xi_velocity'][k]:>7.3f} {ratio['xi_orientation'][k]:>7.3f} {ratio['xi_speed'][k]:>7.3f} "
        f"{ratio['xi_velocity_members'][k]:>8.3f}"
        for k, n in enumerate(sizes)
    ]
    slope = float(np.sum(size * ratio["xi_velocity"] * size) / np.sum(size * size))
    lines.append(
        f"flock3d: xi = {slope:.2f} L (least squares through 0; xi_v/L {ratio['xi_velocity'].min():.2f} to "
        f"{ratio['xi_velocity'].max():.2f} over N = {sizes[0]:,} to {sizes[-1]:,}; 'members': xi_v/L with "
        "the group's rotation and dilation removed)"
    )
    lines.append(
        "Cavagna et al. 2010 (starlings, N = 122 to 4,268): xi = 0.35 L; speed fluctuations also "
        "scale-free; in a system with short-range correlations xi would not grow with L."
    )

    def plot(path: Path) -> None:
        plt, fig, (scaling, shapes) = _figure(2, 9)
        kinds = {
            "xi_velocity": ("velocity", "o"),
            "xi_orientation": ("orientation", "^"),
            "xi_speed": ("speed", "s"),
            "xi_velocity_members": ("velocity, rotation and dilation removed", "x"),
        }
        for key, (label, marker) in kinds.items():
            scaling.plot(columns["size"], columns[key], marker, label=label, alpha=0.8)
        span = np.array([0.0, columns["size"].max() * 1.05])
        scaling.plot(span, 0.35 * span, "k--", label="Cavagna et al. 2010: xi = 0.35 L")
        scaling.set_xlabel("flock size L (largest distance between two boids, units)")
        scaling.set_ylabel("correlation length xi (units)")
        scaling.legend(fontsize="small")
        for n, snapshots_of_n in curves.items():
            x, y = (metrics.finite_mean([s[k] for s in snapshots_of_n], axis=0) for k in (0, 1))
            shapes.plot(x, y, label=f"N = {n:,}")
        shapes.axhline(0.0, color="k", lw=0.5)
        shapes.set_xlabel("r / L")
        shapes.set_ylabel(f"C(r), velocity fluctuations (bins of {FEW_PAIRS} pairs or more)")
        shapes.legend(fontsize="small")
        fig.suptitle("Scale-free correlations (Cavagna et al. 2010) in polarized boids flocks")
        save_figure(fig, path)

    return Result(columns, lines, plot)
