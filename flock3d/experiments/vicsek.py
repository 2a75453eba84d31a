"""Vicsek et al. (1995): the order-disorder transition."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from flock3d.core.models.vicsek import DEFAULTS as VICSEK_DEFAULTS
from flock3d.core.params import Params
from flock3d.plots import save_figure

from .common import Result, _bar, _figure, _order_over, experiment, new_flock


@experiment(
    "vicsek-fig2a",
    "The order-disorder transition: the order parameter v_a against the noise eta, for growing N",
    "Vicsek, Czirok, Ben-Jacob, Cohen and Shochet (1995), Phys. Rev. Lett. 75:1226-1229, Fig. 2a",
)
def vicsek_fig2a(quick: bool, seed: int, progress: bool | None) -> Result:
    """The order v_a against the noise eta at density 4, the particles moved by their new or old velocity.

    v_a = |sum v_i| / (N v0), for N = 40, 100, 400 and 4,000.

    The paper's model (:mod:`flock3d.core.models.vicsek`) and values (a periodic square of side
    L = sqrt(N / 4), v0 = 0.03, r = 1, Delta t = 1, noise uniform in [-eta/2, eta/2]). Each run starts from
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
                        flock = new_flock(params, seed=seed * 1000 + repeat)
                        flock.step(wait)
                        v_a, _ = _order_over(flock, measure)
                        for key, value in zip(rows, (update, n, side, eta, repeat, v_a), strict=True):
                            rows[key].append(value)
                        bar.update(wait + measure)
    columns = {k: np.array(v) for k, v in rows.items()}  # strings, whole numbers and floats

    def runs(update: str, n: int) -> list[np.ndarray]:  # each eta's repeats
        pick = (columns["position_update"] == update) & (columns["n"] == n)
        return [columns["v_a"][pick & (columns["eta"] == e)] for e in etas]

    mean = {(u, n): np.array([r.mean() for r in runs(u, n)]) for u in updates for n in sizes}
    # The repeats' spread (sample standard deviation); none for a size run once.
    spread = {(u, n): np.array([r.std(ddof=1) if len(r) > 1 else 0.0 for r in runs(u, n)])
              for u in updates for n in sizes}  # fmt: skip
    width = 11 * len(sizes) - 1  # a group of columns, each 10 wide and one apart
    lines = [f"{'':>6} {'moved by v(t+1): new':>{width}} {'by v(t): old':>{width}}",
             f"{'eta':>6} " + " ".join(f"{f'N = {n:,}':>10}" for _ in updates for n in sizes)]  # fmt: skip
    lines += [
        f"{e:>6.2f} " + " ".join(f"{mean[u, n][k]:>10.3f}" for u in updates for n in sizes)
        for k, e in enumerate(etas)
    ]
    lines.append(
        "repeats (bars in the figure: their standard deviation): "
        + ", ".join(f"N = {n:,}: {repeats[n]}" for n in sizes)
    )
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
        "Vicsek et al. 1995, Fig. 2a (density 4, N = 40 to 10,000; here to 4,000): v_a ~ 1 at eta = 0 "
        "for every N, "
        "falling towards 0 as eta grows to 5; the larger N, the sharper the fall (in the limit a "
        "transition at eta_c, v_a ~ (eta_c - eta)^0.45). The paper's Eq. 1 moves a particle with "
        "its old velocity; Chate et al. 2008 and most later work with the new one."
    )

    def plot(path: Path) -> None:
        plt, fig, (order,) = _figure(1, 5)
        for k, n in enumerate(sizes):
            for update, style in zip(updates, ("-", "--"), strict=True):
                order.errorbar(etas, mean[update, n], yerr=spread[update, n], fmt="os^D"[k % 4] + style,
                               color=f"C{k}", capsize=2, mfc="none" if update == "old" else None,
                               label=f"N = {n:,}, {update}")  # fmt: skip
        order.set_xlabel("noise eta (radians)")
        order.set_ylabel("order parameter v_a")
        order.set_ylim(-0.02, 1.02)
        order.legend(fontsize="small", ncol=2)
        fig.suptitle("Vicsek et al. 1995, Fig. 2a: density 4, v0 = 0.03, r = 1; moved by the new (solid) "
                     "or old (dashed) velocity;\nbars: the repeats' standard deviation",
                     fontsize="medium")  # fmt: skip
        save_figure(fig, path)

    return Result(columns, lines, plot)
