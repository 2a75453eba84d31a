"""The reference engine's readable object distances (flock3d.core.objects.oracle) against the
compiled ones the fast engine runs: the same numbers to 1e-12 on points inside, outside and near
every shape, turned, scaled and moving; and the reference's object code calls nothing compiled."""

from __future__ import annotations

import ast
import dis
import inspect

import numba
import numpy as np
import pytest

from flock3d.core.objects import (
    Motion,
    Object,
    SDFGrid,
    object_clearance,
    object_frame,
    object_room,
    object_sdf,
    oracle,
    readable,
)
from flock3d.core.objects.oracle import bodies, euler, local_distance
from flock3d.core.objects.packing import pack_objects
from flock3d.core.terms import objects as objects_term
from flock3d.core.terms import perching

TOLERANCE = 1e-12


def _mesh_grid() -> SDFGrid:
    """A grid of a rounded box's distances, with a little noise: any values interpolate."""
    rng = np.random.default_rng(3)
    origin, cell, n = (-2.0, -1.5, -2.5), 0.25, (17, 13, 21)
    axes = [origin[a] + cell * np.arange(n[a]) for a in range(3)]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    q = np.stack([np.abs(x) - 1.0, np.abs(y) - 0.5, np.abs(z) - 1.5])
    values = np.linalg.norm(np.maximum(q, 0.0), axis=0) + np.minimum(q.max(axis=0), 0.0) - 0.2
    return SDFGrid(origin, cell, np.ascontiguousarray(values + 0.01 * rng.standard_normal(values.shape)))


MOTION = Motion(
    points=((0.0, 0.0, 0.0), (3.0, 1.0, -2.0), (-1.0, 2.0, 4.0), (0.0, 0.0, 0.0)),
    times=(0.0, 1.5, 2.0, 4.0),
    loop=True,
    rotations=((0.0, 0.0, 0.0), (80.0, -30.0, 10.0), (80.0001, -30.0, 10.0), (0.0, 0.0, 0.0)),
)
TURN = (37.0, -21.0, 64.0)
CASES = {
    "box": Object("box", size=(2.0, 3.0, 1.5), rotation=TURN, scale=(1.5, 0.7, 2.0)),
    "sphere": Object("sphere", radius=1.7, scale=1.3),
    "cylinder": Object("cylinder", radius=1.2, height=3.0, rotation=TURN, scale=(1.4, 0.6, 1.4)),
    "capsule": Object("capsule", radius=0.8, height=3.0, rotation=TURN, scale=(0.9, 1.6, 0.9)),
    "torus": Object("torus", radius=2.0, tube=0.5, rotation=TURN, scale=1.2),
    "plane": Object("plane", rotation=(0.0, 12.0, -7.0)),
    "heightfield": Object(
        "heightfield", size=(8.0, 6.0), height=2.0, seed=11, rotation=(25.0, 0.0, 0.0), scale=(1.2, 0.8, 1.1)
    ),  # fmt: skip
    "mesh": Object("mesh", file="m.obj", rotation=TURN),
}


def _worlds(shape):
    """The case of a shape still and moving, as an obstacle and as an arena."""
    o = CASES[shape]
    still = o._replace(position=(0.5, -0.3, 0.8))
    for placed in (still, still._replace(motion=MOTION)):
        yield placed
        if shape not in ("plane", "heightfield"):
            yield placed._replace(role="arena")


def _points(rng, count, reach):
    """(count, 3) points spread over a ball of radius ``reach`` around the origin, denser near it."""
    u = rng.standard_normal((count, 3))
    return u / np.linalg.norm(u, axis=1)[:, None] * reach * rng.random((count, 1)) ** 0.7


def _disagreement(o, fields, rng):
    """The largest differences between the compiled and the readable measures of object o over
    random points (and points near its surface) and times: the signed distance, the normal (where
    |d| >= 0.01), the normal times |d| (everywhere), the clearance and its direction (scaled so),
    the room, and the frame. A normal is the direction of an offset of length |d| whose coordinates
    carry rounding errors of ~1e-16 |p|, so near a surface's edge it is only good to ~1e-16 / |d|."""
    data, offsets = pack_objects([o], fields)
    (body,) = bodies([o], fields)
    reach = 3.0 * (body.bound if np.isfinite(body.bound) else 6.0)
    worst = dict.fromkeys(("sdf", "normal", "normal*|d|", "clearance", "direction*|c|", "room", "frame"), 0.0)

    def note(key, value):
        worst[key] = max(worst[key], float(np.max(np.abs(value))))

    for t in (0.7, 1.9991, 3.3, 11.2):
        fast_frame = np.array(object_frame(data, 0, t))
        origin, rotation = body.frame(t)
        sign = 1.0 if fast_frame[3:] @ rotation.q >= 0.0 else -1.0  # q and -q are one rotation
        note("frame", fast_frame - np.concatenate([origin, sign * rotation.q]))
        for p in origin + _points(rng, 80, reach):
            d, n = body.sdf(t, p)
            near = p - (d + 1e-3 * rng.standard_normal()) * n
            for q in (p, near):
                d, n = body.sdf(t, q)
                fast_d, *fast_n = object_sdf(data, 0, t, *q)
                note("sdf", fast_d - d)
                note("normal*|d|", (fast_n - n) * abs(d))
                if abs(d) >= 0.01:
                    note("normal", fast_n - n)
                c, n = body.clearance(t, q)
                fast_c, *fast_n = object_clearance(data, 0, t, *q)
                note("clearance", fast_c - c)
                note("direction*|c|", (fast_n - n) * min(abs(c), 1.0))
                note("room", object_room(data, 0, t, *q) - body.room(t, q))
    return worst


