"""The projection model of Pearce, Miller, Rowlands and Turner (2014), PNAS 111:10422.

Each bird sees the others as dark discs of radius b against a light sky: bird j at distance d
covers the directions within asin(b / d) of the direction to it (an interval of the circle of
view in a planar flock, a cap of the sphere of view in 3D). The bird steers by the projection
it sees, not by its neighbours' positions:

    v_i(t + 1) ∝ phi_p delta_i + phi_a <v_k>_{sigma nearest visible} + phi_n eta_i,

- delta_i, the mean of the unit vectors from bird i to the boundaries between dark and light
  (their Eq. 1): in a plane, the ends of the intervals of the union of every disc's interval;
- <v_k>, the mean heading of its sigma nearest *visible* birds: those not entirely hidden
  behind nearer ones (sigma = 4 in the paper);
- eta_i, a unit vector uniform on the circle (the sphere in 3D);

and it moves at the constant speed v0. Only the weights' ratios matter (the direction is
normalised); the paper takes phi_p + phi_a + phi_n = 1.

In 3D (the paper's SI extends the model so) the boundaries are curves on the sphere of view and
delta_i the normalised integral of the unit vectors along them. flock3d resolves each disc's
rim, a circle of half-angle alpha around the direction to it, at :data:`RIM_POINTS` evenly spaced
points, each weighing its share sin(alpha) 2 pi / RIM_POINTS of the rim's length; a point is on a
boundary where no other disc covers it. This is exact for each disc however small it looks (a
discretised sphere of view loses the far birds, whose discs fall between its directions); the
boundary's shape is resolved to 2 pi / RIM_POINTS around each rim. A bird is visible in 3D when
its centre or a point of its rim is not behind a nearer disc (a sliver between those points is
missed). In a plane both are exact.

One step: every bird computes its direction from the start-of-step state, turns to it (at most
the turn limit, none by default) and moves at v0 for dt along its new heading.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from flock3d.core import noise
from flock3d.core.agents import agents, constant_speed_move, moved_state, tilted
from flock3d.core.fields import Problem, Spec
from flock3d.core.kernel import cone_threshold, inlined
from flock3d.core.models import Model, columns
from flock3d.core.space import neighbours, offsets

#: Points each disc's rim is resolved at in 3D (see the module's docstring).
RIM_POINTS = 16

PHI_P = Spec(
    "pearce.phi_p", "weight phi_p of the projection: the mean direction to the dark-light boundaries",
    symbol="φ_p", high=1.0, model="pearce", label="Projection φp", slider=(0.0, 0.3),
)  # fmt: skip
PHI_A = Spec(
    "pearce.phi_a", "weight phi_a of the alignment with the sigma nearest visible birds", symbol="φ_a",
    high=1.0, model="pearce", label="Alignment φa", slider=(0.0, 1.0),
)  # fmt: skip
PHI_N = Spec(
    "pearce.phi_n", "weight phi_n of the noise, a random unit vector", symbol="φ_n", high=1.0,
    model="pearce", label="Noise φn", slider=(0.0, 1.0),
)  # fmt: skip
BODY = Spec(
    "pearce.body", "radius b of the disc each bird is seen as", unit="units", symbol="b", low_open=True,
    model="pearce", label="Body b", slider=(0.05, 3.0),
)  # fmt: skip
SIGMA = Spec(
    "pearce.sigma", "how many of the nearest visible birds a bird aligns with", kind="integer",
    symbol="σ", checked=False, allowed="1 to 100,000,000", model="pearce",
)  # fmt: skip

#: What makes a flock this model: it sees everyone (all-to-all, no cone) in open space and takes
#: its new direction at once (no turn limit).
OWN = {"view_distance": math.inf, "fov": 360.0, "max_turn_rate": math.inf, "arena_shape": "none"}
#: The paper's set-up: its main model is planar, b = v0 = dt = 1.
SETUP = {"count": 200, "dimensions": 2, "speed": 1.0, "dt": 1.0, "init_radius": 20.0}
DEFAULTS: dict[str, Any] = {"model": "pearce", **OWN, **SETUP}
"""The values a scene with ``model = "pearce"`` starts from: 200 birds in the plane in a disc of
radius 20 b, all-to-all, no cone, no turn limit, v0 = b = dt = 1, and the fields' own phi_p =
0.03, phi_a = 0.8, phi_n = 0.17 and sigma = 4."""


@inlined
def _seen(bx, by, bz, m, px, py, pz, fx, fy, fz, view2, cone, body):
    """The candidates seen (within the view distance and the cone): rows (ux, uy, uz, cos alpha,
    sin alpha, distance) of the unit direction to each and its disc's half-angle alpha = asin(b / d)
    (pi / 2 within b), and each one's column in the candidates."""
    seen, index = np.empty((6, m)), np.empty(m, dtype=np.int64)
    n = 0
    for jj in range(m):
        j = numba.uint64(jj)
        dx, dy, dz = bx[j] - px, by[j] - py, bz[j] - pz
        d2 = dx * dx + dy * dy + dz * dz
        dot = fx * dx + fy * dy + fz * dz
        if (d2 > 0.0) & (d2 < view2) & (dot * abs(dot) >= cone * d2):
            d = math.sqrt(d2)
            s = min(body / d, 1.0)
            seen[0, n], seen[1, n], seen[2, n] = dx / d, dy / d, dz / d
            seen[3, n], seen[4, n], seen[5, n] = math.sqrt(1.0 - s * s), s, d
            index[n] = jj
            n += 1
    return seen, index, n


