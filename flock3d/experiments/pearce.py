"""Pearce, Miller, Rowlands and Turner (2014): are flock3d's flocks marginally opaque?"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from flock3d import metrics
from flock3d.core.models.pearce import Pearce
from flock3d.core.params import Params
from flock3d.flock import Flock
from flock3d.opacity import sky_opacity, view_opacity
from flock3d.plots import save_figure

from .common import Result, _bar, _figure, experiment, new_flock, polarized_start

#: A bird's silhouette as a disc of this radius, in units of the flock's mean nearest-neighbour
#: distance r1: a starling seen from below hides about 0.035 m^2 (a 0.4 m wingspan by a 0.2 m
#: body, tapered), a disc of radius ~0.11 m, against r1 ~ 0.8 m in flocks (Ballerini et al. 2008:
#: 0.68 to 1.51 m). The trend with N does not depend on this choice; the level does.
BODY = 0.14
#: The opacities Pearce et al. report for starling flocks photographed from the ground.
STARLINGS = (0.25, 0.6)
#: The planar flocks' starting density [birds per unit area]: about the spacing the boids
#: model keeps (r1 ~ 2), and for the projection model (b = 1) a start far more opaque than it
#: settles to, so that the sweep shows it thinning out to its own opacity.
PLANAR_DENSITY = 0.1
#: The projection model's groups link birds within this many times the flock's mean
#: nearest-neighbour distance: the boids' link, 3 separation distances, over their spacing r1 = 2.
LINK = 2.25
#: How the interactions of the sweeps are made: Params overrides of a flock of N in open space.
KINDS = {
    "metric": {},
    "topological": {"neighbours": 7, "view_distance": 10.0},
    "projection": {"model": Pearce.name, "speed": 1.0, "dt": 1.0},
}


def _largest_group(positions: np.ndarray, link: float) -> np.ndarray:
    _, labels = metrics.groups(positions, link)
    return positions[labels == np.bincount(labels).argmax()]


def _measured(
    flock: Flock, link: float | None, body: float | None, dimensions: int = 3, everyone: bool = False
) -> dict[str, float]:
    """The largest group's size, spacing, shape and opacities (from below, or edge-on within the
    plane of a planar flock, along its thinnest axis, and from its birds, or with ``everyone``
    from every bird of the flock). Groups link birds within ``link``; None: :data:`LINK` times the
    whole flock's mean nearest-neighbour distance."""
    if link is None:
        link = LINK * float(metrics.nearest_neighbour_distances(flock.positions).mean())
    x = _largest_group(flock.positions, link)
    r1 = float(metrics.nearest_neighbour_distances(x).mean())
    b = BODY * r1 if body is None else body
    axes = metrics.principal_axes(x)
    semi = axes.semi_axes
    if dimensions == 2:  # the thinnest axis lies across the plane: take the thinner in it
        thin = axes.axes[1] * np.array([1.0, 1.0, 0.0])
        density = len(x) / (math.pi * semi[1] * semi[2])
    else:
        thin, density = axes.axes[0], len(x) / (4 / 3 * math.pi * semi[0] * semi[1] * semi[2])
    return {
        "group": len(x), "r1": r1, "body": b, "thickness": 2 * semi[3 - dimensions], "width": 2 * semi[1],
        "length": 2 * semi[2], "density": density, "polarization": metrics.polarization(flock.velocities),
        "sky": sky_opacity(x, b, (0.0, 1.0, 0.0), dimensions=dimensions),
        "sky_thin": sky_opacity(x, b, thin, dimensions=dimensions),
        "view": float(view_opacity(flock.positions if everyone else x, b, samples=128, dimensions=dimensions)
                      .mean()),
    }  # fmt: skip


