"""The classic experiments of collective-motion studies, reproduced: ``flock3d experiment NAME``.

Each experiment is a function of ``(quick, seed, progress)`` that simulates, measures
and returns a :class:`Result`: a table (written as NAME.csv), the lines of its figure
side by side with the paper's (printed), and a plot (written as NAME.png).
``--quick`` runs a small instance in seconds, the one the tests run; the full run is
the reproduction. A new experiment is a function decorated with :func:`experiment`.

- ``couzin-memory``: Couzin et al. (2002), J. theor. Biol. 218:1, collective memory.
- ``cavagna-correlations``: Cavagna et al. (2010), PNAS 107:11865, scale-free correlations.
- ``vicsek-fig2a``: Vicsek et al. (1995), Phys. Rev. Lett. 75:1226, the order-disorder transition.
- ``ballerini-range``: Ballerini et al. (2008), PNAS 105:1232, topological rather than metric interaction.
- ``turning-waves``: Attanasi et al. (2014), Nature Physics 10:691, turns travel as waves in the inertial
  spin model.
- ``flock-shape``: Hemelrijk and Hildenbrandt (2011), PLoS ONE 6:e22479, the shape of flocks in aerodynamic
  flight.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from flock3d import metrics
from flock3d.core.params import COUZIN_DEFAULTS, VICSEK_DEFAULTS, Params
from flock3d.flock import Flock
from flock3d.plots import save_figure

__all__ = ["Experiment", "Result", "EXPERIMENTS", "experiment", "run_experiment"]


@dataclass
class Result:
    """What an experiment found.

    ``columns``: the table, equal-length arrays by column name (the CSV).
    ``lines``: the figure, as lines of text: the numbers next to the paper's.
    ``plot``: draws the figure into a PNG file.
    """

    columns: dict[str, np.ndarray]
    lines: list[str]
    plot: Callable[[Path], None]
    seconds: float = 0.0


@dataclass(frozen=True)
class Experiment:
    """A registered experiment: its name on the command line, what it reproduces, how to run it."""

    name: str
    title: str
    reference: str
    run: Callable[[bool, int, bool | None], Result] = field(repr=False)


#: The experiments by name, in the order they were registered.
EXPERIMENTS: dict[str, Experiment] = {}


def experiment(name: str, title: str, reference: str):
    """Register ``run(quick, seed, progress) -> Result`` as the experiment ``name``."""

    def register(run: Callable[[bool, int, bool | None], Result]):
        EXPERIMENTS[name] = Experiment(name, title, reference, run)
        return run

    return register


def run_experiment(name: str, quick: bool = False, seed: int = 0, progress: bool | None = None) -> Result:
    """Run the experiment ``name`` (a key of :data:`EXPERIMENTS`); returns its :class:`Result`."""
    start = time.perf_counter()
    result = EXPERIMENTS[name].run(quick, seed, progress)
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


@experiment(
    "couzin-memory",
    "Collective memory: the hysteresis loop in the width of the zone of orientation",
    "Couzin, Krause, James, Ruxton and Franks (2002), J. theor. Biol. 218:1-11",
)
def couzin_memory(quick: bool, seed: int, progress: bool | None) -> Result:
    """Widen the zone of orientation step by step from a swarm, then narrow it again from the parallel group.

    The paper's model and values (N = 100, r_r = 1, Delta r_a = 14, alpha = 270 deg,
    theta = 40 deg/s, s = 3, sigma = 0.05, tau = 0.1 s, open space). Each repeat
    starts from a random ball at Delta r_o = 0; at each value Delta r_o is set live
    on the same flock, which settles, then polarization and milling are averaged.
    The increasing branch ends in a parallel group, from which the decreasing one
    starts. Collective memory is the stretch of Delta r_o where the two branches
    differ: a mill on the way up, a parallel group on the way down.
    """
    if quick:
        values, repeats, settle, measure = np.arange(0.0, 6.1, 1.0), 2, 200, 200
    else:
        values, repeats, settle, measure = np.arange(0.0, 15.01, 0.5), 10, 500, 500
    base = Params(**{**COUZIN_DEFAULTS, "zone_orientation_width": 0.0, "zone_attraction_width": 14.0})
    sweep = [("up", v) for v in values] + [("down", v) for v in values[::-1]]
    rows = {k: [] for k in ("branch", "delta_r_o", "repeat", "polarization", "milling")}
    with _bar(repeats * len(sweep) * (settle + measure), "couzin-memory", progress) as bar:
        for repeat in range(repeats):
            flock = Flock(base, seed=seed * 1000 + repeat)
            flock.step(settle)  # a swarm forms from the random ball
            for branch, width in sweep:
                flock.params = flock.params.replace(zone_orientation_width=float(width))
                flock.step(settle)
                pol, mill = _order_over(flock, measure)
                for key, value in zip(rows, (branch, width, repeat, pol, mill), strict=True):
                    rows[key].append(value)
                bar.update(settle + measure)
    columns = {k: np.array(v) for k, v in rows.items()}
    columns["repeat"] = columns["repeat"].astype(np.int64)

    def mean(branch: str, name: str) -> np.ndarray:
        pick = columns["branch"] == branch
        return np.array([columns[name][pick & (columns["delta_r_o"] == v)].mean() for v in values])

    up_p, up_m, down_p, down_m = (
        mean("up", "polarization"),
        mean("up", "milling"),
        mean("down", "polarization"),
        mean("down", "milling"),
    )
    lines = [f"{'Delta r_o':>10} {'up: P':>8} {'up: M':>8} {'down: P':>8} {'down: M':>8}"]
    lines += [
        f"{v:>10.1f} {a:>8.2f} {b:>8.2f} {c:>8.2f} {d:>8.2f}"
        for v, a, b, c, d in zip(values, up_p, up_m, down_p, down_m, strict=True)
    ]
    memory = values[(up_m > 0.5) & (down_p > 0.5)]
    mills = values[up_m > 0.5]
    span = lambda v: f"[{v.min():g}, {v.max():g}]" if len(v) else "(none)"  # noqa: E731
    lines.append(
        f"flock3d ({repeats} repeats, N = 100, Delta r_a = 14): on the way up a mill (M > 0.5) for "
        f"Delta r_o in {span(mills)}; memory, a mill up and a parallel group (P > 0.5) down, for "
        f"Delta r_o in {span(memory)}"
    )
    lines.append(
        "Couzin et al. 2002: from a swarm, widening the zone of orientation gives a torus before the "
        "parallel group; from a parallel group, narrowing it keeps the group parallel where the way up "
        "gave a torus, until it breaks into a swarm: the state depends on the group's history."
    )

    def plot(path: Path) -> None:
        plt, fig, (order,) = _figure(1, 5)
        order.plot(values, up_p, "o-", color="C0", label="polarization, increasing")
        order.plot(values, down_p, "s--", color="C0", mfc="none", label="polarization, decreasing")
        order.plot(values, up_m, "o-", color="C3", label="milling, increasing")
        order.plot(values, down_m, "s--", color="C3", mfc="none", label="milling, decreasing")
        order.set_xlabel("width of the zone of orientation, Delta r_o")
        order.set_ylabel("order")
        order.set_ylim(-0.02, 1.02)
        order.legend(loc="center right", fontsize="small")
        fig.suptitle(f"Collective memory (Couzin et al. 2002): N = 100, {repeats} repeats")
        save_figure(fig, path)

    return Result(columns, lines, plot)


# -- Cavagna et al. (2010): scale-free correlations -----------------------------------------

#: Boids per cubic unit of the initial ball: the default scene's (500 boids in a ball of radius 15).
_DENSITY = 500 / (4 / 3 * math.pi * 15.0**3)


def polarized_start(n: int, seed: int, spread: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """n boids uniform in a ball at the default scene's density, heading +x with Gaussian scatter.

    Returns (positions, velocities), each (n, 3); speeds uniform in [3, 6] (the default limits).
    """
    rng = np.random.default_rng(seed)
    radius = (3 * n / (4 * math.pi * _DENSITY)) ** (1 / 3)
    d = rng.normal(size=(n, 3))
    positions = d / np.linalg.norm(d, axis=1, keepdims=True) * radius * rng.uniform(0, 1, (n, 1)) ** (1 / 3)
    headings = np.array([1.0, 0.0, 0.0]) + spread * rng.normal(size=(n, 3))
    headings /= np.linalg.norm(headings, axis=1, keepdims=True)
    return positions, headings * rng.uniform(3.0, 6.0, (n, 1))


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
            flock = Flock(params.replace(count=n), positions=positions, velocities=velocities)
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
                curves.setdefault(n, []).append((c.r / c.size, c.velocity))
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
        scaling.set_xlabel("flock size L (largest distance between two boids)")
        scaling.set_ylabel("correlation length xi")
        scaling.legend(fontsize="small")
        for n, snapshots_of_n in curves.items():
            x, y = (metrics.finite_mean([s[k] for s in snapshots_of_n], axis=0) for k in (0, 1))
            shapes.plot(x, y, label=f"N = {n:,}")
        shapes.axhline(0.0, color="k", lw=0.5)
        shapes.set_xlabel("r / L")
        shapes.set_ylabel("C(r), velocity fluctuations")
        shapes.legend(fontsize="small")
        fig.suptitle("Scale-free correlations (Cavagna et al. 2010) in polarized boids flocks")
        save_figure(fig, path)

    return Result(columns, lines, plot)


# -- Vicsek et al. (1995): the order-disorder transition ------------------------------------


@experiment(
    "vicsek-fig2a",
    "The order-disorder transition: the order parameter v_a against the noise eta, for growing N",
    "Vicsek, Czirok, Ben-Jacob, Cohen and Shochet (1995), Phys. Rev. Lett. 75:1226-1229, Fig. 2a",
)
def vicsek_fig2a(quick: bool, seed: int, progress: bool | None) -> Result:
    """v_a = |sum v_i| / (N v0) against eta at density 4 for N = 40, 100, 400 and 4,000, with the
    particles moved by their new velocity and by their old one.

    The paper's model and values (``model = "vicsek"``: a periodic square of side L = sqrt(N / 4),
    v0 = 0.03, r = 1, Delta t = 1, noise uniform in [-eta/2, eta/2]). Each run starts from
    random positions and directions, settles, and then v_a is averaged over the measuring
    steps (sampled every 10) and over repeats (more for the small flocks, which fluctuate
    more). Ordering from random directions takes longer in a larger box, so N = 4,000
    settles twice as long; at eta = 0 exactly, with no noise to merge them, its domains of
    different directions may still be there when it is measured (v_a below 1).

    Every run is made twice from the same start and noise: with ``vicsek.position_update =
    "new"`` (x(t+1) = x(t) + v(t+1): flock3d's default, Chaté et al. 2008's forward update)
    and ``"old"`` (x(t+1) = x(t) + v(t), as the paper writes its Eq. 1).
    """
    if quick:
        sizes, etas, repeats = [40, 400], np.array([0.5, 2.5, 4.5]), {40: 3, 400: 1}
        settle, measure = 500, 500
    else:
        sizes, etas = [40, 100, 400, 4000], np.arange(0.0, 5.01, 0.5)
        repeats, settle, measure = {40: 8, 100: 6, 400: 4, 4000: 1}, 2000, 2000
    updates = ("new", "old")
    base = Params(**VICSEK_DEFAULTS)
    rows = {k: [] for k in ("position_update", "n", "side", "eta", "repeat", "v_a")}
    total = len(updates) * sum(repeats[n] * len(etas) * (settle * (1 + (n >= 4000)) + measure) for n in sizes)
    with _bar(total, "vicsek-fig2a", progress) as bar:
        for update in updates:
            for n in sizes:
                side = math.sqrt(n / 4.0)  # density 4
                wait = settle * (1 + (n >= 4000))
                for eta in etas:
                    params = base.replace(count=n, arena_radius=side / 2, noise_eta=float(eta),
                                          position_update=update)  # fmt: skip
                    for repeat in range(repeats[n]):
                        flock = Flock(params, seed=seed * 1000 + repeat)
                        flock.step(wait)
                        v_a, _ = _order_over(flock, measure)
                        for key, value in zip(rows, (update, n, side, eta, repeat, v_a), strict=True):
                            rows[key].append(value)
                        bar.update(wait + measure)
    columns = {k: np.array(v) for k, v in rows.items()}  # strings, whole numbers and floats

    def curve(update: str, n: int) -> np.ndarray:
        pick = (columns["position_update"] == update) & (columns["n"] == n)
        return np.array([columns["v_a"][pick & (columns["eta"] == e)].mean() for e in etas])

    mean = {(u, n): curve(u, n) for u in updates for n in sizes}
    width = 11 * len(sizes) - 1  # a group of columns, each 10 wide and one apart
    lines = [f"{'':>6} {'moved by v(t+1): new':>{width}} {'by v(t): old':>{width}}",
             f"{'eta':>6} " + " ".join(f"{f'N = {n:,}':>10}" for _ in updates for n in sizes)]  # fmt: skip
    lines += [
        f"{e:>6.2f} " + " ".join(f"{mean[u, n][k]:>10.3f}" for u in updates for n in sizes)
        for k, e in enumerate(etas)
    ]
    lines.append(
        "disordered (random directions): "
        + ", ".join(f"N = {n:,}: {math.sqrt(math.pi / (4 * n)):.3f}" for n in sizes)
    )
    for n in sizes:
        shift = mean["old", n] - mean["new", n]
        lines.append(
            f"old - new, N = {n:,}: "
            + ", ".join(f"{d:+.3f} (eta {e:g})" for d, e in zip(shift, etas, strict=True))
        )
    lines.append(
        "Vicsek et al. 1995, Fig. 2a (density 4, N = 40 to 4,000): v_a ~ 1 at eta = 0 for every N, "
        "falling towards 0 as eta grows to 5; the larger N, the sharper the fall (in the limit a "
        "transition at eta_c, v_a ~ (eta_c - eta)^0.45). The paper's Eq. 1 moves a particle with "
        "its old velocity; Chate et al. 2008 and most later work with the new one."
    )

    def plot(path: Path) -> None:
        plt, fig, (order,) = _figure(1, 5)
        for k, n in enumerate(sizes):
            for update, style in zip(updates, ("-", "--"), strict=True):
                order.plot(etas, mean[update, n], "os^D"[k % 4] + style, color=f"C{k}",
                           mfc="none" if update == "old" else None, label=f"N = {n:,}, {update}")  # fmt: skip
        order.set_xlabel("noise eta")
        order.set_ylabel("order parameter v_a")
        order.set_ylim(-0.02, 1.02)
        order.legend(fontsize="small", ncol=2)
        fig.suptitle("Vicsek et al. 1995, Fig. 2a: density 4, v0 = 0.03, r = 1; moved by the new (solid) "
                     "or old (dashed) velocity", fontsize="medium")  # fmt: skip
        save_figure(fig, path)

    return Result(columns, lines, plot)


# -- Ballerini et al. (2008): topological rather than metric interaction ----------------------


def _box_anisotropy(params: Params, seeds: list[int], settle: int, frames: int, gap: int, ranks: int, bar):
    """gamma(n) (n = 1 ... ``ranks``), nearest-neighbour distance and polarization in a periodic box.

    One flock per seed, started uniform in the box with the headings of :func:`polarized_start`,
    settles for ``settle`` steps and is then measured ``frames`` times, every ``gap`` steps.
    Returns the lists of gamma curves, mean nearest-neighbour distances and polarizations, one
    entry per frame of every flock.
    """
    side = 2.0 * params.arena_radius
    box = metrics.periodic_box(params)
    curves, r1, pol = [], [], []
    for run_seed in seeds:
        _, velocities = polarized_start(params.count, run_seed)
        positions = np.random.default_rng(run_seed).uniform(-side / 2, side / 2, (params.count, 3))
        flock = Flock(params, positions=positions, velocities=velocities)
        flock.step(settle)
        bar.update(settle)
        for _ in range(frames):
            flock.step(gap)
            bar.update(gap)
            p, v = flock.positions, flock.velocities
            curves.append(metrics.neighbour_anisotropy(p, v, ranks, period=box).gamma)
            r1.append(metrics.nearest_neighbour_distances(p, period=box).mean())
            pol.append(metrics.polarization(v))
    return curves, r1, pol


@experiment(
    "ballerini-range",
    "Topological range: n_c stays put when the density changes with topological interaction, "
    "and grows with it with metric interaction",
    "Ballerini, Cabibbo, Candelier, Cavagna, Cisbani, Giardina, Lecomte, Orlandi, Parisi, Procaccini, "
    "Viale and Zdravkovic (2008), PNAS 105:1232-1237",
)
def ballerini_range(quick: bool, seed: int, progress: bool | None) -> Result:
    """The anisotropy gamma(n) of the n-th nearest neighbour and its range n_c at densities 1 to 1/8.

    Boids in a periodic cube whose side fixes the density rho = N / L^3, flying one way
    (started uniform in the box, headings +x with scatter as :func:`polarized_start`).
    Separation acts on the whole interaction neighbourhood (r_s = r_v) but only from the
    boids in the half space ahead of the boid (separation cone 180): the one behind gives
    way, the one ahead does not. The boids then settle with their nearest neighbours
    beside them, missing along the motion, as the starlings'. Alignment is weaker than the
    default (2 rather than 5: with 5 the farther pushes of a metric neighbourhood order
    less of it), cohesion is off (the box holds the density), perception all round (cone 360).
    The neighbourhood is either topological, the k = 6 nearest (candidates within 3.5,
    well beyond the 6th neighbour at every density), or metric, every boid within r = 2.
    A narrower separation cone (90) gives a sharper gamma(n) at first, but with nothing
    pushing sideways the boids then pack into sheets across the motion that thicken with
    time, and gamma stays high far past the interaction range.

    After settling, gamma(n) is measured at many instants of each repeat (minimum image, so
    every boid counts), averaged, and n_c read where it reaches 1/3
    (:func:`metrics.topological_range`).
    Ballerini et al.'s test: with topological interaction n_c stays put as the density
    changes; with metric interaction it follows the number of boids within r, rho 4/3 pi r^3.

    What the full run shows (seed 0): topological n_c stays at 6.9 to 8.5 (k + 0.9 to k +
    2.5, a little higher in denser boxes) while the density changes eightfold and r1 doubles
    (0.65 to 1.41); metric n_c follows the boids within r, 5.0, 8.2, 13.2 and 25.0 for 4.2,
    8.2, 15.3 and 33.5 within r. Past n_c gamma does not settle at 1/3: the next neighbours sit
    ahead and behind (gamma near 0) and farther ones beside again, the layers of a
    polarized box.
    """
    k, radius, candidates = 6, 2.0, 3.5
    if quick:
        n, spacings, repeats, settle, frames, gap, ranks = 400, [1.0, 2.0], 1, 1200, 20, 20, 40
    else:
        n, spacings, repeats, settle, frames, gap, ranks = 2000, [1.0, 1.3, 1.6, 2.0], 3, 1200, 50, 20, 48
    base = Params(
        arena_shape="periodic", count=n, fov=360.0, separation_fov=180.0, alignment=2.0, cohesion=0.0
    )
    kinds = {
        "topological": base.replace(neighbours=k, view_distance=candidates, separation_distance=candidates),
        "metric": base.replace(view_distance=radius, separation_distance=radius),
    }
    names = ("interaction", "spacing", "density", "side", "within_r", "r1", "polarization", "n_c")
    rows = {key: [] for key in names}
    gammas = []
    total = len(kinds) * len(spacings) * repeats * (settle + frames * gap)
    with _bar(total, "ballerini-range", progress) as bar:
        for kind, params in kinds.items():
            for spacing in spacings:
                side = spacing * n ** (1 / 3)  # rho = N / L^3 = 1 / spacing^3
                seeds = [seed * 10_000 + repeat * 1000 + round(100 * spacing) for repeat in range(repeats)]
                curves, r1, pol = _box_anisotropy(params.replace(arena_radius=side / 2), seeds, settle,
                                                  frames, gap, ranks, bar)  # fmt: skip
                gamma = metrics.finite_mean(curves, axis=0)
                density = 1.0 / spacing**3
                within = density * 4 / 3 * math.pi * radius**3
                values = (kind, spacing, density, side, within, np.mean(r1), np.mean(pol),
                          metrics.topological_range(gamma))  # fmt: skip
                for key, value in zip(names, values, strict=True):
                    rows[key].append(value)
                gammas.append(gamma)
    columns = {key: np.array(v) for key, v in rows.items()}
    columns.update({f"gamma_{r + 1}": np.array([g[r] for g in gammas]) for r in range(ranks)})

    top, met = ({name: c[columns["interaction"] == kind] for name, c in columns.items()} for kind in kinds)
    lines = [f"{'density':>8} {'r1 top.':>8} {'r1 met.':>8} {'gamma_1 top.':>13} {'n_c top.':>9} "
             f"{'n_c met.':>9} {'within r':>9}"]  # fmt: skip
    lines += [
        f"{top['density'][i]:>8.3f} {top['r1'][i]:>8.2f} {met['r1'][i]:>8.2f} {top['gamma_1'][i]:>13.2f} "
        f"{top['n_c'][i]:>9.2f} {met['n_c'][i]:>9.2f} {met['within_r'][i]:>9.1f}"
        for i in range(len(spacings))
    ]
    span = lambda v, f=".2f": f"{np.nanmin(v):{f}} to {np.nanmax(v):{f}}"  # noqa: E731
    lines.append(
        f"flock3d (N = {n:,}, periodic box, density {span(top['density'], '.3g')}): "
        f"topological (k = {k}) n_c {span(top['n_c'])}; metric (r = {radius:g}) n_c {span(met['n_c'])}, "
        f"against {span(met['within_r'])} boids within r (ideal gas, rho 4/3 pi r^3)"
    )
    lines.append(
        "Ballerini et al. 2008 (starlings, r1 = 0.7 to 1.5 m): gamma(1) ~ 0.6 falling to 1/3 at "
        "n_c = 6.5 whatever the density; metric interaction would make n_c grow with the density."
    )

    def plot(path: Path) -> None:
        plt, fig, (curves_ax, range_ax) = _figure(2, 9)
        styles = {"topological": "-", "metric": "--"}
        colours = {d: f"C{i}" for i, d in enumerate(sorted(set(columns["density"]), reverse=True))}
        for kind, gamma, density in zip(columns["interaction"], gammas, columns["density"], strict=True):
            curves_ax.plot(np.arange(1, ranks + 1), gamma, styles[kind], color=colours[density],
                           label=f"{kind}, density {density:.3g}")  # fmt: skip
        curves_ax.axhline(1 / 3, color="k", lw=0.5)
        curves_ax.set_xlabel("neighbour rank n")
        curves_ax.set_ylabel("anisotropy gamma(n)")
        curves_ax.set_ylim(-0.02, 1.02)
        curves_ax.legend(fontsize="small", ncol=2)
        range_ax.plot(top["density"], top["n_c"], "o-", label=f"topological, k = {k}: measured n_c")
        range_ax.plot(met["density"], met["n_c"], "s--", label=f"metric, r = {radius:g}: measured n_c")
        range_ax.plot(met["density"], met["within_r"], "k:", label="boids within r (ideal gas)")
        range_ax.axhline(6.5, color="C2", lw=1, label="Ballerini et al. 2008: n_c = 6.5")
        range_ax.set_xlabel("density rho (boids per unit volume)")
        range_ax.set_ylabel("topological range n_c")
        range_ax.legend(fontsize="small")
        fig.suptitle(f"Ballerini et al. 2008: topological (k = {k}) vs metric (r = {radius:g}) interaction")
        save_figure(fig, path)

    return Result(columns, lines, plot)


# -- Attanasi et al. (2014): turns travel through the flock as waves --------------------------

#: The flock of turning-waves: length (along the heading), thickness (vertical) and width (across,
#: where the turn travels) of a box holding 960 birds at density 1; scaled as the cube root of N.
_TURNING_BOX = np.array([8.0, 5.0, 24.0])


def _turning_flock(params: Params, seed: int) -> Flock:
    """``params.count`` birds uniform in the turning box (density 1), all heading +x at the speed."""
    n = params.count
    rng = np.random.default_rng(seed)
    positions = rng.uniform(-0.5, 0.5, (n, 3)) * _TURNING_BOX * (n / 960) ** (1 / 3)
    velocities = np.tile([params.speed, 0.0, 0.0], (n, 1))
    return Flock(params, positions=positions, velocities=velocities, seed=seed)


def _turned_by_leaders(flock: Flock, theta: float, tau: float, steps: int, share: float):
    """Turn the birds at the flock's edge by ``theta`` and follow the others' turns.

    The ``share`` of the birds farthest along the side (the heading x up) are the leaders: over
    ``tau`` seconds they turn towards that side by ``theta`` (a smoothstep in time), and then hold
    their new heading. The flock steps ``steps`` times. Returns (leaders, distances, turns):
    each bird's distance to the nearest leader when the turn starts, and (steps + 1, N) the angle
    each bird's heading has turned by, in the plane of the turn.
    """
    from flock3d.core import quaternion

    speed = np.linalg.norm(flock.velocities, axis=1).mean()
    e1 = flock.velocities.sum(axis=0)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(e1, [0.0, 1.0, 0.0])
    e2 /= np.linalg.norm(e2)
    along = (flock.positions - flock.positions.mean(axis=0)) @ e2
    leaders = np.argsort(-along, kind="stable")[: max(1, round(share * len(flock)))]
    p = flock.positions
    distances = np.min(np.linalg.norm(p[:, None, :] - p[None, leaders, :], axis=2), axis=1)

    def angles() -> np.ndarray:
        return np.arctan2(flock.velocities @ e2, flock.velocities @ e1)

    angle = np.empty((steps + 1, len(flock)))
    angle[0] = angles()
    dt, spin = flock.params.dt, flock.params.model == "ism"
    for k in range(steps):
        u = min(1.0, (k + 1) * dt / tau)
        lead = angle[0, leaders] + theta * u * u * (3.0 - 2.0 * u)
        headings = np.cos(lead)[:, None] * e1 + np.sin(lead)[:, None] * e2
        flock.velocities[leaders] = speed * headings
        flock.orientations[leaders] = quaternion.look_rotation(headings)
        if spin:  # the leaders' spins: chi times their angular velocity, about e1 x e2
            rate = theta * 6.0 * u * (1.0 - u) / tau if u < 1.0 else 0.0
            flock.state.spins[leaders] = flock.params.ism_inertia * rate * np.cross(e1, e2)
        flock.step()
        angle[k + 1] = angles()
    return leaders, distances, np.unwrap(angle, axis=0) - angle[0]


def _arrivals(distances, turns, theta: float, dt: float, smooth: float = 0.5) -> dict[str, float]:
    """What a turn did to the birds that did not lead it (``distances``, ``turns`` of those only).

    Each bird's turn is smoothed over ``smooth`` seconds; it has *arrived* when it first reaches
    half the leaders' turn, theta / 2. Returns the share that arrived (all, and of the farthest
    quarter), the least-squares line of the arrival time against the distance (its R^2 and the
    speed, 1 / slope), the exponent p of arrival time ~ distance^p (over distances beyond 2), and
    each bird's peak turning rate, farthest quarter over nearest quarter.
    """
    width = max(1, round(smooth / dt))
    kernel = np.ones(width) / width
    smoothed = np.apply_along_axis(lambda a: np.convolve(a, kernel, mode="same"), 0, turns)
    above = smoothed >= theta / 2
    arrived = above.any(axis=0)
    time = np.where(arrived, np.argmax(above, axis=0) * dt, np.nan)
    peak = np.abs(np.diff(smoothed, axis=0)).max(axis=0) / dt
    near, far = distances <= np.quantile(distances, 0.25), distances >= np.quantile(distances, 0.75)
    out = {"arrived": arrived.mean(), "far_arrived": arrived[far].mean(), "r2": np.nan, "speed": np.nan,
           "exponent": np.nan, "rate_ratio": peak[far].mean() / peak[near].mean()}  # fmt: skip
    x, t = distances[arrived], time[arrived]
    if len(x) > 5 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, t, 1)
        out["r2"] = 1.0 - np.sum((t - slope * x - intercept) ** 2) / np.sum((t - t.mean()) ** 2)
        out["speed"] = 1.0 / slope if slope > 0 else np.nan
    beyond = (x > 2.0) & (t > 0)
    if beyond.sum() > 5:
        out["exponent"] = np.polyfit(np.log(x[beyond]), np.log(t[beyond]), 1)[0]
    return out


@experiment(
    "turning-waves",
    "Turns travel through an inertial spin flock as waves, linearly and undiminished, and faster in more "
    "ordered flocks; through an aligning flock they diffuse and fade",
    "Attanasi, Cavagna, Del Castello, Giardina, Grigera, Jelic, Melillo, Parisi, Pohl, Shen and Viale "
    "(2014), Nature Physics 10:691-696; Cavagna et al. (2015), J. Stat. Phys. 158:601-627",
)
def turning_waves(quick: bool, seed: int, progress: bool | None) -> Result:
    """The birds at one edge of a flock turn; when does each other bird turn, and by how much?

    1,000 birds (500 quick) in a box 8 x 5 x 24 at density 1 (length along the heading,
    thickness, width), all heading one way at v0 = 0.2, interacting with those within r = 1.2
    (about 7 neighbours; metric, so that the coupling is reciprocal and the inertial spin
    model's total spin is conserved), dt = 0.05. The flock first flies 10 s to settle its
    fluctuations; then the 5 % of birds at the edge on one side turn towards it by 90 degrees
    over 1 s, and hold their new heading, while the flock is followed for 50 s (25 s quick).

    The inertial spin model (chi = 1.25, friction eta = 0.02, T = 0.05; it settles with friction
    1, which reaches the same fluctuations faster) is run at couplings J = 1 to 16 (8 quick):
    the larger J, the more ordered and the faster the wave. The same turn is given to the Vicsek
    model (3D, eta = 0.3, in a periodic box four times the flock's width) and to boids that only
    align (k_a = 5 /s, no separation or cohesion). For each run, :func:`_arrivals` measures the
    arrival times against the distance to the nearest leader.
    """
    if quick:
        n, couplings, seeds, watch = 1000, [8.0], [seed], 25.0
    else:
        n, couplings, seeds, watch = 1000, [1.0, 2.0, 4.0, 8.0, 16.0], [seed * 10 + k for k in range(3)], 50.0
    dt, speed, radius, theta, tau, settle, share = 0.05, 0.2, 1.2, math.radians(90.0), 1.0, 10.0, 0.05
    spin = Params(model="ism", count=n, arena_shape="none", speed=speed, view_distance=radius, fov=360.0,
                  max_turn_rate=math.inf, dt=dt, ism_inertia=1.25, ism_friction=0.02,
                  ism_temperature=0.05)  # fmt: skip
    runs = [(f"ISM, J = {j:g}", spin.replace(ism_coupling=j), spin.replace(ism_coupling=j, ism_friction=1.0))
            for j in couplings]  # fmt: skip
    vicsek = Params(**{**VICSEK_DEFAULTS, "count": n, "dimensions": 3, "speed": speed, "dt": dt,
                       "view_distance": radius, "noise_eta": 0.3,
                       "arena_radius": 2.0 * _TURNING_BOX[2]})  # fmt: skip
    boids = Params(count=n, arena_shape="none", min_speed=speed, max_speed=speed, separation=0.0,
                   cohesion=0.0, separation_distance=radius, alignment=5.0, view_distance=radius, fov=360.0,
                   max_turn_rate=math.inf, dt=dt)  # fmt: skip
    runs += [("Vicsek", vicsek, vicsek), ("boids alignment", boids, boids)]
    names = ("model", "coupling", "seed", "polarization", "arrived", "far_arrived", "r2", "speed", "exponent",
             "rate_ratio")  # fmt: skip
    rows = {key: [] for key in names}
    scatter = {}
    steps, settling = round(watch / dt), round(settle / dt)
    with _bar(len(runs) * len(seeds) * (steps + settling), "turning-waves", progress) as bar:
        for label, params, settling_params in runs:
            for run_seed in seeds:
                flock = _turning_flock(settling_params, run_seed)
                flock.step(settling)
                flock.params = params
                polarization = metrics.polarization(flock.velocities)
                leaders, distances, turns = _turned_by_leaders(flock, theta, tau, steps, share)
                others = np.setdiff1d(np.arange(n), leaders)
                found = _arrivals(distances[others], turns[:, others], theta, dt)
                coupling = params.ism_coupling if params.model == "ism" else np.nan
                values = {"model": label, "coupling": coupling, "seed": run_seed,
                          "polarization": polarization, **found}  # fmt: skip
                for key in names:
                    rows[key].append(values[key])
                scatter.setdefault(label, (distances[others], turns[:, others]))
                bar.update(steps + settling)
    columns = {key: np.array(v) for key, v in rows.items()}
    labels = list(dict.fromkeys(columns["model"]))
    mean = {label: {k: metrics.finite_mean(columns[k][columns["model"] == label]) for k in names[3:]}
            for label in labels}  # fmt: skip
    head = ("P", "arrived", "far", "R^2", "speed", "p", "rate far/near")
    lines = [f"{'model':<16} " + " ".join(f"{h:>7}" for h in head)]
    for label, m in mean.items():
        cells = (m["polarization"], m["arrived"], m["far_arrived"], m["r2"], m["speed"], m["exponent"])
        lines.append(f"{label:<16} {cells[0]:>7.3f} " + " ".join(f"{c:>7.2f}" for c in cells[1:])
                     + f" {m['rate_ratio']:>13.2f}")  # fmt: skip
    spins = [label for label in labels if label.startswith("ISM")]
    order = np.array([mean[label]["polarization"] for label in spins])
    speeds = np.array([mean[label]["speed"] for label in spins])
    if len(spins) > 1:
        stiff = 1.0 / np.sqrt(1.0 - order)
        ok = np.isfinite(speeds)
        slope = float(np.sum(stiff[ok] * speeds[ok]) / np.sum(stiff[ok] ** 2))
        correlation = np.corrcoef(order[ok], speeds[ok])[0, 1]
        lines.append(
            f"flock3d ISM: the wave speed grows with the polarization (correlation {correlation:.2f}), from "
            f"{speeds[ok].min():.2f} at P = {order[ok].min():.3f} to {speeds[ok].max():.2f} at P = "
            f"{order[ok].max():.3f}; least squares: speed = {slope:.3f} / sqrt(1 - P)"
        )
    lines.append(
        f"(N = {n:,}, {len(seeds)} seed(s); 'arrived': share of the birds whose turn reached 45 degrees "
        f"within {watch:g} s, 'far': of the farthest quarter; R^2 and speed: least-squares line of arrival "
        "time against distance to the nearest leader; p: arrival time ~ distance^p (1 for a wave, 2 for "
        "diffusion); rate far/near: peak turning rate, farthest quarter over nearest)"
    )
    lines.append(
        "Attanasi et al. 2014 (starlings): a turn starts with a few birds and reaches the others in a "
        "time linear in their distance from the first (linear dispersion), with negligible attenuation, "
        "at 20 to 40 m/s, and faster in more polarized flocks, as the inertial spin model predicts "
        "(c_s ~ 1 / sqrt(1 - P) at fixed noise); a model of alignment alone spreads it by diffusion, "
        "slowly and damped."
    )

    def plot(path: Path) -> None:
        plt, fig, (arrival, order_ax, reach) = _figure(3, 13)
        shown = [label for label in labels if not label.startswith("ISM")] + spins[len(spins) // 2 :][:1]
        for k, label in enumerate(shown):
            distances, turns = scatter[label]
            above = turns >= theta / 2
            t = np.where(above.any(axis=0), np.argmax(above, axis=0) * dt, np.nan)
            arrival.plot(distances, t, ".", ms=3, alpha=0.5, color=f"C{k}", label=label)
            bins = np.linspace(0.0, distances.max(), 13)
            middle = 0.5 * (bins[1:] + bins[:-1])
            at = np.digitize(distances, bins) - 1
            reach.plot(middle, [np.degrees(turns[-1, at == b].mean()) if np.any(at == b) else np.nan
                                for b in range(len(middle))], "o-", color=f"C{k}", label=label)  # fmt: skip
        arrival.set_xlabel("distance from the nearest leader")
        arrival.set_ylabel("arrival time of the turn (45 degrees), s")
        arrival.legend(fontsize="small")
        order_ax.plot(order, speeds, "o", label="ISM, J = " + ", ".join(f"{c:g}" for c in couplings))
        if len(spins) > 1:
            grid = np.linspace(order.min(), order.max(), 50)
            order_ax.plot(grid, slope / np.sqrt(1.0 - grid), "k--", label="speed ~ 1 / sqrt(1 - P)")
        order_ax.set_xlabel("polarization P")
        order_ax.set_ylabel("wave speed (units/s)")
        order_ax.legend(fontsize="small")
        reach.axhline(90.0, color="k", lw=0.5)
        reach.set_xlabel("distance from the nearest leader")
        reach.set_ylabel(f"turn after {watch:g} s, degrees")
        reach.legend(fontsize="small")
        fig.suptitle("Turning waves (Attanasi et al. 2014): the leaders at one edge turn by 90 degrees")
        save_figure(fig, path)

    return Result(columns, lines, plot)


# -- Hemelrijk and Hildenbrandt (2011): the shape of flocks in aerodynamic flight ---------------


def _level_start(n: int, seed: int, speed: float) -> tuple[np.ndarray, np.ndarray]:
    """The positions of :func:`polarized_start`, headings level (no climb) at ``speed``."""
    positions, velocities = polarized_start(n, seed)
    velocities[:, 1] = 0.0
    return positions, speed * velocities / np.linalg.norm(velocities, axis=1, keepdims=True)


def _shape_of(positions: np.ndarray, velocities: np.ndarray, link: float) -> tuple[float, ...]:
    """The largest group's share, semi-axes (thickness, width, length), the angles (degrees) of its
    thinnest axis from the vertical and of its longest from its heading, and its polarization."""
    _, labels = metrics.groups(positions, link)
    group = labels == np.bincount(labels).argmax()
    shape = metrics.principal_axes(positions[group])
    heading = velocities[group].sum(axis=0)
    heading /= np.linalg.norm(heading)
    thin, _, long = shape.axes
    vertical = math.degrees(math.acos(min(1.0, abs(thin[1]))))
    along = math.degrees(math.acos(min(1.0, abs(long @ heading))))
    return (group.mean(), *shape.semi_axes, vertical, along, metrics.polarization(velocities[group]))


@experiment(
    "flock-shape",
    "The shape of flocks in aerodynamic flight: thin vertically, often wider than long, varying with N",
    "Hemelrijk and Hildenbrandt (2011), PLoS ONE 6:e22479; Hildenbrandt, Carere and Hemelrijk (2010), "
    "Behav. Ecol. 21:1349-1359",
)
def flock_shape(quick: bool, seed: int, progress: bool | None) -> Result:
    """The principal axes of flocks flying over a roost, for two sizes, topological and metric.

    The boids model with its default rules in open space, in aerodynamic flight (cruise speed 5,
    speeds 2 to 10, the flight's defaults: g = 9.81, lift/drag 3.3, banks up to 60 degrees at
    180 degrees/s), drawn to a roost at the origin: horizontally beyond 20 units (2 units/s^2)
    and to its height (0.3 /s^2). Birds interact with their 7 nearest (within 10) or with all
    within 5. Each flock starts as a ball at the default scene's density, flying level one way,
    flies 30 s (20 quick) and is then measured every second for 60 s (20 quick): the principal
    semi-axes of its largest group (birds linked within 5), thickness : width : length, the angle
    of its thinnest axis from the vertical and of its longest from its heading.
    """
    if quick:
        sizes, seeds, settle, measure = [100, 300], [seed], 20, 20
    else:
        sizes, seeds, settle, measure = [200, 1000], [seed * 10 + k for k in range(3)], 30, 60
    base = Params(arena_shape="none", flight="aerodynamic", min_speed=2.0, max_speed=10.0,
                  flight_cruise_speed=5.0, roost_radius=20.0, roost_weight=2.0,
                  roost_altitude=0.3)  # fmt: skip
    kinds = {"topological": base.replace(neighbours=7, view_distance=10.0), "metric": base}
    names = ("interaction", "n", "seed", "time", "group", "thickness", "width", "length",
             "thin_from_vertical", "long_from_heading", "polarization")  # fmt: skip
    rows = {key: [] for key in names}
    per_second = round(1.0 / base.dt)
    with _bar(len(kinds) * len(sizes) * len(seeds) * (settle + measure) * per_second, "flock-shape",
              progress) as bar:  # fmt: skip
        for kind, params in kinds.items():
            for n in sizes:
                for run_seed in seeds:
                    positions, velocities = _level_start(n, run_seed * 1000 + n, base.flight_cruise_speed)
                    flock = Flock(params.replace(count=n), positions=positions, velocities=velocities)
                    flock.step(settle * per_second)
                    bar.update(settle * per_second)
                    for _ in range(measure):
                        flock.step(per_second)
                        bar.update(per_second)
                        values = (
                            kind,
                            n,
                            run_seed,
                            flock.time,
                            *_shape_of(flock.positions, flock.velocities, 5.0),
                        )
                        for key, value in zip(names, values, strict=True):
                            rows[key].append(value)
    columns = {key: np.array(v) for key, v in rows.items()}
    w_t, l_t = columns["width"] / columns["thickness"], columns["length"] / columns["thickness"]
    runs = [(kind, n) for kind in kinds for n in sizes]

    def pick(kind: str, n: int) -> np.ndarray:
        return (columns["interaction"] == kind) & (columns["n"] == n)

    head = ("T : W : L", "thin/vert.", "long/head.", "thin vert.", "wider", "group", "P")
    lines = [f"{'interaction':<12} {'N':>5} {head[0]:>16} " + " ".join(f"{h:>10}" for h in head[1:])]
    for kind, n in runs:
        at = pick(kind, n)
        vertical, along = columns["thin_from_vertical"][at], columns["long_from_heading"][at]
        cells = (vertical.mean(), along.mean(), np.mean(vertical < 30.0), np.mean(along > 45.0),
                 columns["group"][at].mean(), columns["polarization"][at].mean())  # fmt: skip
        ratio = f"1 : {w_t[at].mean():.2f} : {l_t[at].mean():.2f}"
        lines.append(f"{kind:<12} {n:>5,} {ratio:>16} {cells[0]:>10.0f} {cells[1]:>10.0f} {cells[2]:>10.2f} "
                     f"{cells[3]:>10.2f} {cells[4]:>10.2f} {cells[5]:>10.2f}")  # fmt: skip
    lines.append(
        f"(means over {measure} s of {len(seeds)} run(s) each; angles in degrees: the thinnest axis from "
        "the vertical and the longest from the heading; 'thin vert.': share of instants with the thinnest "
        "axis within 30 degrees of the vertical; 'wider': share with the longest axis more across the "
        "heading than along it (wider than long); 'group': share of the birds in the largest group)"
    )
    lines.append(
        "Hemelrijk and Hildenbrandt 2011 (StarDisplay, starlings' aerodynamics and roost): flocks are "
        "thinner vertically than horizontally, in many cases wider than long (the longest axis across the "
        "motion, turning with it), and their shape varies with their size; Ballerini et al. 2008's starling "
        "flocks were thin, of constant proportions, and slid parallel to the ground."
    )

    def plot(path: Path) -> None:
        plt, fig, (ratios, angles) = _figure(2, 9)
        for k, (kind, n) in enumerate(runs):
            at = pick(kind, n) & (columns["seed"] == seeds[0])
            time, look = columns["time"][at], {"color": f"C{k}", "ls": "-" if kind == "topological" else "--"}
            ratios.plot(time, w_t[at], **look, label=f"{kind}, N = {n:,}: W / T")
            ratios.plot(time, l_t[at], **look, alpha=0.5, label="L / T")
            angles.plot(time, columns["thin_from_vertical"][at], **look,
                        label=f"{kind}, N = {n:,}: thinnest from vertical")  # fmt: skip
            angles.plot(
                time, columns["long_from_heading"][at], **look, alpha=0.5, label="longest from heading"
            )
        ratios.set_xlabel("time, s")
        ratios.set_ylabel("width / thickness, length / thickness")
        ratios.legend(fontsize="x-small", ncol=2)
        angles.axhline(45.0, color="k", lw=0.5)
        angles.set_xlabel("time, s")
        angles.set_ylabel("degrees")
        angles.set_ylim(0.0, 90.0)
        angles.legend(fontsize="x-small", ncol=2)
        fig.suptitle("The shape of flocks in aerodynamic flight over a roost (first run of each)")
        save_figure(fig, path)

    return Result(columns, lines, plot)