@inlined
def _rim(seen, a, k):
    """Point k of the rim of disc a (3D): at azimuth 2 pi (k + 1/2) / RIM_POINTS around its
    centre, in the frame (e1, e2) that :func:`flock3d.core.components.tilted` uses."""
    ux, uy, uz, ca, sa = seen[0, a], seen[1, a], seen[2, a], seen[3, a], seen[4, a]
    if abs(ux) < 0.9:  # e1 = u x (1, 0, 0)
        e1x, e1y, e1z = 0.0, uz, -uy
    else:  # e1 = u x (0, 1, 0)
        e1x, e1y, e1z = -uz, 0.0, ux
    norm = math.sqrt(e1x * e1x + e1y * e1y + e1z * e1z)
    e1x, e1y, e1z = e1x / norm, e1y / norm, e1z / norm
    e2x, e2y, e2z = uy * e1z - uz * e1y, uz * e1x - ux * e1z, ux * e1y - uy * e1x
    phi = 2.0 * math.pi * (k + 0.5) / RIM_POINTS
    c, s = sa * math.cos(phi), sa * math.sin(phi)
    return ca * ux + c * e1x + s * e2x, ca * uy + c * e1y + s * e2y, ca * uz + c * e1z + s * e2z


@inlined
def _covered(seen, n, skip, x, y, z):
    """Whether the direction (x, y, z) lies strictly inside a disc other than ``skip``."""
    for b in range(n):
        if b != skip and x * seen[0, b] + y * seen[1, b] + z * seen[2, b] > seen[3, b]:
            return True
    return False


