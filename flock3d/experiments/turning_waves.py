"""Attanasi et al. (2014): turns travel through the flock as waves."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from flock3d import metrics
from flock3d.core.params import VICSEK_DEFAULTS, Params
from flock3d.flock import Flock
from flock3d.plots import save_figure

from .common import Result, _bar, _figure, experiment

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
