"""Keeping boids out of the objects: the steer away from them looking ahead (:func:`avoidance`), and
after each move the hard constraint (:func:`keep_out`): the move checked as a segment, a covered
point projected out or moved to the nearest free point."""

from __future__ import annotations

import math

from flock3d.core import geometry as g
from flock3d.core.geometry import exact
from flock3d.core.kernel import inlined
from flock3d.core.objects.distance import object_clearance, object_frame, object_room
from flock3d.core.objects.packing import BOUND, KIND, MOTION, POSITION, SIDE
from flock3d.core.quaternion import right_of

__all__ = ["avoidance", "away", "carried", "keep_out", "listed", "march", "push", "project", "escape",
           "MARCH", "MAX_PUSHES", "SKIN", "TRUSTED_NORMAL", "ESCAPE_RINGS"]  # fmt: skip

#: Projections out of the objects a covered point gets at most (one is exact for a primitive).
MAX_PUSHES = 8
#: The clearance (world units) a projection aims at, and the least room the march along a move
#: keeps: a hair beyond the surface, so that the time the check reads (the state's clock) and the
#: step's own (now + dt), an ulp apart, agree on the side.
SKIN = 1e-6
#: The march along a move steps at least this fraction of the move: a solid at least 1/MARCH of a
#: move long along it is never crossed, and the march costs at most MARCH distance queries.
MARCH = 64
#: A normal shorter than this is not followed (a grid's gradient vanishes on a thin part's middle).
TRUSTED_NORMAL = 0.25
#: Rings of the escape search, each twice as far as the last: from the depth, up to 2^23 times it.
ESCAPE_RINGS = 24


@inlined
def listed(world):
    """How many objects a world record holds, and where their offsets start: the record is the
    packed data, then the K + 1 offsets (as floats), then how many of them move, then K."""
    count = int(world[world.shape[0] - 1])
    return count, world.shape[0] - count - 3


@inlined
def moving(world):
    """Whether any object of a world record moves (has keyframes)."""
    return world[world.shape[0] - 2] > 0.0


@inlined
def _origin(world, o, t):
    """Where object o's frame is at time t (its still position, read from its header, or its
    motion's)."""
    if world[o + MOTION] < 0.0:
        return world[o + POSITION], world[o + POSITION + 1], world[o + POSITION + 2]
    px, py, pz, _, _, _, _ = object_frame(world, o, t)
    return px, py, pz


@inlined
def _within(ox, oy, oz, bound, x, y, z):
    """Whether (x, y, z) lies within ``bound`` of the origin (ox, oy, oz); any point does of an
    unbounded object (a plane, a heightfield: bound inf)."""
    dx, dy, dz = x - ox, y - oy, z - oz
    return dx * dx + dy * dy + dz * dz <= bound * bound


@inlined
def _reach(world, o, reach):
    """How far from its origin object o may be measured to tell whether a point's clearance is below
    ``reach``: its bound (header slot BOUND: its clearance at x is at least |x - origin| - bound)
    plus reach for an obstacle, and everywhere (inf) for an arena, which bounds nothing outside."""
    return world[o + BOUND] + reach if world[o + SIDE] > 0.0 else math.inf


@inlined
def away(nx, ny, nz, fx, fy, fz, qw, qx, qy, qz):
    """The steer away from a surface of normal n (towards more room), for heading f: the part of
    unit(n) across f, whole (a unit vector; the boid's right when it heads straight in) while the
    boid heads into less room, and as it is (shrinking to 0 as it heads straight out) once it
    heads into more."""
    n = math.sqrt(nx * nx + ny * ny + nz * nz)
    if n == 0.0:
        return 0.0, 0.0, 0.0
    nx, ny, nz = nx / n, ny / n, nz / n
    along = nx * fx + ny * fy + nz * fz
    lx, ly, lz = nx - along * fx, ny - along * fy, nz - along * fz
    if along >= 0.0:
        return lx, ly, lz
    l2 = lx * lx + ly * ly + lz * lz
    if l2 < 1e-12:
        lx, ly, lz = right_of(qw, qx, qy, qz)
        l2 = lx * lx + ly * ly + lz * lz
    inv = 1.0 / math.sqrt(l2)
    return lx * inv, ly * inv, lz * inv