@inlined
def _boundaries_planar(seen, n):
    """The sum of the unit vectors to the ends of the union of the intervals, and their count: a
    sweep round the circle over the intervals' ends in angle order, counting the discs over it."""
    ends, starts = np.empty(2 * n), np.empty(2 * n)
    cover = 0
    for a in range(n):
        theta, alpha = math.atan2(seen[1, a], seen[0, a]), math.asin(seen[4, a])
        lo, hi = theta - alpha, theta + alpha
        if lo < -math.pi or hi >= math.pi:  # it covers the angle -pi where the sweep starts
            cover += 1
        ends[2 * a] = lo + 2.0 * math.pi if lo < -math.pi else lo
        ends[2 * a + 1] = hi - 2.0 * math.pi if hi >= math.pi else hi
        starts[2 * a], starts[2 * a + 1] = 1.0, -1.0
    sx = sy = count = 0.0
    for e in np.argsort(ends):
        a, sign = e // 2, starts[e]
        if sign > 0.0:
            cover += 1
        else:
            cover -= 1
        if (sign > 0.0 and cover == 1) or (sign < 0.0 and cover == 0):  # dark meets light here
            ux, uy, ca, sa = seen[0, a], seen[1, a], seen[3, a], sign * seen[4, a]
            sx += ca * ux + sa * uy  # u turned by -alpha at the start, +alpha at the end
            sy += ca * uy - sa * ux
            count += 1.0
    return sx, sy, 0.0, count


@inlined
def _boundaries_3d(seen, n):
    """The length-weighted sum of the unit vectors to the rims' points no other disc covers, and
    the weight: only the discs whose caps overlap disc a's can cover its rim."""
    sx = sy = sz = total = 0.0
    near = np.empty(n, dtype=np.int64)
    for a in range(n):
        ux, uy, uz, ca, sa = seen[0, a], seen[1, a], seen[2, a], seen[3, a], seen[4, a]
        k_near = 0
        for b in range(n):  # cos(angle between centres) > cos(alpha_a + alpha_b): they overlap
            cos_ab = ux * seen[0, b] + uy * seen[1, b] + uz * seen[2, b]
            if b != a and cos_ab > ca * seen[3, b] - sa * seen[4, b]:
                near[k_near] = b
                k_near += 1
        w = sa * 2.0 * math.pi / RIM_POINTS
        for k in range(RIM_POINTS):
            x, y, z = _rim(seen, a, k)
            if not _covered_by(seen, near, k_near, x, y, z):
                sx, sy, sz, total = sx + w * x, sy + w * y, sz + w * z, total + w
    return sx, sy, sz, total


@inlined
def _hidden_planar(seen, order, r, a):
    """Whether interval a is covered by the union of the intervals ``order[:r]`` (the nearer
    ones): from its start, jump to the furthest end of a nearer interval over the point reached."""
    ux, uy, alpha = seen[0, a], seen[1, a], math.asin(seen[4, a])
    reached = -alpha
    while reached < alpha:
        furthest = reached
        for q in range(r):
            b = order[q]
            offset = math.atan2(ux * seen[1, b] - uy * seen[0, b], ux * seen[0, b] + uy * seen[1, b])
            width = math.asin(seen[4, b])
            if offset - width <= reached < offset + width:
                furthest = max(furthest, offset + width)
        if furthest == reached:
            return False
        reached = furthest
    return True


@inlined
def _hidden_3d(seen, order, r, a):
    """Whether disc a's centre and every point of its rim lie behind the discs ``order[:r]``."""
    for k in range(-1, RIM_POINTS):
        if k < 0:
            x, y, z = seen[0, a], seen[1, a], seen[2, a]
        else:
            x, y, z = _rim(seen, a, k)
        if not _covered_by(seen, order, r, x, y, z):
            return False
    return True


@inlined
def _covered_by(seen, ids, count, x, y, z):
    """Whether the direction (x, y, z) lies strictly inside one of the discs ``ids[:count]``
    (:func:`_covered` over chosen discs)."""
    for q in range(count):
        b = ids[q]
        if x * seen[0, b] + y * seen[1, b] + z * seen[2, b] > seen[3, b]:
            return True
    return False