@pytest.mark.parametrize("shape", list(CASES))
def test_the_readable_distances_equal_the_compiled_ones(shape):
    rng = np.random.default_rng(7)
    fields = {0: _mesh_grid()} if shape == "mesh" else None
    for o in _worlds(shape):
        worst = _disagreement(o, fields, rng)
        assert max(worst.values()) < TOLERANCE, f"{shape} ({o.role}, moving: {o.motion is not None}): {worst}"


def test_the_points_tried_reach_inside_and_outside_every_shape():
    rng = np.random.default_rng(7)
    for shape, o in CASES.items():
        fields = {0: _mesh_grid()} if shape == "mesh" else None
        (body,) = bodies([o], fields)
        reach = 3.0 * (body.bound if np.isfinite(body.bound) else 6.0)
        signs = {np.sign(body.sdf(0.0, p)[0]) for p in _points(rng, 400, reach)}
        assert signs == {-1.0, 1.0}, shape


@pytest.mark.parametrize(
    ("shape", "p", "d", "n"),
    [
        ("box", (0.0, 0.0, 0.0), -1.0, (1.0, 0.0, 0.0)),  # ties inside: the x face, the positive one
        ("box", (2.0, 2.0, 0.0), np.sqrt(2.0), (np.sqrt(0.5), np.sqrt(0.5), 0.0)),
        ("sphere", (0.0, 0.0, 0.0), -1.0, (0.0, 1.0, 0.0)),
        ("cylinder", (0.0, 0.0, 0.0), -1.0, (1.0, 0.0, 0.0)),  # the side wins a tie with the caps
        ("cylinder", (0.0, -4.0, 0.0), 3.0, (0.0, -1.0, 0.0)),
        ("capsule", (0.0, 0.5, 0.0), -1.0, (1.0, 0.0, 0.0)),
        ("capsule", (0.0, 4.0, 0.0), 2.0, (0.0, 1.0, 0.0)),
        ("torus", (0.0, 0.0, 0.0), 1.5, (-1.0, 0.0, 0.0)),
        ("torus", (2.0, 0.0, 0.0), -0.5, (1.0, 0.0, 0.0)),
        ("plane", (5.0, -2.0, 1.0), -2.0, (0.0, 1.0, 0.0)),
    ],
)
def test_each_closed_form_at_points_whose_distance_is_known(shape, p, d, n):
    sizes = {"box": (1.0, 1.0, 1.0), "sphere": (1.0,), "cylinder": (1.0, 1.0), "capsule": (1.0, 1.0),
             "torus": (2.0, 0.5), "plane": ()}[shape]  # fmt: skip
    body = oracle.Body(shape, 1.0, np.zeros(3), euler(0.0, 0.0, 0.0), sizes, np.inf, False)
    got_d, got_n = local_distance(body, np.array(p))
    assert got_d == pytest.approx(d, abs=1e-15)
    assert got_n == pytest.approx(n, abs=1e-15)


def test_the_euler_convention_turns_z_as_the_geometry_notes_say():
    assert euler(90.0, 0.0, 0.0).rotate([0.0, 0.0, 1.0]) == pytest.approx([1.0, 0.0, 0.0])
    assert euler(0.0, 90.0, 0.0).rotate([0.0, 0.0, 1.0]) == pytest.approx([0.0, -1.0, 0.0])
    assert euler(0.0, 0.0, 90.0).rotate([1.0, 0.0, 0.0]) == pytest.approx([0.0, 1.0, 0.0])


def _compiled_names(code, namespace):
    """The global names a function's code (and the code nested in it) reads that are compiled."""
    loaded = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    names = {n for n in loaded if isinstance(namespace.get(n), numba.core.dispatcher.Dispatcher)}
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _compiled_names(const, namespace)
    return names


def test_the_reference_engine_measures_objects_with_nothing_compiled():
    for module in (oracle, readable):
        compiled = [n for n, v in vars(module).items() if isinstance(v, numba.core.dispatcher.Dispatcher)]
        assert compiled == [], f"{module.__name__} holds compiled {compiled}"
        imported = {
            n.module for n in ast.walk(ast.parse(inspect.getsource(module))) if isinstance(n, ast.ImportFrom)
        }
        assert imported.isdisjoint({"flock3d.core.geometry", "flock3d.core.objects.distance"}), (
            module.__name__
        )
    for method in (
        objects_term.Objects.reference,
        objects_term.Objects.constrained,
        perching.Perching.constrained,
    ):
        namespace = vars(inspect.getmodule(method))
        assert _compiled_names(method.__code__, namespace) == set(), method.__qualname__
