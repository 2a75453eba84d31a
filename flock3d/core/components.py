"""The parts of a step that are not terms: whom a boid interacts with, and the other models.

Topological neighbours (the k nearest seen), the adaptive radius and species ranges, used
by every layout that has them; and the Couzin, Vicsek and inertial spin models' per-boid
updates. The
model's terms themselves live one module each in :mod:`flock3d.core.terms`. Compiled with
numba, called or inlined by the generated step (:mod:`flock3d.core.step`).
"""

from __future__ import annotations

import math

import numba

from flock3d.core import noise
from flock3d.core.kernel import inlined, shared

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
    in range and in the cone, and the choice runs over them: a branch on that test would be
    mispredicted about half the time.
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


# -- the inertial spin model (Attanasi et al. 2014, Cavagna et al. 2015) -----------------------


@shared
def inertial_spin(fx, fy, fz, sx, sy, sz, hx, hy, hz, chi, eta, coupling, temperature, dt, planar, seed,
                  step_count, index):  # fmt: skip
    """One step of the inertial spin model for a bird of unit heading f and spin s, with h the sum
    of its neighbours' unit headings (their velocities over v0):

        s' = (1 - eta dt / chi) s + J dt f x h + sqrt(2 eta T dt) f x g,

    g three standard normal numbers, counter-based (streams 0 to 5), and in a plane only the
    spin's z component; then the heading f turned about s' by the angle |s'| dt / chi (the exact
    rotation with the new angular velocity s' / chi). Returns ``(s'x, s'y, s'z, ux, uy, uz)``,
    u the new unit heading.
    """
    gx = noise.gaussian(seed, step_count, index, 0)
    gy = noise.gaussian(seed, step_count, index, 2)
    gz = noise.gaussian(seed, step_count, index, 4)
    keep, torque, kick = 1.0 - eta * dt / chi, coupling * dt, math.sqrt(2.0 * eta * temperature * dt)
    sx = keep * sx + torque * (fy * hz - fz * hy) + kick * (fy * gz - fz * gy)
    sy = keep * sy + torque * (fz * hx - fx * hz) + kick * (fz * gx - fx * gz)
    sz = keep * sz + torque * (fx * hy - fy * hx) + kick * (fx * gy - fy * gx)
    if planar:  # the spin of a bird turning in its plane is along the plane's normal
        sx = sy = 0.0
    w = math.sqrt(sx * sx + sy * sy + sz * sz)
    if w == 0.0:
        return sx, sy, sz, fx, fy, fz
    kx, ky, kz = sx / w, sy / w, sz / w
    c, sn = math.cos(w * dt / chi), math.sin(w * dt / chi)
    along = (1.0 - c) * (kx * fx + ky * fy + kz * fz)
    return (
        sx, sy, sz,
        c * fx + sn * (ky * fz - kz * fy) + along * kx,
        c * fy + sn * (kz * fx - kx * fz) + along * ky,
        c * fz + sn * (kx * fy - ky * fx) + along * kz,
    )  # fmt: skip