@inlined
def projection(bx, by, bz, bhx, bhy, bhz, m, px, py, pz, fx, fy, fz, view2, cone, body, sigma, planar):
    """What bird i sees of the candidates (positions b, headings bh): the mean unit vector to the
    dark-light boundaries (delta, zero where it sees none) and the mean heading of its sigma
    nearest visible birds (zero where it sees none): (dx, dy, dz, ax, ay, az)."""
    seen, index, n = _seen(bx, by, bz, m, px, py, pz, fx, fy, fz, view2, cone, body)
    if planar:
        sx, sy, sz, weight = _boundaries_planar(seen, n)
    else:
        sx, sy, sz, weight = _boundaries_3d(seen, n)
    if weight > 0.0:
        sx, sy, sz = sx / weight, sy / weight, sz / weight
    # the nearest first, each either visible or hidden behind the nearer ones, until sigma are visible
    order, used = np.empty(n, dtype=np.int64), np.zeros(n, dtype=np.bool_)
    ax = ay = az = 0.0
    visible = 0
    for r in range(n):
        if visible >= sigma:
            break
        a, d = -1, np.inf
        for b in range(n):
            if not used[b] and seen[5, b] < d:
                a, d = b, seen[5, b]
        used[a], order[r] = True, a
        hidden = _hidden_planar(seen, order, r, a) if planar else _hidden_3d(seen, order, r, a)
        if not hidden:
            j = numba.uint64(index[a])
            ax, ay, az = ax + bhx[j], ay + bhy[j], az + bhz[j]
            visible += 1
    if visible > 0:
        ax, ay, az = ax / visible, ay / visible, az / visible
    return sx, sy, sz, ax, ay, az


@inlined
def direction(dx, dy, dz, ax, ay, az, fx, fy, fz, phi_p, phi_a, phi_n, planar, seed, step_count, index):
    """The unit direction of phi_p delta + phi_a <v> + phi_n eta, eta a unit vector uniform on the
    circle (the sphere in 3D) from the counter-based noise (streams 0 and 1); straight on where
    the sum vanishes."""
    u1, u2 = noise.uniform(seed, step_count, index, 0), noise.uniform(seed, step_count, index, 1)
    angle = 2.0 * math.pi * u1
    if planar:
        ex, ey, ez = math.cos(angle), math.sin(angle), 0.0
    else:
        ez = 2.0 * u2 - 1.0
        rho = math.sqrt(max(0.0, 1.0 - ez * ez))
        ex, ey = rho * math.cos(angle), rho * math.sin(angle)
    ux = phi_p * dx + phi_a * ax + phi_n * ex
    uy = phi_p * dy + phi_a * ay + phi_n * ey
    uz = 0.0 if planar else phi_p * dz + phi_a * az + phi_n * ez
    norm = math.sqrt(ux * ux + uy * uy + uz * uz)
    if norm == 0.0:
        return fx, fy, fz
    return ux / norm, uy / norm, uz / norm


