"""The model's terms, one small function each: what the fast engine assembles a step from.

Every force term of ``docs/model.md`` is here as a plain scalar function of numbers and
arrays, compiled with numba (and written so that another backend could compile the
same source). :mod:`flock3d.core.assemble` picks the terms a flock's parameters use and
writes the step around them; the readable reference implementation
(:mod:`flock3d.core.reference`) computes the same terms its own way, as the oracle.

Conventions: ``(dx, dy, dz)`` is the offset from the boid to a neighbour (the nearest
image in a periodic arena) and ``d2`` its squared length, > 0; ``(px, py, pz)``,
``(vx, vy, vz)`` and ``(fx, fy, fz)`` are the boid's position, velocity and unit heading;
``box`` (6,) holds the arena's centre and half side lengths. Every term returns an
acceleration (units/s^2) or, for the pair terms, a contribution that the step sums over
the neighbours a boid sees and then finishes into an acceleration.

All are inlined into the generated code (nothing is called per pair or per boid: calls
cost the world features up to 6% of a step); the pair terms must stay branch-free.
"""

from __future__ import annotations

import math

import numba

from flock3d.core import noise
from flock3d.core.kernel import FAST, image, shared
from flock3d.core.quaternion import right_of

#: Inlined into the generated code at numba's level.
inlined = numba.njit(fastmath=FAST, error_model="numpy", cache=True, inline="always")


# -- pair terms: a neighbour's contribution -------------------------------------------------


@inlined
def separation_inverse(dx, dy, dz, d2, rs):
    """Separation, the model's falloff: away from the neighbour by 1/distance, u/d."""
    w = 1.0 / d2
    return -w * dx, -w * dy, -w * dz


@inlined
def separation_linear(dx, dy, dz, d2, rs):
    """Separation by the offset itself, u*d (the sum of offsets of many tutorials)."""
    return -dx, -dy, -dz


@inlined
def separation_linear_gap(dx, dy, dz, d2, rs):
    """Separation by the gap to the separation distance, u*(r_s - d)."""
    d = math.sqrt(d2)
    w = (rs - d) / d
    return -w * dx, -w * dy, -w * dz


@inlined
def separation_quadratic(dx, dy, dz, d2, rs):
    """Separation by the squared gap, u*(r_s - d)^2: strong when close, gentle far off."""
    d = math.sqrt(d2)
    w = (rs - d) * (rs - d) / d
    return -w * dx, -w * dy, -w * dz


SEPARATION_FALLOFFS = {
    "inverse": "separation_inverse",
    "linear": "separation_linear",
    "linear_gap": "separation_linear_gap",
    "quadratic": "separation_quadratic",
}
"""The pair function of each ``separation_falloff``."""


@inlined
def neighbour_velocity(vjx, vjy, vjz):
    """Alignment's contribution: the neighbour's velocity."""
    return vjx, vjy, vjz


@inlined
def neighbour_offset(dx, dy, dz):
    """Cohesion's contribution: the offset to the neighbour."""
    return dx, dy, dz


# -- finishing a pair term: from sums to an acceleration -------------------------------------


@inlined
def weighted(k, n, sx, sy, sz, average):
    """k times the mean (``average``) or the sum of n contributions; zero when n = 0."""
    if n == 0.0:
        return 0.0, 0.0, 0.0
    w = k / n if average else k
    return w * sx, w * sy, w * sz


@inlined
def velocity_matching(k, n, sx, sy, sz, vx, vy, vz, zero_mean):
    """Alignment, the model's form: k_a (mean neighbour velocity - own velocity). With no
    neighbours: nothing, or with ``zero_mean`` k_a (0 - own velocity)."""
    if n == 0.0:
        return (-k * vx, -k * vy, -k * vz) if zero_mean else (0.0, 0.0, 0.0)
    m = 1.0 / n
    return k * (sx * m - vx), k * (sy * m - vy), k * (sz * m - vz)