@inlined
def avoidance(px, py, pz, vx, vy, vz, fx, fy, fz, qw, qx, qy, qz, now, world, k, margin, omega):
    """The objects' steer at time ``now``: for each object, the lesser clearance of the boid and of
    the point one turn radius (|v| / omega) ahead; below the margin, k times the urgency
    ``min(1, (margin - c) / margin)`` along :func:`away` from that point's normal."""
    count, at = listed(world)
    look = math.sqrt(vx * vx + vy * vy + vz * vz) / omega
    hx, hy, hz = px + look * fx, py + look * fy, pz + look * fz
    ax = ay = az = 0.0
    for j in range(count):
        o = int(world[at + j])
        ox, oy, oz = _origin(world, o, now)
        bound = _reach(world, o, margin)  # an object farther than this is more than the margin away
        if not _within(ox, oy, oz, bound + look, px, py, pz):  # from the boid nor from the probe
            continue
        c, nx, ny, nz = math.inf, 0.0, 0.0, 0.0
        if _within(ox, oy, oz, bound, px, py, pz):
            c, nx, ny, nz = object_clearance(world, o, now, px, py, pz)
        if _within(ox, oy, oz, bound, hx, hy, hz):
            ch, hnx, hny, hnz = object_clearance(world, o, now, hx, hy, hz)
            if ch < c:
                c, nx, ny, nz = ch, hnx, hny, hnz
        if c < margin:
            w = k if c <= 0.0 else k * (margin - c) / margin
            sx, sy, sz = away(nx, ny, nz, fx, fy, fz, qw, qx, qy, qz)
            ax += w * sx
            ay += w * sy
            az += w * sz
    return ax, ay, az


@exact
def _deepest(world, count, at, t, x, y, z):
    """:func:`clearance` over the objects of a world record, sparing those surely clear (reach 0):
    (c, nx, ny, nz, k), k the object's place in the record (-1 when every one is clear)."""
    c, gx, gy, gz, k = math.inf, 0.0, 0.0, 0.0, -1
    for j in range(count):
        o = int(world[at + j])
        ox, oy, oz = _origin(world, o, t)
        if _within(ox, oy, oz, _reach(world, o, 0.0), x, y, z):
            cj, jx, jy, jz = object_clearance(world, o, t, x, y, z)
            if cj < c:
                c, gx, gy, gz, k = cj, jx, jy, jz, j
    return c, gx, gy, gz, k


@exact
def _least_room(world, count, at, t, x, y, z, sx, sy, sz, reach, inside_convex):
    """The least :func:`object_room` of (x, y, z), a point within ``reach`` of (sx, sy, sz), over the
    objects that may come that near (s, x) at all: one farther from s than its bound plus reach has
    room at every such point. inf when none may. With ``inside_convex`` (1.0; 0.0: without), the
    arena objects of a convex shape (box, sphere, cylinder, capsule) are left out: a segment
    between two points inside one stays inside it. The flag is a float, not a bool: numba
    compiles a function once for each literal bool it is called with, and float constants are
    not literals."""
    least = math.inf
    for j in range(count):
        o = int(world[at + j])
        if inside_convex > 0.0 and world[o + SIDE] < 0.0 and int(world[o + KIND]) <= g.CAPSULE:
            continue
        ox, oy, oz = _origin(world, o, t)
        if _within(ox, oy, oz, _reach(world, o, reach), sx, sy, sz):
            least = min(least, object_room(world, o, t, x, y, z))
    return least


@exact
def march(world, count, at, t, ax, ay, az, bx, by, bz, room, free_b):
    """How far along the segment a -> b a point free at a (with ``room`` there) gets at time t: b
    when no solid lies between, else the last point the march reached before the first one.
    ``free_b``: 1.0 when b is known to be free (then no convex arena object needs looking at),
    else 0.0 (a float, as :func:`_least_room`'s flag).

    The march steps by the room it has (a ball that holds no solid), less :data:`SKIN`, or by
    1/:data:`MARCH` of the segment where that is less: only a solid shorter than that along the
    segment can lie unseen between two of its points, and the point it stops at has room."""
    dx, dy, dz = bx - ax, by - ay, bz - az
    length = math.sqrt(dx * dx + dy * dy + dz * dz)
    least_step = length / MARCH
    s, px, py, pz = 0.0, ax, ay, az
    while True:
        step = max(room - SKIN, least_step)
        if s + step >= length:
            end = _least_room(world, count, at, t, bx, by, bz, ax, ay, az, length, free_b)
            return (bx, by, bz) if end > 0.0 else (px, py, pz)
        s += step
        u = s / length
        qx, qy, qz = ax + u * dx, ay + u * dy, az + u * dz
        room = _least_room(world, count, at, t, qx, qy, qz, ax, ay, az, length, free_b)
        if not room > 0.0:
            return px, py, pz
        px, py, pz = qx, qy, qz


@exact
def push(c, gx, gy, gz, last_c, lx, ly, lz, crease):
    """The displacement of one projection: the Newton step along g to clearance :data:`SKIN`; or,
    in a ``crease`` (the point left the object of normal l, at clearance ``last_c``, into the one
    of normal g), the least step that reaches SKIN from both at once (to first order), when the
    two normals are at least 6 degrees apart."""
    g2 = gx * gx + gy * gy + gz * gz
    if crease:
        l2 = lx * lx + ly * ly + lz * lz
        lg = lx * gx + ly * gy + lz * gz
        det = l2 * g2 - lg * lg
        if det > 0.01 * l2 * g2:
            r0, r1 = SKIN - last_c, SKIN - c
            a, b = (r0 * g2 - r1 * lg) / det, (r1 * l2 - r0 * lg) / det
            return a * lx + b * gx, a * ly + b * gy, a * lz + b * gz
    s = (SKIN - c) / g2
    return s * gx, s * gy, s * gz


