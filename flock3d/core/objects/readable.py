"""The readable twins of the compiled keep-out code, as the reference engine runs them: the same
segment, projections and search, written object by object, measured by :mod:`.oracle`'s
readable distances (never the compiled ones)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from flock3d.core.objects.keep_out import ESCAPE_RINGS, MARCH, MAX_PUSHES, SKIN, TRUSTED_NORMAL
from flock3d.core.objects.oracle import Body

__all__ = ["keep_out_reference", "away_reference", "push_reference"]


def push_reference(c: float, n: np.ndarray, last_c: float, last_n: np.ndarray, crease: bool) -> np.ndarray:
    """:func:`push`, readably: the Newton step along n to clearance SKIN; in a crease (the point
    left the object of normal last_n, at clearance last_c, into the one of normal n), the least
    step that reaches SKIN from both to first order, where the normals are at least 6 degrees
    apart (the system's determinant at least 1% of its largest): the combination a last_n + b n
    with last_n . step = SKIN - last_c and n . step = SKIN - c."""
    if crease:
        gram = np.array([[last_n @ last_n, last_n @ n], [last_n @ n, n @ n]])
        det = gram[0, 0] * gram[1, 1] - gram[0, 1] ** 2
        if det > 0.01 * gram[0, 0] * gram[1, 1]:
            a, b = np.linalg.solve(gram, [SKIN - last_c, SKIN - c])
            return a * last_n + b * n
    return (SKIN - c) / (n @ n) * n


def keep_out_reference(position, start, bodies: Sequence[Body], t0: float, t: float, planar: bool):
    """:func:`keep_out`, readably: the same carrying, segment, projections and search, measured
    body by body with :meth:`Body.clearance` and :meth:`Body.room`."""

    def norm(v):  # as the compiled code rounds it
        return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])

    def room_at(p, near=None, reach=0.0, inside_convex=False):  # over the objects that may come within reach
        near = p if near is None else near
        rooms = [
            b.room(t, p)
            for b in bodies
            if not (inside_convex and b.side < 0.0 and b.convex)
            and (b.side < 0.0 or norm(near - b.placed(t)[0]) <= b.bound + reach)
        ]
        return min(rooms, default=math.inf)

    def deepest(p):
        c, n, k = math.inf, np.zeros(3), -1
        for j, b in enumerate(bodies):
            cj, nj = b.clearance(t, p)
            if cj < c:
                c, n, k = cj, nj, j
        return c, n, k

    def followed(n):
        n = np.array(n, dtype=np.float64)
        if planar:
            n[2] = 0.0
        return n, np.dot(n, n) >= TRUSTED_NORMAL * TRUSTED_NORMAL

    def along(a, b, room, free_b):  # march
        length = norm(b - a)
        s, p = 0.0, a
        while True:
            step = max(room - SKIN, length / MARCH)
            if s + step >= length:
                return b if room_at(b, a, length, free_b) > 0.0 else p
            s += step
            q = a + s / length * (b - a)
            room = room_at(q, a, length, free_b)
            if not room > 0.0:
                return p
            p = q

    def projected(p):
        c, n, k = deepest(p)
        last, pushes = -1, 0
        while c <= 0.0 and pushes < MAX_PUSHES:
            n, trusted = followed(n)
            if not trusted:
                break
            crease, last_c, previous = last >= 0 and last != k, 0.0, np.zeros(3)
            if crease:
                last_c, previous = bodies[last].clearance(t, p)
                previous, crease = followed(previous)
            p = p + push_reference(c, n, last_c, previous, crease)
            last, pushes = k, pushes + 1
            c, n, k = deepest(p)
        return p, c > 0.0 and room_at(p) > 0.0

    def searched(p, radius):  # escape
        steps = [np.array(d, dtype=np.float64) for d in np.ndindex(3, 3, 3) if d != (1, 1, 1)]
        steps = [d - 1.0 for d in steps if not (planar and d[2] != 1)]
        for _ in range(ESCAPE_RINGS):
            rooms = [(room_at(p + radius / norm(d) * d), i) for i, d in enumerate(steps)]
            best, i = max(rooms, key=lambda r: (r[0], -r[1]))
            if best > 0.0:
                return p + radius / norm(steps[i]) * steps[i]
            radius *= 2.0
        return p

    def moved(o, p, length, room, room_p):  # from a free o
        if room_p > 0.0:
            return p if room + room_p >= length else along(o, p, room, True)
        q, freed = projected(p)
        near = np.dot(q - p, q - p) <= length * length
        if freed and near and np.array_equal(along(o, q, room, True), q):
            return q
        return along(o, p, room, False)

    def near_path(a, e, bound, o):  # whether a body whose origin moved from a to e passed over o
        d = e - a
        u = 0.0 if d @ d == 0.0 else min(1.0, max(0.0, ((o - a) @ d) / (d @ d)))
        return norm(o - (a + u * d)) <= bound

    def carried(o):  # a moving body whose solid passed over o takes it along, back to its last free point
        for b in bodies:
            if b.motion is None:
                continue
            (p0, r0), (p1, r1) = b.placed(t0), b.placed(t)
            if not near_path(p0, p1, b.bound, o):
                continue
            a = p1 + r1 @ (r0.T @ (o - p0))  # o carried rigidly with the body
            length = norm(o - a)
            room = room_at(a, a, length) if length > 0.0 else 0.0
            if not room > 0.0:
                continue
            m = along(a, o, room, False)
            if not np.array_equal(m, o):
                return m
        return o

    p, o = np.array(position, dtype=np.float64), np.array(start, dtype=np.float64)
    move = p - o
    c = carried(o)
    if not np.array_equal(c, o):
        o, p = c, c + move
    length = norm(move)
    room_p = room_at(p, p, length)
    if room_p > length:
        return p
    room = room_at(o, o, length)
    if room > 0.0:
        return moved(o, p, length, room, room_p)
    q, freed = projected(o)
    if not freed:
        q = searched(o, max(-room_at(o), SKIN))
        if not room_at(q) > 0.0:
            return p
    return moved(q, q + move, length, room_at(q, q, length), room_at(q + move, q + move, length))


def away_reference(n: np.ndarray, f: np.ndarray, boid) -> np.ndarray:
    """:func:`away`, readably."""
    if not np.any(n):
        return np.zeros(3)
    n = n / np.linalg.norm(n)
    across = n - np.dot(n, f) * f
    if np.dot(n, f) >= 0.0:
        return across
    if np.dot(across, across) < 1e-12:
        across = np.asarray(boid.orientation.rotate(np.array([1.0, 0.0, 0.0])))
    return across / np.linalg.norm(across)