@inlined
def centering(k, n, sx, sy, sz, px, py, pz, zero_mean):
    """Cohesion: k_c times the mean offset to the neighbours (sums of offsets s). With no
    neighbours: nothing, or with ``zero_mean`` k_c (0 - own position), towards the origin."""
    if n == 0.0:
        return (-k * px, -k * py, -k * pz) if zero_mean else (0.0, 0.0, 0.0)
    m = k / n
    return m * sx, m * sy, m * sz


# -- per-boid terms ---------------------------------------------------------------------------


@inlined
def sphere_confinement(px, py, pz, box, start, k):
    """Beyond ``start`` from the centre, a push of k straight back towards it."""
    rx, ry, rz = px - box[0], py - box[1], pz - box[2]
    r = math.sqrt(rx * rx + ry * ry + rz * rz)
    if r > start:
        w = k / r
        return -w * rx, -w * ry, -w * rz
    return 0.0, 0.0, 0.0


@inlined
def box_confinement(px, py, pz, box, fraction, k, planar):
    """A push of k back along each axis where the boid is beyond ``fraction`` of the half side."""
    ax = ay = az = 0.0
    rx, ry, rz = px - box[0], py - box[1], pz - box[2]
    sx, sy, sz = fraction * box[3], fraction * box[4], fraction * box[5]
    ax = -k if rx > sx else (k if rx < -sx else 0.0)
    ay = -k if ry > sy else (k if ry < -sy else 0.0)
    if not planar:
        az = -k if rz > sz else (k if rz < -sz else 0.0)
    return ax, ay, az


@inlined
def _sideways(nx, ny, nz, fx, fy, fz, qw, qx, qy, qz, k):
    """k along the part of the inward direction n across the heading f (the boid's right
    when heading straight along n, so that it turns one way rather than brake)."""
    along = nx * fx + ny * fy + nz * fz
    lx, ly, lz = nx - along * fx, ny - along * fy, nz - along * fz
    l2 = lx * lx + ly * ly + lz * lz
    if l2 < 1e-12:
        lx, ly, lz = right_of(qw, qx, qy, qz)
        l2 = lx * lx + ly * ly + lz * lz
    w = k / math.sqrt(l2)
    return w * lx, w * ly, w * lz


@inlined
def sphere_containment(px, py, pz, fx, fy, fz, qw, qx, qy, qz, look, box, start, k):
    """Wall avoidance in a sphere: when the point ``look`` ahead (one turn radius) lies
    beyond ``start`` from the centre, steer sideways towards the inside with k."""
    qx_, qy_, qz_ = px + look * fx - box[0], py + look * fy - box[1], pz + look * fz - box[2]
    if qx_ * qx_ + qy_ * qy_ + qz_ * qz_ <= start * start:
        return 0.0, 0.0, 0.0
    return _sideways(box[0] - px, box[1] - py, box[2] - pz, fx, fy, fz, qw, qx, qy, qz, k)


@inlined
def box_containment(px, py, pz, fx, fy, fz, qw, qx, qy, qz, look, box, fraction, k, planar):
    """Wall avoidance in a box: when the point ``look`` ahead crosses a face's margin
    (``fraction`` of the half side), steer sideways, away from the faces it crosses, with k."""
    nx = ny = nz = 0.0
    ex, ey, ez = px + look * fx - box[0], py + look * fy - box[1], pz + look * fz - box[2]
    if abs(ex) > fraction * box[3]:
        nx = -1.0 if ex > 0.0 else 1.0
    if abs(ey) > fraction * box[4]:
        ny = -1.0 if ey > 0.0 else 1.0
    if not planar and abs(ez) > fraction * box[5]:
        nz = -1.0 if ez > 0.0 else 1.0
    if nx == 0.0 and ny == 0.0 and nz == 0.0:
        return 0.0, 0.0, 0.0
    return _sideways(nx, ny, nz, fx, fy, fz, qw, qx, qy, qz, k)


