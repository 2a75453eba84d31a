"""Attanasi et al. (2014): turns travel through the flock as waves.

The design: the leaders at one edge turn *into* the flock, so that the flock follows them as one
rather than being torn in two by leaders flying out of it. Each run is made twice on the same
noise (the noise is counter-based, keyed by seed, step and bird): once with the leaders turning,
once with them held on their heading. A bird's response is the difference of its heading between
the two, so that the noise, the same in both, cancels, and only what the turn caused is left.
Each model runs on a moving flock and on a frozen network (positions held where they started, from
the start), which separates the propagation of the turn from the flock's motion, and on which the
inertial spin model has a stationary state: the moving flock, held together by nothing, slowly
loses its order over minutes.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from flock3d import metrics
from flock3d.core import quaternion
from flock3d.core.models import model_of
from flock3d.core.models.ism import InertialSpin
from flock3d.core.models.vicsek import DEFAULTS as VICSEK_DEFAULTS
from flock3d.core.params import Params
from flock3d.flock import Flock
from flock3d.plots import save_figure

from .common import Result, _bar, _figure, experiment, new_flock

#: The flock of turning-waves: length (along the heading), thickness (vertical) and width (across,
#: where the turn travels) of a box holding 960 birds at density 1; scaled as the cube root of N.
_TURNING_BOX = np.array([8.0, 5.0, 24.0])

#: The networks a turn is given on: the flock flying, and its positions held where they started.
_NETWORKS = ("moving", "frozen")


def _turning_flock(params: Params, seed: int) -> Flock:
    """``params.count`` birds uniform in the turning box (density 1), all heading +x at the speed."""
    n = params.count
    rng = np.random.default_rng(seed)
    positions = rng.uniform(-0.5, 0.5, (n, 3)) * _TURNING_BOX * (n / 960) ** (1 / 3)
    velocities = np.tile([params.speed, 0.0, 0.0], (n, 1))
    return new_flock(params, positions=positions, velocities=velocities, seed=seed)


def _has_spins(params: Params) -> bool:
    """Whether the flock's model carries spins (the inertial spin model): its leaders are given
    their turn's spin, and its wave speed is compared with the spin-wave theory's."""
    return any(c.name == "spins" for c in model_of(params).carries)


def _affine_speed(positions: np.ndarray, radius: float, direction: np.ndarray, coupling: float,
                  inertia: float) -> float:  # fmt: skip
    """The spin-wave speed sqrt(K / chi) of the affine stiffness K = (J/2) sum_j (k . r_ij)^2.

    K is the median over the birds farther than ``radius`` from every face of the flock's box
    (those with a full neighbourhood), for metric neighbours within ``radius`` and waves along
    ``direction`` (a unit vector); [units/s].
    """
    low, high = positions.min(axis=0) + radius, positions.max(axis=0) - radius
    inner = np.flatnonzero(np.all((positions > low) & (positions < high), axis=1))
    offsets = positions[None, :, :] - positions[inner, None, :]
    near = np.sum(offsets**2, axis=2) <= radius**2
    along = (offsets @ direction) ** 2 * near
    return math.sqrt(0.5 * coupling * float(np.median(along.sum(axis=1))) / inertia)


def _paired_turn(params: Params, settling: Params, seed: int, settle: int, steps: int, theta: float,
                 tau: float, share: float, frozen: bool) -> dict[str, np.ndarray]:  # fmt: skip
    """Turn the leaders at one edge into the flock, against the same flock on the same noise.

    Two flocks are made alike from ``seed``, fly ``settle`` steps with ``settling`` and then
    ``steps`` with ``params`` (when ``frozen``, their positions held where they started throughout).
    The ``share`` of the birds farthest along the side e2 (the heading e1 x up) are the leaders: in
    the first flock they turn over ``tau`` seconds by ``theta`` [rad] towards -e2, into the flock
    (a smoothstep in time), and then hold their heading; in the second they hold their heading
    throughout.

    Returns ``leaders``, ``distances`` (each bird's distance to the nearest leader when the turn
    starts), ``response`` ((steps + 1, N): how far each bird's heading in the plane of the turn
    has turned, towards the leaders' turn, beyond its heading in the second flock [rad]),
    ``polarization`` (of the second flock's largest group, the birds linked within the view
    distance, every 10 steps of the turn), ``group`` (the mean share of the birds in it), ``e2``
    and ``positions`` (where the turn starts).
    """
    pair = [_turning_flock(settling, seed), _turning_flock(settling, seed)]
    start = pair[0].positions.copy()
    for flock in pair:
        if frozen:
            for _ in range(settle):
                flock.step()
                flock.positions[:] = start
        else:
            flock.step(settle)
        flock.params = params
    turned, held = pair
    assert np.array_equal(turned.velocities, held.velocities)  # the pairing: the same state, the same noise
    speed = np.linalg.norm(turned.velocities, axis=1).mean()
    e1 = turned.velocities.sum(axis=0)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(e1, [0.0, 1.0, 0.0])
    e2 /= np.linalg.norm(e2)
    p0 = turned.positions.copy()
    leaders = np.argsort(-((p0 - p0.mean(axis=0)) @ e2), kind="stable")[: max(1, round(share * len(turned)))]
    distances = np.min(np.linalg.norm(p0[:, None, :] - p0[None, leaders, :], axis=2), axis=1)
    angle = np.empty((2, steps + 1, len(turned)))
    for f, flock in enumerate(pair):
        angle[f, 0] = np.arctan2(flock.velocities @ e2, flock.velocities @ e1)
    polarization, shares = [], []
    dt, spin = params.dt, _has_spins(params)
    for k in range(steps):
        u = min(1.0, (k + 1) * dt / tau)
        for f, (flock, turn) in enumerate(zip(pair, (-theta, 0.0), strict=True)):
            lead = angle[f, 0, leaders] + turn * u * u * (3.0 - 2.0 * u)
            headings = np.cos(lead)[:, None] * e1 + np.sin(lead)[:, None] * e2
            flock.velocities[leaders] = speed * headings
            flock.orientations[leaders] = quaternion.look_rotation(headings)
            if spin:  # the leaders' spins: chi times their angular velocity, about e1 x e2
                rate = turn * 6.0 * u * (1.0 - u) / tau if u < 1.0 else 0.0
                flock.state.spins[leaders] = params.ism_inertia * rate * np.cross(e1, e2)
            flock.step()
            if frozen:
                flock.positions[:] = start
            angle[f, k + 1] = np.arctan2(flock.velocities @ e2, flock.velocities @ e1)
        if k % 10 == 9:  # the connected flock's order: birds in small pieces off it turn freely
            _, labels = metrics.groups(held.positions, params.view_distance)
            group = labels == np.bincount(labels).argmax()
            polarization.append(metrics.polarization(held.velocities[group]))
            shares.append(group.mean())
    response = -(np.unwrap(angle[0], axis=0) - np.unwrap(angle[1], axis=0))
    return {"leaders": leaders, "distances": distances, "response": response,
            "polarization": np.array(polarization), "group": np.mean(shares), "e2": e2,
            "positions": p0}  # fmt: skip


def _arrivals(distances, turns, theta: float, dt: float, smooth: float = 0.5) -> dict[str, float]:
    """What a turn did to the birds that did not lead it (``distances``, ``turns`` of those only).

    ``turns``: each bird's paired response (see :func:`_paired_turn`), smoothed over ``smooth``
    seconds; a bird has *arrived* when it first reaches half the leaders' turn, theta / 2.
    Returns the share that arrived (all, and of the farthest quarter), the least-squares line of
    the arrival time against the distance (its R^2 and the speed, 1 / slope [units/s]), the
    exponent p of arrival time ~ distance^p (over distances beyond 2), and each bird's peak
    turning rate, farthest quarter over nearest quarter.
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


def _power_law(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The least-squares line of log y against log x, over the finite pairs: (exponent, prefactor)."""
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if ok.sum() < 2 or np.ptp(x[ok]) == 0:
        return math.nan, math.nan
    exponent, log_prefactor = np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)
    return float(exponent), float(math.exp(log_prefactor))


@experiment(
    "turning-waves",
    "Turns travel through an inertial spin flock as waves, linearly and reaching the far side (the followers "
    "overshoot the turn and swing back), faster at larger coupling; through an aligning flock they diffuse "
    "and fade",
    "Attanasi, Cavagna, Del Castello, Giardina, Grigera, Jelic, Melillo, Parisi, Pohl, Shen and Viale "
    "(2014), Nature Physics 10:691-696; Cavagna et al. (2015), J. Stat. Phys. 158:601-627",
)
def turning_waves(quick: bool, seed: int, progress: bool | None) -> Result:
    """How soon each bird of a flock follows when the birds at one edge turn into it.

    1,000 birds in a box 8 x 5 x 24 at density 1 (length along the heading, thickness, width),
    all heading one way at v0 = 0.2, interacting with those within r = 1.2 (about 7 neighbours;
    metric, so that the coupling is reciprocal and the inertial spin model's total spin is
    conserved), dt = 0.05. The flock first flies 60 s to settle its fluctuations; then the 5 % of
    birds at the edge on one side turn by 90 degrees over 1 s towards the other side, into the
    flock, and hold their new heading, while the flock is followed for 50 s (25 s quick). Every
    run is paired with one on the same noise whose leaders do not turn (:func:`_paired_turn`), and
    made on the moving flock and on the frozen network. P is the paired flock's polarization,
    averaged over the time followed: the stationary state's on the frozen network; the moving flock
    has none, and the table says how far P drifts.

    The inertial spin model (chi = 1.25, friction eta = 0.02, T = 0.05) is run at couplings J = 1 to
    16 (2 and 8 quick). It settles with friction 0.3 sqrt(J), which damps its slowest spin wave
    about critically (the stationary state does not depend on the friction); the turn is then
    followed at 0.02.
    The same turn is given to the Vicsek model (3D, eta = 0.3, in a periodic box four times the
    flock's width) and to boids that only align (k_a = 5 /s, no separation or cohesion). For each
    run, :func:`_arrivals` measures the arrival times against the distance to the nearest leader.
    """
    if quick:
        couplings, seeds, watch = [2.0, 8.0], [seed], 25.0
    else:
        couplings, seeds, watch = [1.0, 2.0, 4.0, 8.0, 16.0], [seed * 10 + k for k in range(3)], 50.0
    n, dt, speed, radius, theta, tau, settle, share = (
        1000,
        0.05,
        0.2,
        1.2,
        math.radians(90.0),
        1.0,
        60.0,
        0.05,
    )
    spin = Params(model=InertialSpin.name, count=n, arena_shape="none", speed=speed, view_distance=radius,
                  fov=360.0, max_turn_rate=math.inf, dt=dt, ism_inertia=1.25, ism_friction=0.02,
                  ism_temperature=0.05)  # fmt: skip
    runs = [(f"ISM, J = {j:g}", spin.replace(ism_coupling=j),
             spin.replace(ism_coupling=j, ism_friction=0.3 * math.sqrt(j))) for j in couplings]  # fmt: skip
    vicsek = Params(**{**VICSEK_DEFAULTS, "count": n, "dimensions": 3, "speed": speed, "dt": dt,
                       "view_distance": radius, "noise_eta": 0.3,
                       "arena_radius": 2.0 * _TURNING_BOX[2]})  # fmt: skip
    boids = Params(count=n, arena_shape="none", min_speed=speed, max_speed=speed, separation=0.0,
                   cohesion=0.0, separation_distance=radius, alignment=5.0, view_distance=radius, fov=360.0,
                   max_turn_rate=math.inf, dt=dt)  # fmt: skip
    runs += [("Vicsek", vicsek, vicsek), ("boids alignment", boids, boids)]
    names = ("model", "network", "coupling", "seed", "polarization", "polarization_drift", "group", "arrived",
             "far_arrived", "r2", "speed", "exponent", "rate_ratio", "affine_speed")  # fmt: skip
    rows = {key: [] for key in names}
    scatter = {}
    steps, settling = round(watch / dt), round(settle / dt)
    total = len(runs) * len(_NETWORKS) * len(seeds) * 2 * (steps + settling)
    with _bar(total, "turning-waves", progress) as bar:
        for label, params, settling_params in runs:
            for network in _NETWORKS:
                for run_seed in seeds:
                    turn = _paired_turn(params, settling_params, run_seed, settling, steps, theta, tau, share,
                                        frozen=network == "frozen")  # fmt: skip
                    others = np.setdiff1d(np.arange(n), turn["leaders"])
                    distances, response = turn["distances"][others], turn["response"][:, others]
                    found = _arrivals(distances, response, theta, dt)
                    coupling, affine = np.nan, np.nan
                    if _has_spins(params):
                        coupling = params.ism_coupling
                        affine = _affine_speed(
                            turn["positions"], radius, turn["e2"], coupling, params.ism_inertia
                        )
                    pol = turn["polarization"]
                    values = {"model": label, "network": network, "coupling": coupling, "seed": run_seed,
                              "polarization": pol.mean(), "polarization_drift": pol[-1] - pol[0],
                              "group": turn["group"], "affine_speed": affine, **found}  # fmt: skip
                    for key in names:
                        rows[key].append(values[key])
                    scatter.setdefault((label, network), (distances, response))
                    bar.update(2 * (steps + settling))
    columns = {key: np.array(v) for key, v in rows.items()}
    labels = list(dict.fromkeys(columns["model"]))
    measured = names[4:]
    mean = {(label, network): {k: metrics.finite_mean(columns[k][(columns["model"] == label)
                                                                 & (columns["network"] == network)])
                               for k in measured}
            for label in labels for network in _NETWORKS}  # fmt: skip
    head = ("P", "group", "arrived", "far", "R^2", "c", "p", "far/near", "c/c_aff")
    lines = [f"{'model':<16} {'network':<7} " + " ".join(f"{h:>8}" for h in head)]
    for (label, network), m in mean.items():
        cells = (m["group"], m["arrived"], m["far_arrived"], m["r2"], m["speed"], m["exponent"],
                 m["rate_ratio"], m["speed"] / m["affine_speed"])  # fmt: skip
        lines.append(
            f"{label:<16} {network:<7} {m['polarization']:>8.4f} " + " ".join(f"{c:>8.2f}" for c in cells)
        )
    spins = [label for label in labels if label.startswith("ISM")]
    fits = {}
    for network in _NETWORKS:
        j = np.array(couplings)
        c = np.array([mean[label, network]["speed"] for label in spins])
        disorder = 1.0 - np.array([mean[label, network]["polarization"] for label in spins])
        affine = np.array([mean[label, network]["affine_speed"] for label in spins])
        fits[network] = (*_power_law(j, c), -_power_law(disorder, c)[0], metrics.finite_mean(c / affine),
                         -_power_law(j, disorder)[0])  # fmt: skip
    if len(spins) > 1:
        for network, (j_exponent, j_prefactor, p_exponent, ratio, order_exponent) in fits.items():
            lines.append(
                f"flock3d ISM, {network}: c ~ J^{j_exponent:.2f} (c = {j_prefactor:.2f} J^{j_exponent:.2f}); "
                f"c ~ (1 - P)^-{p_exponent:.2f}; c / sqrt(K_affine / chi) = {ratio:.2f}; 1 - P ~ "
                f"J^-{order_exponent:.2f} (the spin-wave theory: 0.5, 0.5, 1 and 1)"
            )
        gain = [mean[label, "moving"]["speed"] - mean[label, "frozen"]["speed"] for label in spins]
        lines.append(
            f"moving - frozen: c {min(gain):+.2f} to {max(gain):+.2f} units/s (v0 = {speed:g}): in the "
            "moving flock the birds that have turned fly towards those that have not, which adds to the "
            "speed measured from where they started; the frozen network is the propagation alone"
        )
    drift = float(np.max(np.abs(columns["polarization_drift"])))
    lines.append(
        f"(N = {n:,}, {len(seeds)} seed(s); P: polarization of the largest group (birds linked within r) of "
        f"the paired flock whose leaders did not turn, averaged over the {watch:g} s followed, over which it "
        f"changes by {drift:.3f} at most; 'group': its share of the birds; 'arrived': "
        "share of the birds whose paired response reached 45 degrees, 'far': of the farthest quarter; R^2 "
        "and c: least-squares line of arrival time against distance to the nearest leader; p: arrival "
        "time ~ distance^p (1 for a wave, 2 for diffusion); far/near: peak turning rate, farthest quarter "
        "over nearest; c/c_aff: c over the affine spin-wave speed sqrt(K/chi), K = (J/2) sum_j (k.r_ij)^2; "
        "frozen: positions held where they started)"
    )
    lines.append(
        "Attanasi et al. 2014 (starlings) and Cavagna et al. 2015 (the model): a turn reaches the birds in "
        "a time linear in their distance from the first (linear dispersion) with negligible attenuation, "
        "at c = sqrt(K/chi), so c ~ J^0.5, and at fixed noise c ~ (1 - P)^-0.5 (starlings: 20 to 40 m/s, "
        "faster in more polarized flocks); by their theory a model of alignment alone spreads it by "
        "diffusion (p = 2), slowly and damped (p above is what these runs measured: on the arrived birds)."
    )

    def plot(path: Path) -> None:
        plt, fig, (arrival, speed_ax, reach) = _figure(3, 13)
        shown = [label for label in labels if not label.startswith("ISM")] + spins[len(spins) // 2 :][:1]
        for k, label in enumerate(shown):
            distances, turns = scatter[label, "moving"]
            above = turns >= theta / 2
            t = np.where(above.any(axis=0), np.argmax(above, axis=0) * dt, np.nan)
            arrival.plot(distances, t, ".", ms=3, alpha=0.5, color=f"C{k}", label=label)
            bins = np.linspace(0.0, distances.max(), 13)
            middle = 0.5 * (bins[1:] + bins[:-1])
            at = np.digitize(distances, bins) - 1
            reach.plot(middle, [np.degrees(turns[-1, at == b].mean()) if np.any(at == b) else np.nan
                                for b in range(len(middle))], "o-", color=f"C{k}", label=label)  # fmt: skip
        arrival.set_xlabel("distance from the nearest leader (units)")
        arrival.set_ylabel("arrival time of the paired response (45 degrees), s")
        arrival.legend(fontsize="small")
        for k, network in enumerate(_NETWORKS):
            c = np.array([mean[label, network]["speed"] for label in spins])
            speed_ax.loglog(couplings, c, "os"[k], color=f"C{k}", label=f"ISM, {network}")
            if len(spins) > 1 and np.isfinite(fits[network][1]):
                grid = np.geomspace(min(couplings), max(couplings), 20)
                speed_ax.loglog(grid, fits[network][1] * grid ** fits[network][0], "--", color=f"C{k}",
                                label=f"fit: c ~ J^{fits[network][0]:.2f}")  # fmt: skip
        speed_ax.set_xlabel("coupling J")
        speed_ax.set_ylabel("wave speed c (units/s)")
        speed_ax.legend(fontsize="small")
        reach.axhline(90.0, color="k", lw=0.5)
        reach.set_xlabel("distance from the nearest leader (units)")
        reach.set_ylabel(f"paired response after {watch:g} s, degrees")
        reach.legend(fontsize="small")
        fig.suptitle(
            "Turning waves (Attanasi et al. 2014): leaders at one edge turn 90 degrees into the flock"
        )
        save_figure(fig, path)

    return Result(columns, lines, plot)