@exact
def _followed(x, y, z, planar):
    """The normal (x, y, z) as a projection follows it (its part in the plane for a planar flock),
    and whether it is at least :data:`TRUSTED_NORMAL` long: a Newton step along a shorter one
    would go more than 1/TRUSTED_NORMAL times the depth."""
    if planar:
        z = 0.0
    return x, y, z, x * x + y * y + z * z >= TRUSTED_NORMAL * TRUSTED_NORMAL


@exact
def project(world, count, at, t, x, y, z, planar):
    """A point in a solid projected out of the deepest object (:func:`push`), at most
    :data:`MAX_PUSHES` times: (x, y, z, freed). It gives up where a normal is too short to follow
    (:data:`TRUSTED_NORMAL`: a grid's gradient on a thin part's middle; a face nearly across a
    planar flock's plane), so no push goes more than 1/TRUSTED_NORMAL times the depth."""
    c, gx, gy, gz, k = _deepest(world, count, at, t, x, y, z)
    last, pushes = -1, 0
    while c <= 0.0 and pushes < MAX_PUSHES:
        gx, gy, gz, trusted = _followed(gx, gy, gz, planar)
        if not trusted:
            break
        crease = last >= 0 and last != k
        last_c, lx, ly, lz = 0.0, 0.0, 0.0, 0.0
        if crease:
            last_c, lx, ly, lz = object_clearance(world, int(world[at + last]), t, x, y, z)
            lx, ly, lz, crease = _followed(lx, ly, lz, planar)
        dx, dy, dz = push(c, gx, gy, gz, last_c, lx, ly, lz, crease)
        x, y, z = x + dx, y + dy, z + dz
        last, pushes = k, pushes + 1
        c, gx, gy, gz, k = _deepest(world, count, at, t, x, y, z)
    return x, y, z, c > 0.0 and _least_room(world, count, at, t, x, y, z, x, y, z, 0.0, 0.0) > 0.0


@exact
def escape(world, count, at, t, x, y, z, planar, radius):
    """The roomiest free point of the nearest ring around (x, y, z) that has one: 26 directions (the
    8 of its plane for a planar flock) at ``radius``, then twice as far, :data:`ESCAPE_RINGS`
    times: (x, y, z, found)."""
    for _ in range(ESCAPE_RINGS):
        best, bx, by, bz = 0.0, x, y, z
        for i in range(-1, 2):
            for j in range(-1, 2):
                for k in range(-1, 2):
                    if (i == 0 and j == 0 and k == 0) or (planar and k != 0):
                        continue
                    u = radius / math.sqrt(i * i + j * j + k * k)
                    qx, qy, qz = x + u * i, y + u * j, z + u * k
                    room = _least_room(world, count, at, t, qx, qy, qz, qx, qy, qz, 0.0, 0.0)
                    if room > best:
                        best, bx, by, bz = room, qx, qy, qz
        if best > 0.0:
            return bx, by, bz, True
        radius *= 2.0
    return x, y, z, False


@exact
def _move(world, count, at, t, ox, oy, oz, x, y, z, length, room, room_p, planar):
    """:func:`keep_out` for a boid free at o (``room`` there, ``room_p`` at p: each over the
    objects that may come within the move's ``length`` of it)."""
    if room_p > 0.0:
        if room + room_p >= length:  # the balls of room around o and p cover the move
            return x, y, z
        return march(world, count, at, t, ox, oy, oz, x, y, z, room, 1.0)
    qx, qy, qz, freed = project(world, count, at, t, x, y, z, planar)
    ex, ey, ez = qx - x, qy - y, qz - z
    if freed and ex * ex + ey * ey + ez * ez <= length * length:
        mx, my, mz = march(world, count, at, t, ox, oy, oz, qx, qy, qz, room, 1.0)
        if mx == qx and my == qy and mz == qz:
            return qx, qy, qz
    return march(world, count, at, t, ox, oy, oz, x, y, z, room, 0.0)


@inlined
def _near_path(ax, ay, az, bx, by, bz, bound, x, y, z):
    """Whether an object whose origin moved from a to b in a step may have passed its solid over
    (x, y, z): the point lies within its ``bound`` of the segment (a step is short: the segment
    stands for the path)."""
    dx, dy, dz = bx - ax, by - ay, bz - az
    d2 = dx * dx + dy * dy + dz * dz
    u = 0.0 if d2 == 0.0 else min(1.0, max(0.0, ((x - ax) * dx + (y - ay) * dy + (z - az) * dz) / d2))
    return _within(ax + u * dx, ay + u * dy, az + u * dz, bound, x, y, z)


