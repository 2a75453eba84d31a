"""Quaternion maths for boid orientations, vectorised and numba-compiled.

Quaternions are unit, stored as ``(w, x, y, z)`` in (N, 4) float64 arrays.
Body axes follow Unity: forward = +Z, up = +Y, right = +X; ``forward(q)`` is
``q`` applied to (0, 0, 1).

The scalar functions (``*_of``) are the single implementation: the fast step
kernel inlines them and the array functions loop over them. pyquaternion stays
out of this module on purpose; the reference implementation and the tests use
it as an independent check.
"""

from __future__ import annotations

import functools
import math
import types
from typing import NamedTuple

import numba
import numpy as np
from numba.core.dispatcher import Dispatcher

__all__ = [
    "forward",
    "up",
    "look_rotation",
    "rotate_towards",
    "turn_limit",
    "TurnLimit",
    "to_matrices",
    "multiply",
    "in_python",
]

_jit = numba.njit(cache=True, fastmath=False, inline="always")

#: Up to this many rows :func:`look_rotation` runs the scalar function in Python, in less time
#: than a first run would spend compiling its loop (placing a scene's flock, a few predators).
PYTHON_ROWS = 2048

#: Below this |up x forward| a direction counts as vertical and the up hint becomes +Z.
VERTICAL_TOLERANCE = 1e-9


@_jit
def forward_of(w, x, y, z):
    """Forward axis (0, 0, 1) rotated by q."""
    return 2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)


@_jit
def up_of(w, x, y, z):
    """Up axis (0, 1, 0) rotated by q."""
    return 2.0 * (x * y - w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + w * x)


@_jit
def right_of(w, x, y, z):
    """Right axis (1, 0, 0) rotated by q."""
    return 1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y)


@_jit
def multiply_of(aw, ax, ay, az, bw, bx, by, bz):
    """Hamilton product a * b (apply b, then a)."""
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


@_jit
def normalized_of(w, x, y, z):
    n = math.sqrt(w * w + x * x + y * y + z * z)
    return w / n, x / n, y / n, z / n


