"""Couzin et al. (2002): collective memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from flock3d.core.models.couzin import DEFAULTS as COUZIN_DEFAULTS
from flock3d.core.params import Params
from flock3d.plots import save_figure

from .common import Result, _bar, _figure, _order_over, experiment, new_flock


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
            flock = new_flock(base, seed=seed * 1000 + repeat)
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

    def over_repeats(branch: str, name: str) -> list[np.ndarray]:  # each value's repeats
        pick = columns["branch"] == branch
        return [columns[name][pick & (columns["delta_r_o"] == v)] for v in values]

    def mean(branch: str, name: str) -> np.ndarray:
        return np.array([runs.mean() for runs in over_repeats(branch, name)])

    def quartiles(branch: str, name: str) -> np.ndarray:  # (2, values): the repeats' middle half
        return np.array([np.percentile(runs, [25, 75]) for runs in over_repeats(branch, name)]).T

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
        for branch in ("up", "down"):  # the repeats' spread: a branch's runs may end in either state
            for name, color in (("polarization", "C0"), ("milling", "C3")):
                order.fill_between(values, *quartiles(branch, name), color=color, alpha=0.12, lw=0)
        order.set_xlabel("width of the zone of orientation, Delta r_o (units)")
        order.set_title("shaded: the middle half of the repeats", fontsize="small")
        order.set_ylabel("order")
        order.set_ylim(-0.02, 1.02)
        order.legend(loc="center right", fontsize="small")
        fig.suptitle(f"Collective memory (Couzin et al. 2002): N = 100, {repeats} repeats")
        save_figure(fig, path)

    return Result(columns, lines, plot)
