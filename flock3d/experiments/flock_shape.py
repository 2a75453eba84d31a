"""Hemelrijk and Hildenbrandt (2011): the shape of flocks in aerodynamic flight."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from flock3d import metrics
from flock3d.core.params import Params
from flock3d.plots import save_figure

from .common import Result, _bar, _figure, experiment, new_flock, polarized_start


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
    "The shape of flocks flying over a roost: thin vertically, often wider than long, varying with N; "
    "which mechanism makes them thin",
    "Hemelrijk and Hildenbrandt (2011), PLoS ONE 6:e22479; Hildenbrandt, Carere and Hemelrijk (2010), "
    "Behav. Ecol. 21:1349-1359",
)
def flock_shape(quick: bool, seed: int, progress: bool | None) -> Result:
    """The principal axes of flocks flying over a roost, and what makes them thin vertically.

    Flocks of two sizes, with topological and with metric interaction, and an ablation.

    The boids model with its default rules in open space, in aerodynamic flight (cruise speed 5,
    speeds 2 to 10, the flight's defaults: g = 9.81, lift/drag 3.3, banks up to 60 degrees at
    180 degrees/s), drawn to a roost at the origin: horizontally beyond 20 units (2 units/s^2)
    and to its height by the altitude spring (0.3 /s^2). Birds interact with their 7 nearest
    (within 10) or with all within 5. Each flock starts as a ball at the default scene's density,
    flying level one way, flies 30 s (20 quick) and is then measured every second for 60 s (20
    quick): the principal semi-axes of its largest group (birds linked within 5), thickness :
    width : length, the angle of its thinnest axis from the vertical and of its longest from its
    heading.

    The ablation runs the larger, topological flock with the altitude spring on or off, in
    aerodynamic or kinematic flight (the kinematic flight of the boids model, steps 7 to 10 of
    docs/model.md, with the same speed limits): a mechanism makes the thin vertical axis if the
    flocks with it are thin vertically and those without it are not.
    """
    if quick:
        sizes, seeds, settle, measure = [100, 300], [seed], 20, 20
    else:
        sizes, seeds, settle, measure = [200, 1000], [seed * 10 + k for k in range(3)], 30, 60
    spring = 0.3
    base = Params(arena_shape="none", flight="aerodynamic", min_speed=2.0, max_speed=10.0,
                  flight_cruise_speed=5.0, roost_radius=20.0, roost_weight=2.0,
                  roost_altitude=spring)  # fmt: skip
    kinds = {"topological": base.replace(neighbours=7, view_distance=10.0), "metric": base}
    # (interaction, flight, altitude spring, N): the sizes first, then the ablation's other three.
    runs = [(kind, "aerodynamic", True, n) for kind in kinds for n in sizes]
    ablation = (("aerodynamic", False), ("kinematic", True), ("kinematic", False))
    runs += [("topological", flight, on, sizes[-1]) for flight, on in ablation]
    names = ("interaction", "flight", "roost_altitude", "n", "seed", "time", "group", "thickness", "width",
             "length", "thin_from_vertical", "long_from_heading", "polarization")  # fmt: skip
    rows = {key: [] for key in names}
    per_second = round(1.0 / base.dt)
    with _bar(len(runs) * len(seeds) * (settle + measure) * per_second, "flock-shape", progress) as bar:
        for kind, flight, on, n in runs:
            params = kinds[kind].replace(count=n, flight=flight, roost_altitude=spring if on else 0.0)
            for run_seed in seeds:
                positions, velocities = _level_start(n, run_seed * 1000 + n, base.flight_cruise_speed)
                flock = new_flock(params, positions=positions, velocities=velocities)
                flock.step(settle * per_second)
                bar.update(settle * per_second)
                for _ in range(measure):
                    flock.step(per_second)
                    bar.update(per_second)
                    values = (kind, flight, params.roost_altitude, n, run_seed, flock.time,
                              *_shape_of(flock.positions, flock.velocities, 5.0))  # fmt: skip
                    for key, value in zip(names, values, strict=True):
                        rows[key].append(value)
    columns = {key: np.array(v) for key, v in rows.items()}
    w_t, l_t = columns["width"] / columns["thickness"], columns["length"] / columns["thickness"]

    def pick(kind: str, flight: str, on: bool, n: int) -> np.ndarray:
        return ((columns["interaction"] == kind) & (columns["flight"] == flight)
                & ((columns["roost_altitude"] > 0) == on) & (columns["n"] == n))  # fmt: skip

    head = ("T : W : L", "thin/vert.", "long/head.", "thin vert.", "wider", "group", "P")
    lines = [f"{'interaction':<12} {'flight':<11} {'spring':<6} {'N':>5} {head[0]:>16} "
             + " ".join(f"{h:>10}" for h in head[1:])]  # fmt: skip
    thin = {}
    for run in runs:
        at = pick(*run)
        vertical, along = columns["thin_from_vertical"][at], columns["long_from_heading"][at]
        thin[run] = np.mean(vertical < 30.0)
        cells = (vertical.mean(), along.mean(), thin[run], np.mean(along > 45.0),
                 columns["group"][at].mean(), columns["polarization"][at].mean())  # fmt: skip
        ratio = f"1 : {w_t[at].mean():.2f} : {l_t[at].mean():.2f}"
        kind, flight, on, n = run
        lines.append(f"{kind:<12} {flight:<11} {'on' if on else 'off':<6} {n:>5,} {ratio:>16} "
                     f"{cells[0]:>10.0f} {cells[1]:>10.0f} "
                     + " ".join(f"{c:>10.2f}" for c in cells[2:]))  # fmt: skip
    lines.append(
        f"(means over {measure} s of {len(seeds)} run(s) each; spring: the roost's altitude spring; angles "
        "in degrees: the thinnest axis from the vertical and the longest from the heading; 'thin vert.': "
        "share of instants with the thinnest axis within 30 degrees of the vertical; 'wider': share with "
        "the longest axis more across the heading than along it (wider than long); 'group': share of the "
        "birds in the largest group)"
    )
    lines.append(_mechanism(thin, sizes[-1]))
    lines.append(
        "Hemelrijk and Hildenbrandt 2011 (StarDisplay, starlings' aerodynamics and roost): flocks are "
        "thinner vertically than horizontally, in many cases wider than long (the longest axis across the "
        "motion, turning with it), and their shape varies; in their model (StarDisplay: aerodynamic "
        "flight over a roost) the variation comes with the flock's size, fewer interaction partners, "
        "rolling while turning and a fixed speed, which this experiment does not vary one by one. 'wider' "
        "above is how often these flocks were wider than long. Ballerini et al. 2008's starling flocks were "
        "thin, of constant proportions, and slid parallel to the ground."
    )

    def plot(path: Path) -> None:
        plt, fig, (ratios, angles) = _figure(2, 9)
        for k, run in enumerate(runs):
            kind, flight, on, n = run
            at = pick(*run) & (columns["seed"] == seeds[0])
            label = f"{kind[:4]}., {flight[:4]}., spring {'on' if on else 'off'}, N = {n:,}"
            time, look = columns["time"][at], {"color": f"C{k}", "ls": "-" if on else ":"}
            ratios.plot(time, w_t[at], **look, label=f"{label}: W / T")
            ratios.plot(time, l_t[at], **look, alpha=0.5, label=f"{label}: L / T (faint)")
            angles.plot(time, columns["thin_from_vertical"][at], **look, label=label)
        ratios.set_xlabel("time (s)")
        ratios.set_ylabel("width / thickness, length / thickness")
        ratios.legend(fontsize="x-small", ncol=2)
        angles.axhline(45.0, color="k", lw=0.5)
        angles.set_xlabel("time (s)")
        angles.set_ylabel("thinnest axis from the vertical, degrees")
        angles.set_ylim(0.0, 90.0)
        angles.legend(fontsize="x-small", ncol=2)
        fig.suptitle(
            "The shape of flocks flying over a roost (first run of each; dotted: no altitude spring)"
        )
        save_figure(fig, path)

    return Result(columns, lines, plot)


def _mechanism(thin: dict[tuple[str, str, bool, int], float], n: int) -> str:
    """The line that says which mechanism makes the thin vertical axis, from the ablation's shares
    of instants with the thinnest axis within 30 degrees of the vertical (``thin``, by run)."""
    share = {(flight, on): thin["topological", flight, on, n] for flight in ("aerodynamic", "kinematic")
             for on in (True, False)}  # fmt: skip
    numbers = ", ".join(
        f"{flight} with the spring {'on' if on else 'off'} {s:.2f}" for (flight, on), s in share.items()
    )
    spring = (
        min(share["aerodynamic", True], share["kinematic", True])
        > 0.5
        > max(share["aerodynamic", False], share["kinematic", False])
    )
    flight = (
        min(share["aerodynamic", True], share["aerodynamic", False])
        > 0.5
        > max(share["kinematic", True], share["kinematic", False])
    )
    if spring:
        verdict = (
            "the roost's altitude spring makes the thin vertical axis, in either flight; aerodynamic flight "
            "does not"
        )
    elif flight:
        verdict = "aerodynamic flight makes the thin vertical axis, with or without the altitude spring"
    else:
        verdict = "neither the altitude spring nor aerodynamic flight alone makes the thin vertical axis"
    return f"flock3d ablation (topological, N = {n:,}; share thin vertically: {numbers}): {verdict}"