@inlined
def seek(px, py, pz, vx, vy, vz, tx, ty, tz, weight, max_speed, box, periodic, planar):
    """Reynolds' seek towards (tx, ty, tz): weight * (max_speed * unit(offset) - v)."""
    dx = image(tx - px, 2.0 * box[3], periodic)
    dy = image(ty - py, 2.0 * box[4], periodic)
    dz = image(tz - pz, 2.0 * box[5], periodic and not planar)
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    if d == 0.0:
        return 0.0, 0.0, 0.0
    s = max_speed / d
    return weight * (s * dx - vx), weight * (s * dy - vy), weight * (s * dz - vz)


@inlined
def attraction(px, py, pz, vx, vy, vz, attractors, max_speed, box, periodic, planar):
    """Seek every attractor (rows of x, y, z, weight, radius) closer than its radius."""
    ax = ay = az = 0.0
    for k in range(attractors.shape[0]):
        tx, ty, tz, weight, radius = (attractors[k, 0], attractors[k, 1], attractors[k, 2],
                                      attractors[k, 3], attractors[k, 4])  # fmt: skip
        dx = image(tx - px, 2.0 * box[3], periodic)
        dy = image(ty - py, 2.0 * box[4], periodic)
        dz = image(tz - pz, 2.0 * box[5], periodic and not planar)
        if dx * dx + dy * dy + dz * dz < radius * radius:
            sx, sy, sz = seek(px, py, pz, vx, vy, vz, tx, ty, tz, weight, max_speed, box, periodic, planar)
            ax += sx
            ay += sy
            az += sz
    return ax, ay, az


@inlined
def path_following(px, py, pz, vx, vy, vz, path, waypoint, weight, reach2, max_speed, box, periodic, planar):
    """Seek the current waypoint of a closed path, moving on to the next within reach.

    Returns ``(ax, ay, az, waypoint)`` with the (possibly advanced) waypoint.
    """
    n = path.shape[0]
    k = waypoint % n
    dx = image(path[k, 0] - px, 2.0 * box[3], periodic)
    dy = image(path[k, 1] - py, 2.0 * box[4], periodic)
    dz = image(path[k, 2] - pz, 2.0 * box[5], periodic and not planar)
    if dx * dx + dy * dy + dz * dz < reach2:
        k = (k + 1) % n
    ax, ay, az = seek(px, py, pz, vx, vy, vz, path[k, 0], path[k, 1], path[k, 2], weight, max_speed, box,
                      periodic, planar)  # fmt: skip
    return ax, ay, az, k


@inlined
def obstacle_avoidance(px, py, pz, fx, fy, fz, qw, qx, qy, qz, obstacles, strength, ahead, margin, box,
                       periodic, planar):  # fmt: skip
    """Steer around the spheres (rows of x, y, z, radius) the heading ray meets within ``ahead``.

    For each obstacle whose margin the ray enters, steer sideways, away from its centre,
    harder the closer the encounter; inside the margin, push straight out.
    """
    ax = ay = az = 0.0
    for k in range(obstacles.shape[0]):
        cx, cy, cz, radius = obstacles[k, 0], obstacles[k, 1], obstacles[k, 2], obstacles[k, 3]
        clearance = radius + margin
        ex = -image(cx - px, 2.0 * box[3], periodic)  # from the centre's nearest image to the boid
        ey = -image(cy - py, 2.0 * box[4], periodic)
        ez = -image(cz - pz, 2.0 * box[5], periodic and not planar)
        e = math.sqrt(ex * ex + ey * ey + ez * ez)
        if e < clearance:  # inside the margin: push straight out
            if e > 0.0:
                ax += strength * ex / e
                ay += strength * ey / e
                az += strength * ez / e
            else:
                ax += strength * fx
                ay += strength * fy
                az += strength * fz
            continue
        t = -(ex * fx + ey * fy + ez * fz)  # distance ahead of the closest approach
        if 0.0 < t < ahead:
            lx, ly, lz = ex + t * fx, ey + t * fy, ez + t * fz  # from the centre to that point
            l2 = lx * lx + ly * ly + lz * lz
            if l2 < clearance * clearance:
                w = strength * (1.0 - t / ahead)
                if l2 > 0.0:
                    inv = 1.0 / math.sqrt(l2)
                    ax += w * lx * inv
                    ay += w * ly * inv
                    az += w * lz * inv
                else:  # heading straight at the centre: veer right
                    rx, ry, rz = right_of(qw, qx, qy, qz)
                    ax += w * rx
                    ay += w * ry
                    az += w * rz
    return ax, ay, az