class Pearce(Model):
    name = "pearce"
    words = "the 2014 projection model"
    title = "Pearce projection model"
    module = __name__
    fields = {
        "pearce_phi_p": (0.03, PHI_P), "pearce_phi_a": (0.8, PHI_A), "pearce_phi_n": (0.17, PHI_N),
        "pearce_body": (1.0, BODY), "pearce_sigma": (4, SIGMA),
    }  # fmt: skip
    defaults, setup = OWN, SETUP
    arenas = ("none",)
    panel = ("speed", "fov")
    table = "pearce"
    # A GPU thread reads its candidates a part at a time; the projection sorts and occludes them all.
    gpu_refusal = "its projection takes every candidate at once, and makes arrays of them"

    def values(self, p):
        return dict(view2=p.view_distance**2, cone=cone_threshold(p.fov), body=p.pearce_body,
                    sigma=float(p.pearce_sigma), phi_p=p.pearce_phi_p, phi_a=p.pearce_phi_a,
                    phi_n=p.pearce_phi_n, speed=p.speed)  # fmt: skip

    def update(self, g, c):
        v, b, model = g.v, g.choose(c, "view2", "cone"), g.model(self)
        p, f, u = (", ".join(names) for names in (g.position, g.heading, g.desired))
        c(f"dx, dy, dz, ax, ay, az = {model}.projection(",
          f"    {columns(b)}, {p}, {f}, {v('view2')}, {v('cone')}, {v('body')}, {v('sigma')}, {g.planar})",
          f"{u} = {model}.direction(dx, dy, dz, ax, ay, az, {f}, {v('phi_p')}, {v('phi_a')}, {v('phi_n')},",
          f"    {g.planar}, {g.noise})")  # fmt: skip
        g.stage(c, v("speed"), v("speed"))

    def step(self, state, params, seed):
        """Each bird finds the boundaries of the discs it sees (:func:`seen_boundaries`) and its sigma
        nearest visible birds (:func:`visible_order`), takes the direction of phi_p delta + phi_a
        <v> + phi_n eta, turns to it (at most the turn limit) and moves at v0 for dt."""
        group, positions, planar = agents(state), state.positions, params.dimensions == 2
        headings = np.array([a.heading for a in group]).reshape(-1, 3)
        moved = []
        for i, a in enumerate(group):
            seen = np.flatnonzero(neighbours(a.position, a.heading, positions, params))
            d = offsets(a.position, positions[seen], params)
            delta = seen_boundaries(d, params.pearce_body, planar)
            order = visible_order(d, params.pearce_body, planar, params.pearce_sigma)
            mean = headings[seen[order]].mean(axis=0) if len(order) else np.zeros(3)
            eta = unit_noise(seed, state.step_count, i, planar)
            total = params.pearce_phi_p * delta + params.pearce_phi_a * mean + params.pearce_phi_n * eta
            if planar:
                total[2] = 0.0
            norm = np.linalg.norm(total)
            moved.append(constant_speed_move(a, total / norm if norm > 0.0 else a.heading, params))
        return moved_state(state, params, moved)

    def problems(self, values, ok):
        out = []
        if values["neighbours"] is not None:
            why = "a bird sees every other, and aligns with its pearce.sigma nearest visible"
            out.append(
                Problem(
                    "neighbours", f"must be unset for the pearce model: {why} (got {values['neighbours']!r})"
                )
            )
        sigma = values["pearce_sigma"]
        if isinstance(sigma, bool) or not isinstance(sigma, int) or not 1 <= sigma <= 100_000_000:
            out.append(Problem("pearce_sigma", f"must be a whole number, 1 to 100,000,000 (got {sigma!r})"))
        if all(ok.get(k, True) for k in ("pearce_phi_p", "pearce_phi_a", "pearce_phi_n")) and not (
            values["pearce_phi_p"] + values["pearce_phi_a"] + values["pearce_phi_n"] > 0.0
        ):
            out.append(
                Problem("pearce_phi_n", "must not be 0 with phi_p and phi_a 0: they weigh the direction")
            )
        return out


def _discs(d: np.ndarray, body: float) -> tuple[np.ndarray, np.ndarray]:
    """The unit directions (M, 3) to the birds at offsets ``d`` and their discs' half-angles (M,)."""
    distance = np.linalg.norm(d, axis=1)
    return d / distance[:, None], np.arcsin(np.minimum(body / distance, 1.0))