def _settled(
    flock: Flock, steps: int, link: float | None, body: float | None, dimensions: int
) -> dict[str, float]:
    """The flock stepped ``steps`` and measured (:func:`_measured`) at five times over the last
    fifth of them, averaged: one snapshot of a flock that keeps changing shape is noisy."""
    gap = max(steps // 20, 1)
    flock.step(steps - 4 * gap)
    snapshots = []
    for k in range(5):
        if k:
            flock.step(gap)
        snapshots.append(_measured(flock, link, body, dimensions, everyone=link is None))
    return {key: float(np.mean([m[key] for m in snapshots])) for key in snapshots[0]}


def planar_start(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n birds uniform in a disc of the plane z = 0 at :data:`PLANAR_DENSITY`, heading +x with
    Gaussian scatter (sd 0.5 per component): positions [units] and unit velocities, (n, 3) each."""
    rng = np.random.default_rng(seed)
    radius = math.sqrt(n / (math.pi * PLANAR_DENSITY))
    angle, r = rng.uniform(0.0, 2.0 * math.pi, n), radius * np.sqrt(rng.uniform(0.0, 1.0, n))
    positions = np.stack([r * np.cos(angle), r * np.sin(angle), np.zeros(n)], axis=1)
    headings = np.array([1.0, 0.0, 0.0]) + 0.5 * rng.normal(size=(n, 3))
    headings[:, 2] = 0.0
    return positions, headings / np.linalg.norm(headings, axis=1, keepdims=True)


@experiment(
    "marginal-opacity",
    "Opacity against flock size and density: local interaction fixes the density, so larger flocks "
    "grow opaque; a rule that responds to the projection each bird sees keeps them marginally opaque",
    "Pearce, Miller, Rowlands and Turner (2014), PNAS 111:10422-10426",
)
def marginal_opacity(quick: bool, seed: int, progress: bool | None) -> Result:
    """The opacity of flocks against their size N, with three kinds of interaction, and against density.

    The interactions are metric, topological and projection-based (Pearce et al.'s,
    :mod:`flock3d.core.models.pearce`).

    Each flock starts polarized in open space (no arena: nothing but the birds' own rules sets the
    density) and settles; then it is measured (:mod:`flock3d.opacity`): the fraction of the sky it
    hides seen from the ground (looking up, +y; edge-on within the plane of a planar flock) and
    along its thinnest axis, and the mean fraction of the view each bird's neighbours block (the
    paper's internal opacity). The boids flocks (metric, topological) are measured on their
    largest group, each bird a disc of radius :data:`BODY` r1 (r1 its group's mean
    nearest-neighbour distance), so their size sweep measures the flock's structure, whatever its
    density. The projection model's birds are discs of its own radius b (the one its rule sees);
    its flocks fly as loose swarms of clusters, so the sky and the shape are measured on the largest
    cluster (birds within :data:`LINK` r1 of each other) and the blocked view from every bird (each
    sees every other, whichever cluster it is in). The planar sweep (the paper's main model is
    planar) and the projection model's rows are averaged over five times over the last fifth of
    the run (:func:`_settled`).
    The density sweep keeps the body of the default flock and spreads the birds by the separation
    distance.

    The optical depth through a flock of fixed density grows as its thickness, N^(1/3) (N^(1/2) in
    a plane): so -ln(1 - opacity) is fitted against N, and the sizes at which a flock would hide
    60 % and 90 % of the sky are read from the fit.
    """
    if quick:
        sizes, settle, spreads, projected = [100, 400], 400, [1.0, 1.5], []
        planar, planar_settle = [50, 400], 300
    else:
        sizes, settle, spreads, projected = (
            [100, 200, 400, 800, 1600, 3200],
            1500,
            [0.75, 1.0, 1.5, 2.0],
            [50, 100, 200],
        )
        planar, planar_settle = [50, 100, 200, 400], 1500
    link = 3.0 * Params().separation_distance  # groups: birds within 3 separation distances
    density_n = sizes[-1] // 2 if quick else 800
    rows: dict[str, list] = {k: [] for k in ("sweep", "interaction", "n", "spread")}

    def add(sweep: str, kind: str, n: int, spread: float, measured: dict[str, float]) -> None:
        for key, value in (("sweep", sweep), ("interaction", kind), ("n", n), ("spread", spread),
                           *measured.items()):  # fmt: skip
            rows.setdefault(key, []).append(value)

    def flock_of(kind: str, n: int, dimensions: int, positions, headings) -> tuple[Flock, Params]:
        params = Params(count=n, arena_shape="none", dimensions=dimensions, **KINDS[kind])
        speed = params.speed if kind == "projection" else 4.0  # boids: within the default limits
        return new_flock(params, positions=positions, velocities=speed * headings), params

    total = (2 * len(sizes) + len(spreads) + len(projected)) * settle + len(KINDS) * len(
        planar
    ) * planar_settle
    with _bar(total, "marginal-opacity", progress) as bar:
        default_body = None
        for kind in ("metric", "topological"):
            for n in sizes:
                p, v = polarized_start(n, seed * 1000 + n)
                flock, _ = flock_of(kind, n, 3, p, v / np.linalg.norm(v, axis=1, keepdims=True))
                flock.step(settle)
                bar.update(settle)
                measured = _measured(flock, link, None)
                add("size", kind, n, 1.0, measured)
                if kind == "metric" and n == density_n:
                    default_body = measured["body"]
        for n in projected:
            p, v = polarized_start(n, seed * 1000 + n)
            flock, params = flock_of("projection", n, 3, p, v / np.linalg.norm(v, axis=1, keepdims=True))
            add("size", "projection", n, 1.0, _settled(flock, settle, None, params.pearce_body, 3))
            bar.update(settle)
        for kind in KINDS:
            for n in planar:
                flock, params = flock_of(kind, n, 2, *planar_start(n, seed * 1000 + n))
                whole = kind == "projection"
                measured = _settled(flock, planar_settle, None if whole else link,
                                    params.pearce_body if whole else None, 2)  # fmt: skip
                add("plane", kind, n, 1.0, measured)
                bar.update(planar_settle)
        for spread in spreads:
            params = Params(count=density_n, arena_shape="none")
            params = params.replace(separation_distance=spread * params.separation_distance)
            p, v = polarized_start(density_n, seed * 1000 + 7)
            flock = new_flock(params, positions=p * spread, velocities=v)
            flock.step(settle)
            bar.update(settle)
            add("density", "metric", density_n, spread, _measured(flock, spread * link, default_body))
    columns = {key: np.array(v) for key, v in rows.items()}
    return Result(columns, _lines(columns, density_n, spreads), lambda path: _plot(columns, density_n, path))


def _at(columns: dict[str, np.ndarray], sweep: str, kind: str) -> np.ndarray:
    """Where the rows of one interaction in one sweep are, in order of N."""
    at = np.flatnonzero((columns["sweep"] == sweep) & (columns["interaction"] == kind))
    return at[np.argsort(columns["n"][at])]


def _fit(columns: dict[str, np.ndarray], sweep: str, kind: str, key: str = "sky") -> tuple[float, float]:
    """tau = a N^p for the optical depth tau = -ln(1 - opacity) of one sweep's rows: (a, p)."""
    at = _at(columns, sweep, kind)
    tau = -np.log1p(-np.minimum(columns[key][at], 1 - 1e-9))
    p, log_a = np.polyfit(np.log(columns["n"][at]), np.log(tau), 1)
    return math.exp(log_a), p


def _lines(columns: dict[str, np.ndarray], density_n: int, spreads: list[float]) -> list[str]:
    """The table, the fits and the comparison with the paper, as lines of text."""
    lines = [f"{'sweep':>7} {'interaction':>11} {'N':>5} {'group':>5} {'r1':>5} {'density':>8} "
             f"{'thick':>6} {'P':>5} {'sky (up)':>9} {'sky (thin)':>10} {'view':>5}"]  # fmt: skip
    for i in range(len(columns["n"])):
        c = {key: column[i] for key, column in columns.items()}
        lines.append(
            f"{c['sweep']:>7} {c['interaction']:>11} {c['n']:>5} {c['group']:>5.0f} {c['r1']:>5.2f} "
            f"{c['density']:>8.4f} {c['thickness']:>6.1f} {c['polarization']:>5.2f} {c['sky']:>9.3f} "
            f"{c['sky_thin']:>10.3f} {c['view']:>5.3f}"
        )
    lines.append("(plane: a planar flock, its sky seen edge-on within the plane; projection: Pearce et al.'s "
                 "rule, each bird a disc of its radius b = 1, its largest cluster measured but the view from "
                 "every bird)")  # fmt: skip
    for kind in ("metric", "topological"):
        a, p = _fit(columns, "size", kind)

        def at(opacity: float, a: float = a, p: float = p) -> str:  # an extrapolation: two figures
            return f"{float(f'{(-math.log(1 - opacity) / a) ** (1 / p):.2g}'):,.0f}"

        sizes = len(_at(columns, "size", kind))
        lines.append(
            f"flock3d, {kind}: optical depth -ln(1 - opacity) ~ N^{p:.2f} (fixed density: 1/3; fitted to "
            f"{sizes} sizes); extrapolated, the sky seen from the ground is {100 * STARLINGS[1]:.0f} % "
            f"hidden at N ~ {at(STARLINGS[1])} and 90 % at N ~ {at(0.9)}"
        )
    change = {}
    for sweep, words, seen, depth in (
        ("size", "3D", "from below", "1/3"),
        ("plane", "planar", "edge-on", "1/2"),
    ):
        for kind in KINDS:
            at = _at(columns, sweep, kind)
            if len(at) < 2:
                continue
            view, sky, n = columns["view"][at], columns["sky"][at], columns["n"][at]
            change[sweep, kind], exponent = view[-1] - view[0], _fit(columns, sweep, kind, "view")[1]
            lines.append(
                f"flock3d, {words}, {kind}: a bird's view blocked {view[0]:.2f} at N = {n[0]} to "
                f"{view[-1]:.2f} at N = {n[-1]} (change {change[sweep, kind]:+.2f}; optical depth ~ "
                f"N^{exponent:.2f}, fixed density: {depth}); the sky {seen} {sky[0]:.2f} to {sky[-1]:.2f}"
            )
    sweep = columns["sweep"] == "density"
    lines.append(
        f"flock3d, N = {density_n}, birds spread {spreads[0]:g} to {spreads[-1]:g} times (body fixed): sky "
        f"hidden {columns['sky'][sweep].max():.2f} to {columns['sky'][sweep].min():.2f}"
    )
    planar = {kind: change["plane", kind] for kind in KINDS}
    held = abs(planar["projection"]) < 0.5 * min(planar["metric"], planar["topological"])
    lines.append(
        f"Pearce et al. 2014: starling flocks photographed from the ground hide about {STARLINGS[0]:.2f} to "
        f"{STARLINGS[1]:.2f} of the sky at every size (marginal opacity); their projection rule keeps model "
        "flocks marginally opaque whatever N, where metric and topological rules let opacity grow with N."
    )
    verdict = "reproduced" if held else "NOT reproduced"
    at = _at(columns, "plane", "projection")
    largest = columns["group"][at[-1]] / columns["n"][at[-1]]
    lines.append(
        f"flock3d: {verdict} in the plane: the projection model's blocked view changes by "
        f"{planar['projection']:+.2f} over the sizes, the metric flock's by {planar['metric']:+.2f} and the "
        f"topological one's by {planar['topological']:+.2f} (levels differ: the boids' discs are "
        f"{BODY:g} r1, the projection model's its own b; the projection model flies in clusters, its largest "
        f"{largest:.0%} of its {columns['n'][at[-1]]} birds, its view taken from every bird)."
    )
    at = _at(columns, "size", "projection")
    if len(at) >= 2:
        n, group = columns["n"][at], columns["group"][at]
        boids = _at(columns, "size", "metric")
        boids = boids[(columns["n"][boids] >= n[0]) & (columns["n"][boids] <= n[-1])]
        grows = columns["view"][boids][-1] - columns["view"][boids][0] if len(boids) >= 2 else math.nan
        lines.append(
            f"flock3d: not shown in 3D: the projection model runs to N = {n[-1]} only (a step costs N^3), "
            f"where the metric flock's blocked view grows by {grows:+.2f} over those sizes, and it flies as "
            f"a swarm of clusters (the largest {group.min():.0f} to {group.max():.0f} birds)."
        )
    return lines


def _plot(columns: dict[str, np.ndarray], density_n: int, path: Path) -> None:
    plt, fig, (size_ax, plane_ax, density_ax) = _figure(3, 12)
    styles = dict(zip(KINDS, ("o-", "s--", "^-"), strict=True))
    for ax, sweep, sky in (
        (size_ax, "size", "sky hidden, from below"),
        (plane_ax, "plane", "sky hidden, edge-on"),
    ):
        for kind, style in styles.items():
            at = _at(columns, sweep, kind)
            if len(at):
                ax.plot(columns["n"][at], columns["sky"][at], style, label=f"{kind}: {sky}")
                ax.plot(columns["n"][at], columns["view"][at], style, alpha=0.5,
                        label=f"{kind}: a bird's view blocked")  # fmt: skip
        if sweep == "size":  # the starlings were photographed from below, not edge-on
            ax.axhspan(*STARLINGS, color="C2", alpha=0.15, label="starlings (Pearce et al. 2014)")
        ax.set_xscale("log")
        ax.set_xlabel(f"flock size N ({'3D' if sweep == 'size' else 'planar flocks'})")
        ax.set_ylabel("opacity")
        ax.set_ylim(0, 1)
        ax.legend(fontsize="x-small", ncol=2)
    sweep = columns["sweep"] == "density"
    density_ax.plot(
        columns["spread"][sweep], columns["sky"][sweep], "o-", label=f"N = {density_n}, fixed body"
    )
    density_ax.axhspan(*STARLINGS, color="C2", alpha=0.15)
    density_ax.set_xlabel("spacing (times the default separation distance)")
    density_ax.set_ylabel("sky hidden, seen from below")
    density_ax.set_ylim(0, 1)
    density_ax.legend(fontsize="small")
    fig.suptitle("Pearce et al. 2014: marginal opacity")
    save_figure(fig, path)