@inlined
def flight(px, py, pz, fx, fy, fz, predators, flee_distance2, strength, cone, box, periodic, planar):
    """Flee from each predator (rows of x, y, z) seen within the flee distance: strength away."""
    ax = ay = az = 0.0
    for k in range(predators.shape[0]):
        dx = image(predators[k, 0] - px, 2.0 * box[3], periodic)
        dy = image(predators[k, 1] - py, 2.0 * box[4], periodic)
        dz = image(predators[k, 2] - pz, 2.0 * box[5], periodic and not planar)
        d2 = dx * dx + dy * dy + dz * dz
        dot = fx * dx + fy * dy + fz * dz
        if (d2 > 0.0) & (d2 < flee_distance2) & (dot * abs(dot) >= cone * d2):
            w = strength / math.sqrt(d2)
            ax -= w * dx
            ay -= w * dy
            az -= w * dz
    return ax, ay, az


@inlined
def wind(px, py, pz, box, uniform, gradient):
    """The wind field: ``uniform + gradient @ (p - centre)``."""
    rx, ry, rz = px - box[0], py - box[1], pz - box[2]
    return (
        uniform[0] + gradient[0, 0] * rx + gradient[0, 1] * ry + gradient[0, 2] * rz,
        uniform[1] + gradient[1, 0] * rx + gradient[1, 1] * ry + gradient[1, 2] * rz,
        uniform[2] + gradient[2, 0] * rx + gradient[2, 1] * ry + gradient[2, 2] * rz,
    )


# -- whom a boid interacts with: topological neighbours, species ----------------------------


@inlined
def species_index(index, ends):
    """The species of boid ``index``: species are consecutive ranges of boids, and ``ends``
    holds where each but the last ends (cumulative counts)."""
    s = 0
    for e in ends:
        s += 1 if index >= e else 0
    return s


@shared
def nearest_seen(
    bx, by, bz, bid, m, px, py, pz, fx, fy, fz, r2, cone, k, ends, sees, sel, sel_d2, seen, seen_d2
):
    """The k nearest of the m candidates in the buffer that a boid sees (Ballerini et al. 2008's
    topological neighbours): within sqrt(r2), inside the cone, and, with species (``ends`` not
    empty), of a species its row ``sees`` of the interaction matrix marks (> 0).

    ``bid`` holds the candidates' boid indices: at equal distances the lower index comes first,
    so the choice does not depend on the buffer's order. Writes the buffer positions of the
    chosen into ``sel`` and their squared distances into ``sel_d2``, nearest first (both of at
    least k entries); returns how many were chosen (at most k). ``seen`` and ``seen_d2`` (at
    least m entries) are scratch: a first pass lists there, without a branch, the candidates
    in range and in the cone, and the choice runs over them. (Branching on that test, which
    no processor predicts well, made the whole step 1.25x slower at 10,000 boids, k = 7.)
    """
    n_seen = 0
    for jj in range(m):
        j = numba.uint64(jj)
        dx = bx[j] - px
        dy = by[j] - py
        dz = bz[j] - pz
        d2 = dx * dx + dy * dy + dz * dz
        dot = fx * dx + fy * dy + fz * dz
        q = numba.uint64(n_seen)  # always written, kept when seen: a branch-free compaction
        seen[q], seen_d2[q] = jj, d2
        n_seen += 1 if (d2 > 0.0) & (d2 < r2) & (dot * abs(dot) >= cone * d2) else 0
    n = 0
    for q in range(n_seen):
        jj, d2 = seen[q], seen_d2[q]
        j = numba.uint64(jj)
        if len(ends) and not sees[species_index(bid[j], ends)] > 0.0:
            continue
        index = bid[j]
        if n == k and not (d2 < sel_d2[k - 1] or (d2 == sel_d2[k - 1] and index < bid[sel[k - 1]])):
            continue
        p = n if n < k else k - 1
        while p > 0 and (sel_d2[p - 1] > d2 or (sel_d2[p - 1] == d2 and bid[sel[p - 1]] > index)):
            sel_d2[p], sel[p] = sel_d2[p - 1], sel[p - 1]
            p -= 1
        sel_d2[p], sel[p] = d2, jj
        n = min(n + 1, k)
    return n