def _inside(points: np.ndarray, u: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """(P, M): whether each unit direction lies strictly inside each disc."""
    return points @ u.T > np.cos(alpha)[None, :]


def _rims(u: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """(M, RIM_POINTS, 3): the points of each disc's rim, at azimuths 2 pi (k + 1/2) / RIM_POINTS
    round its centre in the frame of :func:`flock3d.core.agents.tilted` (e1 = u x (1, 0, 0),
    or u x (0, 1, 0) where |u_x| >= 0.9; e2 = u x e1)."""
    helper = np.where(np.abs(u[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    e1 = np.cross(u, helper)
    e1 /= np.linalg.norm(e1, axis=1, keepdims=True)
    e2 = np.cross(u, e1)
    psi = 2.0 * np.pi * (np.arange(RIM_POINTS) + 0.5) / RIM_POINTS
    around = np.cos(psi)[None, :, None] * e1[:, None, :] + np.sin(psi)[None, :, None] * e2[:, None, :]
    return np.cos(alpha)[:, None, None] * u[:, None, :] + np.sin(alpha)[:, None, None] * around


def seen_boundaries(d: np.ndarray, body: float, planar: bool) -> np.ndarray:
    """delta: the mean unit vector to the dark-light boundaries of the discs of radius ``body`` at
    offsets ``d`` (M, 3), zero where there are none. In a plane the boundaries are the ends of the
    intervals that lie inside no other interval, each counting once; in 3D the points of each rim
    (:data:`RIM_POINTS` of them) that lie inside no other disc, each weighing its share of its rim's
    length, sin(alpha) 2 pi / RIM_POINTS."""
    if len(d) == 0:
        return np.zeros(3)
    u, alpha = _discs(d, body)
    if planar:  # each interval's two ends: u turned by -alpha and +alpha
        points = np.array([tilted(u[j], s * alpha[j], 0.0, True) for j in range(len(u)) for s in (-1.0, 1.0)])
        owner, weights = np.repeat(np.arange(len(u)), 2), np.ones(2 * len(u))
    else:
        points = _rims(u, alpha).reshape(-1, 3)
        owner = np.repeat(np.arange(len(u)), RIM_POINTS)
        weights = np.sin(alpha)[owner] * 2.0 * np.pi / RIM_POINTS
    inside = _inside(points, u, alpha)
    inside[np.arange(len(points)), owner] = False  # a rim is not inside its own disc
    lit = ~inside.any(axis=1)
    if not lit.any():
        return np.zeros(3)
    return (weights[lit, None] * points[lit]).sum(axis=0) / weights[lit].sum()


def visible_order(d: np.ndarray, body: float, planar: bool, limit: int) -> np.ndarray:
    """The indices of the first ``limit`` birds at offsets ``d`` (M, 3) that are not hidden behind
    nearer ones, nearest first. In a plane a bird is hidden when the nearer birds' intervals,
    merged, cover its own; in 3D when its centre and every point of its rim lie inside nearer
    discs."""
    u, alpha = _discs(d, body)
    order = np.argsort(np.linalg.norm(d, axis=1), kind="stable")
    rims = None if planar else _rims(u, alpha)
    shown: list[int] = []
    for r, a in enumerate(order):
        if len(shown) == limit:
            break
        nearer = order[:r]
        if planar:
            side = np.array([-u[a, 1], u[a, 0], 0.0])
            offset = np.arctan2(u[nearer] @ side, u[nearer] @ u[a])  # each nearer centre, from a's
            spans = sorted(zip(offset - alpha[nearer], offset + alpha[nearer], strict=True))
            hidden = _covers(spans, alpha[a])
        else:
            points = np.concatenate([u[a][None], rims[a]])
            hidden = bool(len(nearer)) and bool(_inside(points, u[nearer], alpha[nearer]).any(axis=1).all())
        if not hidden:
            shown.append(a)
    return np.array(shown, dtype=np.int64)


def _covers(intervals: list[tuple[float, float]], half: float) -> bool:
    """Whether the union of ``intervals`` (sorted by start) covers [-half, half]."""
    reached = -half
    for lo, hi in intervals:
        if lo > reached:
            break
        reached = max(reached, hi)
        if reached >= half:
            return True
    return False


def unit_noise(seed: int, step_count: int, index: int, planar: bool) -> np.ndarray:
    """eta: a unit vector uniform on the circle (the sphere in 3D), from the counter-based noise."""
    angle = 2.0 * math.pi * noise.uniform(seed, step_count, index, 0)
    if planar:
        return np.array([math.cos(angle), math.sin(angle), 0.0])
    z = 2.0 * noise.uniform(seed, step_count, index, 1) - 1.0
    rho = math.sqrt(max(0.0, 1.0 - z * z))
    return np.array([rho * math.cos(angle), rho * math.sin(angle), z])


MODEL = Pearce()