@_jit
def look_rotation_of(dx, dy, dz, hx=0.0, hy=1.0, hz=0.0):
    """Rotation taking +Z to direction d, with its up axis towards the hint h (no roll).

    Unity's ``Quaternion.LookRotation(d, h)``; the default hint is world up +Y. When d
    is within 1e-9 of the hint's axis the hint becomes +Z (+Y if the hint was along
    Z), and a zero direction gives the identity.
    """
    # Scale by the largest component first: squaring a tiny vector would underflow to 0.
    scale = max(abs(dx), abs(dy), abs(dz))
    if scale == 0.0:
        return 1.0, 0.0, 0.0, 0.0
    dx, dy, dz = dx / scale, dy / scale, dz / scale
    n = math.sqrt(dx * dx + dy * dy + dz * dz)
    zx, zy, zz = dx / n, dy / n, dz / n
    # right = normalize(hint x forward)
    rx, ry, rz = hy * zz - hz * zy, hz * zx - hx * zz, hx * zy - hy * zx
    rn = math.sqrt(rx * rx + ry * ry + rz * rz)
    if rn <= VERTICAL_TOLERANCE:
        hx, hy, hz = (0.0, 0.0, 1.0) if abs(hz) < 0.9 else (0.0, 1.0, 0.0)
        rx, ry, rz = hy * zz - hz * zy, hz * zx - hx * zz, hx * zy - hy * zx
        rn = math.sqrt(rx * rx + ry * ry + rz * rz)
    rx, ry, rz = rx / rn, ry / rn, rz / rn
    # true up = forward x right
    ux, uy, uz = zy * rz - zz * ry, zz * rx - zx * rz, zx * ry - zy * rx
    # Rotation matrix columns (right, up, forward) to quaternion (Shepperd's method).
    m00, m01, m02 = rx, ux, zx
    m10, m11, m12 = ry, uy, zy
    m20, m21, m22 = rz, uz, zz
    trace = m00 + m11 + m22
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        w, x, y, z = 0.25 * s, (m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s
    elif m00 > m11 and m00 > m22:
        s = 2.0 * math.sqrt(1.0 + m00 - m11 - m22)
        w, x, y, z = (m21 - m12) / s, 0.25 * s, (m01 + m10) / s, (m02 + m20) / s
    elif m11 > m22:
        s = 2.0 * math.sqrt(1.0 + m11 - m00 - m22)
        w, x, y, z = (m02 - m20) / s, (m01 + m10) / s, 0.25 * s, (m12 + m21) / s
    else:
        s = 2.0 * math.sqrt(1.0 + m22 - m00 - m11)
        w, x, y, z = (m10 - m01) / s, (m02 + m20) / s, (m12 + m21) / s, 0.25 * s
    if w < 0.0:  # canonical sign: w >= 0
        w, x, y, z = -w, -x, -y, -z
    return normalized_of(w, x, y, z)


class TurnLimit(NamedTuple):
    """A maximum turn angle, with the cosines and sines :func:`rotate_towards_of` needs."""

    cos_max: float
    """cos(max_angle), or -1 when max_angle >= pi (every turn is allowed)."""
    cos_half: float
    """cos(min(max_angle, pi) / 2)."""
    sin_half: float
    """sin(min(max_angle, pi) / 2)."""


def turn_limit(max_angle: float) -> TurnLimit:
    """The :class:`TurnLimit` for a largest turn of ``max_angle`` radians (may be inf)."""
    angle = min(float(max_angle), math.pi)
    return TurnLimit(math.cos(angle), math.cos(angle / 2.0), math.sin(angle / 2.0))


@_jit
def rotate_towards_of(w, x, y, z, dx, dy, dz, cos_max, cos_half, sin_half):
    """Turn q so that its forward moves towards unit direction d by at most the limit.

    The turn is the minimal-arc rotation about forward x d (about the boid's up
    when d is exactly opposite forward), applied on the left: ``q' = T * q``.
    Spec step 9; equals ``Quaternion.RotateTowards(q, FromToRotation(f, d) * q, max)``.
    The limit comes from :func:`turn_limit`; no trigonometric function is
    evaluated here (they dominated the step's cost). Returns the new, renormalised
    quaternion.
    """
    fx, fy, fz = forward_of(w, x, y, z)
    ax, ay, az = fy * dz - fz * dy, fz * dx - fx * dz, fx * dy - fy * dx
    sin_t2 = ax * ax + ay * ay + az * az
    cos_t = fx * dx + fy * dy + fz * dz
    if sin_t2 == 0.0:
        if cos_t >= 0.0:
            return w, x, y, z
        # Exactly opposite: turn about the boid's up by the largest allowed angle.
        ax, ay, az = up_of(w, x, y, z)
        s = sin_half / math.sqrt(ax * ax + ay * ay + az * az)
        tw, tx, ty, tz = cos_half, ax * s, ay * s, az * s
    elif cos_t >= cos_max:
        # Within the limit: the whole minimal arc, from half-angle identities.
        # With h = f + d, |h|^2 = 2 (1 + cos t): T = (|h|^2 / 2, f x d) / |h|, which stays
        # accurate near t = pi where 1 + cos t would cancel.
        hx, hy, hz = fx + dx, fy + dy, fz + dz
        h2 = hx * hx + hy * hy + hz * hz
        inv = 1.0 / math.sqrt(h2)
        tw, tx, ty, tz = 0.5 * h2 * inv, ax * inv, ay * inv, az * inv
    else:
        s = sin_half / math.sqrt(sin_t2)
        tw, tx, ty, tz = cos_half, ax * s, ay * s, az * s
    rw, rx, ry, rz = multiply_of(tw, tx, ty, tz, w, x, y, z)
    return normalized_of(rw, rx, ry, rz)


# ----------------------------------------------------------------------------------------
# Array functions: q (N, 4) float64 (w, x, y, z); vectors (N, 3) float64.


@numba.njit(cache=True)
def _forward(q, out):
    for i in range(q.shape[0]):
        out[i, 0], out[i, 1], out[i, 2] = forward_of(q[i, 0], q[i, 1], q[i, 2], q[i, 3])


@numba.njit(cache=True)
def _up(q, out):
    for i in range(q.shape[0]):
        out[i, 0], out[i, 1], out[i, 2] = up_of(q[i, 0], q[i, 1], q[i, 2], q[i, 3])


@numba.njit(cache=True)
def _look_rotation(d, hint, out):
    for i in range(d.shape[0]):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = look_rotation_of(
            d[i, 0], d[i, 1], d[i, 2], hint[0], hint[1], hint[2]
        )


@numba.njit(cache=True)
def _rotate_towards(q, d, cos_max, cos_half, sin_half, out):
    for i in range(q.shape[0]):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = rotate_towards_of(
            q[i, 0], q[i, 1], q[i, 2], q[i, 3], d[i, 0], d[i, 1], d[i, 2], cos_max, cos_half, sin_half
        )


@numba.njit(cache=True)
def _multiply(a, b, out):
    for i in range(a.shape[0]):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = multiply_of(
            a[i, 0], a[i, 1], a[i, 2], a[i, 3], b[i, 0], b[i, 1], b[i, 2], b[i, 3]
        )


@numba.njit(cache=True)
def _to_matrices(q, out):
    for i in range(q.shape[0]):
        w, x, y, z = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        out[i, 0, 0] = 1.0 - 2.0 * (y * y + z * z)
        out[i, 0, 1] = 2.0 * (x * y - w * z)
        out[i, 0, 2] = 2.0 * (x * z + w * y)
        out[i, 1, 0] = 2.0 * (x * y + w * z)
        out[i, 1, 1] = 1.0 - 2.0 * (x * x + z * z)
        out[i, 1, 2] = 2.0 * (y * z - w * x)
        out[i, 2, 0] = 2.0 * (x * z - w * y)
        out[i, 2, 1] = 2.0 * (y * z + w * x)
        out[i, 2, 2] = 1.0 - 2.0 * (x * x + y * y)


@functools.cache
def in_python(fn):
    """The compiled function ``fn`` as plain Python: its own source, calling its compiled callees
    as plain Python too, so that calling it compiles nothing. It rounds as its compiled code does
    where that code is compiled without fast-math (every scalar function here): IEEE arithmetic
    in the same order, the same C library's ``sqrt``, ``sin`` and ``cos``.

    For what Python calls a few times (a scene's objects' rotations, a small flock's first
    orientations), where compiling costs more than running. The copy sees its module's globals
    as they are when it is made: as a decorator, only names defined above the function.
    """
    py = getattr(fn, "py_func", fn)  # fn itself where NUMBA_DISABLE_JIT is set
    callees = {
        name: in_python(value)
        for name in py.__code__.co_names
        if isinstance(value := py.__globals__.get(name), Dispatcher)
    }
    if not callees:
        return py
    plain = types.FunctionType(
        py.__code__, {**py.__globals__, **callees}, py.__name__, py.__defaults__, py.__closure__
    )
    plain.__doc__, plain.__qualname__ = py.__doc__, py.__qualname__
    return plain


def _rows(a, width: int) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != width:
        raise ValueError(f"expected an (N, {width}) array, got shape {a.shape}")
    return a


def forward(q: np.ndarray) -> np.ndarray:
    """Forward unit vectors (N, 3) of orientations q (N, 4)."""
    q = _rows(q, 4)
    out = np.empty((q.shape[0], 3))
    _forward(q, out)
    return out


def up(q: np.ndarray) -> np.ndarray:
    """Up unit vectors (N, 3) of orientations q (N, 4)."""
    q = _rows(q, 4)
    out = np.empty((q.shape[0], 3))
    _up(q, out)
    return out


def look_rotation(directions: np.ndarray, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    """Orientations (N, 4) facing ``directions`` (N, 3), up towards ``up``, no roll.

    With the default world up this is the spec's initial orientation; a planar flock
    in the z = const plane uses up = +Z.
    """
    d = _rows(directions, 3)
    hint = np.asarray(up, dtype=np.float64)
    out = np.empty((d.shape[0], 4))
    if d.shape[0] > PYTHON_ROWS:
        _look_rotation(d, hint, out)
    else:  # the same arithmetic (see in_python), with nothing to compile
        turn, (hx, hy, hz) = in_python(look_rotation_of), hint.tolist()
        for i, (x, y, z) in enumerate(d.tolist()):
            out[i] = turn(x, y, z, hx, hy, hz)
    return out


def rotate_towards(q: np.ndarray, directions: np.ndarray, max_angle: float) -> np.ndarray:
    """Orientations q (N, 4) turned towards unit ``directions`` (N, 3) by at most ``max_angle`` rad."""
    q, d = _rows(q, 4), _rows(directions, 3)
    out = np.empty_like(q)
    _rotate_towards(q, d, *turn_limit(max_angle), out)
    return out


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise Hamilton products a * b of (N, 4) arrays."""
    a, b = _rows(a, 4), _rows(b, 4)
    out = np.empty_like(a)
    _multiply(a, b, out)
    return out


def to_matrices(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (N, 3, 3) of orientations q (N, 4); ``world = M @ body``."""
    q = _rows(q, 4)
    out = np.empty((q.shape[0], 3, 3))
    _to_matrices(q, out)
    return out