@shared
def compact(buf, sel, n, out):
    """Copy the rows ``sel[:n]`` of the candidate buffer ``buf`` into ``out`` (tuples of columns)."""
    for col in range(len(buf)):
        for s in range(n):
            out[col][s] = buf[col][sel[s]]


@shared
def adapted_radius(radius, n, k, sel_d2, view2, rate):
    """StarDisplay's adaptive radius after a step: ``radius`` nudged by ``rate`` of the gap to the
    distance of the k-th nearest boid seen (n of them chosen within sqrt(view2), nearest first),
    or to sqrt(view2) when fewer than k are seen."""
    target2 = sel_d2[k - 1] if n == k else view2
    return radius + rate * (math.sqrt(target2) - radius)


@shared
def within(sel_d2, n, r2):
    """How many of the n chosen (nearest first) lie closer than sqrt(r2)."""
    while n > 0 and not sel_d2[n - 1] < r2:
        n -= 1
    return n


# -- the Couzin et al. (2002) zone model -------------------------------------------------------


@inlined
def zone_sums(bx, by, bz, hx, hy, hz, m, px, py, pz, fx, fy, fz, rr2, ro2, ra2, cone):
    """Sums over the individuals a Couzin agent perceives (within r_a, in its cone), zone by zone.

    The buffer holds positions and unit headings. Returns ``(n_r, r_x, r_y, r_z, n_o, o_x,
    o_y, o_z, n_a, a_x, a_y, a_z)``: counts, and sums of unit offsets (repulsion and
    attraction zones) and of unit headings (orientation zone).
    """
    n_r = n_o = n_a = 0.0
    r_x = r_y = r_z = o_x = o_y = o_z = a_x = a_y = a_z = 0.0
    for jj in range(m):
        j = numba.uint64(jj)
        dx = bx[j] - px
        dy = by[j] - py
        dz = bz[j] - pz
        d2 = dx * dx + dy * dy + dz * dz
        dot = fx * dx + fy * dy + fz * dz
        w = 1.0 if (d2 > 0.0) & (d2 < ra2) & (dot * abs(dot) >= cone * d2) else 0.0
        inv = w / math.sqrt(d2) if d2 > 0.0 else 0.0
        wr = inv if d2 < rr2 else 0.0
        wo = w if (d2 >= rr2) & (d2 < ro2) else 0.0
        wa = inv if d2 >= ro2 else 0.0
        n_r += 1.0 if wr > 0.0 else 0.0
        n_o += wo
        n_a += 1.0 if wa > 0.0 else 0.0
        r_x += wr * dx
        r_y += wr * dy
        r_z += wr * dz
        o_x += wo * hx[j]
        o_y += wo * hy[j]
        o_z += wo * hz[j]
        a_x += wa * dx
        a_y += wa * dy
        a_z += wa * dz
    return n_r, r_x, r_y, r_z, n_o, o_x, o_y, o_z, n_a, a_x, a_y, a_z