@exact
def carried(world, count, at, t0, t1, x, y, z):
    """(x, y, z), a point free at t0, where the moving objects leave it at t1: where one's solid
    passed over it during the step (a blade, a plate faster than half its thickness a step), the
    point goes with the object, to the last free point of its way back (the segment from where the
    object carried it, rigidly, to where it was): on the side it was on. Elsewhere the point
    itself. The way back is a chord of a turning object's arc, which a step keeps short."""
    for j in range(count):
        o = int(world[at + j])
        if world[o + MOTION] < 0.0:
            continue
        p0x, p0y, p0z, q0w, q0x, q0y, q0z = object_frame(world, o, t0)
        p1x, p1y, p1z, q1w, q1x, q1y, q1z = object_frame(world, o, t1)
        if not _near_path(p0x, p0y, p0z, p1x, p1y, p1z, world[o + BOUND], x, y, z):
            continue
        lx, ly, lz = g.rotate_inverse(q0w, q0x, q0y, q0z, x - p0x, y - p0y, z - p0z)
        wx, wy, wz = g.rotate(q1w, q1x, q1y, q1z, lx, ly, lz)
        ax, ay, az = p1x + wx, p1y + wy, p1z + wz  # the point carried with the object
        dx, dy, dz = x - ax, y - ay, z - az
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        if length == 0.0:
            continue
        room = _least_room(world, count, at, t1, ax, ay, az, ax, ay, az, length, 0.0)
        if not room > 0.0:  # another object covers it there: the keep-out's own search decides
            continue
        mx, my, mz = march(world, count, at, t1, ax, ay, az, x, y, z, room, 0.0)
        if mx != x or my != y or mz != z:
            return mx, my, mz
    return x, y, z


@exact
def keep_out(x, y, z, ox, oy, oz, world, t0, t, planar):
    """Where a boid that moved from o = (ox, oy, oz) at t0 to p = (x, y, z) may be at time t: out
    of every object (with room > 0, :func:`object_room`).

    - Swept at o: a moving object whose solid passed over o during the step carries the boid
      (:func:`carried`), which then moves by the same move from where it was carried to.

    - Free at o: the move is a segment, checked against every object (:func:`march`). p when
      nothing solid lies between; where p landed in a solid, its projection out (sliding along
      the surface) if that lies no farther from p than the move is long and the segment from o
      to it is as clear; else the last point before the first solid along the move. So no move
      goes through a solid at least 1/:data:`MARCH` of its length thick (along it), and a boid
      ends at most twice its move's length from where it was.
    - Covered at o (an object moved, turned or was edited onto it): o is first projected out of
      the objects (:func:`project`), or where that gives up, moved to the nearest free point of
      the escape search (:func:`escape`); then the boid moves on from there as a free one would,
      by the same move. So a boid an object sweeps over leaves it on the side it was on."""
    count, at = listed(world)
    dx, dy, dz = x - ox, y - oy, z - oz
    if moving(world):  # a still world carries nothing: most worlds skip the call
        cx, cy, cz = carried(world, count, at, t0, t, ox, oy, oz)
        if cx != ox or cy != oy or cz != oz:
            ox, oy, oz = cx, cy, cz
            x, y, z = cx + dx, cy + dy, cz + dz
    length = math.sqrt(dx * dx + dy * dy + dz * dz)
    room_p = _least_room(world, count, at, t, x, y, z, x, y, z, length, 0.0)
    if room_p > length:  # the ball of room around p holds the whole move: most boids, most steps
        return x, y, z
    room = _least_room(world, count, at, t, ox, oy, oz, ox, oy, oz, length, 0.0)
    if room > 0.0:
        return _move(world, count, at, t, ox, oy, oz, x, y, z, length, room, room_p, planar)
    qx, qy, qz, freed = project(world, count, at, t, ox, oy, oz, planar)
    if not freed:
        depth = -_least_room(world, count, at, t, ox, oy, oz, ox, oy, oz, 0.0, 0.0)
        qx, qy, qz, freed = escape(world, count, at, t, ox, oy, oz, planar, max(depth, SKIN))
    if not freed:  # nowhere free within 2^23 times its depth: the world leaves it no room
        return x, y, z
    x, y, z = qx + dx, qy + dy, qz + dz
    room = _least_room(world, count, at, t, qx, qy, qz, qx, qy, qz, length, 0.0)
    room_p = _least_room(world, count, at, t, x, y, z, x, y, z, length, 0.0)
    return _move(world, count, at, t, qx, qy, qz, x, y, z, length, room, room_p, planar)