@shared
def unit(x, y, z):
    """The unit vector along (x, y, z); the zero vector stays zero (headings can cancel)."""
    n = math.sqrt(x * x + y * y + z * z)
    if n == 0.0:
        return 0.0, 0.0, 0.0
    return x / n, y / n, z / n


@shared
def zone_direction(n_r, rx, ry, rz, n_o, ox, oy, oz, n_a, ax, ay, az, fx, fy, fz, planar):
    """The Couzin agent's desired direction: repulsion first (strict priority); else the
    orientation (its own heading included) and attraction directions, averaged when both
    zones are occupied; else straight on."""
    dx, dy, dz = fx, fy, fz
    if n_r > 0.0:
        dx, dy, dz = -rx, -ry, -rz
    elif n_o > 0.0 or n_a > 0.0:
        if n_o > 0.0:
            dx, dy, dz = unit(fx + ox, fy + oy, fz + oz)
        if n_a > 0.0:
            tx, ty, tz = unit(ax, ay, az)
            if n_o > 0.0:
                dx, dy, dz = 0.5 * (dx + tx), 0.5 * (dy + ty), 0.5 * (dz + tz)
            else:
                dx, dy, dz = tx, ty, tz
    if planar:  # headings carry rounding out of the plane; drop it
        dz = 0.0
    if dx * dx + dy * dy + dz * dz > 0.0:
        return unit(dx, dy, dz)
    return fx, fy, fz


@shared
def perturbed(dx, dy, dz, planar, sigma, seed, step_count, index):
    """The Couzin noise: the direction rotated by a Gaussian angle (sd sigma) about a random
    perpendicular axis (in the plane for a planar flock). Counter-based: a pure function of
    (seed, step, boid)."""
    phi = sigma * noise.gaussian(seed, step_count, index, 0)
    return tilted(dx, dy, dz, phi, 2.0 * math.pi * noise.uniform(seed, step_count, index, 2), planar)


@shared
def vicsek_noise(dx, dy, dz, planar, eta, seed, step_count, index):
    """The Vicsek noise of amplitude eta: in a plane the direction turned by an angle uniform in
    [-eta/2, eta/2]; in 3D tilted to a direction uniform on the cap of those within eta/2 of it
    (cos(phi) uniform in [cos(eta/2), 1], the azimuth uniform). Counter-based, as the Couzin noise."""
    u = noise.uniform(seed, step_count, index, 0)
    if planar:
        return tilted(dx, dy, dz, eta * (u - 0.5), 0.0, True)
    phi = math.acos(1.0 - u * (1.0 - math.cos(0.5 * eta)))
    return tilted(dx, dy, dz, phi, 2.0 * math.pi * noise.uniform(seed, step_count, index, 2), False)


@shared
def tilted(dx, dy, dz, phi, psi, planar):
    """The unit direction d tilted by the angle phi towards the perpendicular at azimuth psi
    around it; in a plane, turned by phi counterclockwise (psi unused)."""
    c, s = math.cos(phi), math.sin(phi)
    if planar:
        ex, ey, ez = unit(-dy, dx, 0.0)
        return c * dx + s * ex, c * dy + s * ey, c * dz + s * ez
    if abs(dx) < 0.9:  # e1 = d x (1, 0, 0)
        e1x, e1y, e1z = unit(0.0, dz, -dy)
    else:  # e1 = d x (0, 1, 0)
        e1x, e1y, e1z = unit(-dz, 0.0, dx)
    e2x, e2y, e2z = dy * e1z - dz * e1y, dz * e1x - dx * e1z, dx * e1y - dy * e1x
    cp, sp = math.cos(psi), math.sin(psi)
    return (
        c * dx + s * (cp * e1x + sp * e2x),
        c * dy + s * (cp * e1y + sp * e2y),
        c * dz + s * (cp * e1z + sp * e2z),
    )
