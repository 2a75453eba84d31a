"""Signed distances of the world's objects: closed forms against brute force, gradients against
finite differences, frames, sampled grids, keyframed motion and heightfields."""

import math

import numpy as np
import pytest
from scipy.spatial import cKDTree

from flock3d.core import geometry as g
from flock3d.core.objects import Object, object_sdf, pack_objects

RNG = np.random.default_rng(7)


def surface_samples(shape: str, n: int = 400):
    """Dense points on the surface of each primitive (local frame), by its parametrisation."""
    u = np.linspace(0.0, 1.0, n)
    uu, vv = np.meshgrid(u, u, indexing="ij")
    uu, vv = uu.ravel(), vv.ravel()
    if shape == "box":  # half sides 1, 2, 0.5: six faces
        h = np.array([1.0, 2.0, 0.5])
        faces = []
        for axis in range(3):
            a, b = [k for k in range(3) if k != axis]
            for sign in (-1.0, 1.0):
                f = np.zeros((len(uu), 3))
                f[:, axis] = sign * h[axis]
                f[:, a] = (2 * uu - 1) * h[a]
                f[:, b] = (2 * vv - 1) * h[b]
                faces.append(f)
        return np.concatenate(faces)
    theta = 2 * math.pi * uu
    if shape == "cylinder":  # r 1.5, half height 1: side and two caps
        side = np.stack([1.5 * np.cos(theta), 2 * vv - 1, 1.5 * np.sin(theta)], axis=1)
        caps = [
            np.stack(
                [1.5 * np.sqrt(vv) * np.cos(theta), np.full_like(vv, s), 1.5 * np.sqrt(vv) * np.sin(theta)],
                axis=1,
            )
            for s in (-1.0, 1.0)
        ]
        return np.concatenate([side, *caps])
    if shape == "capsule":  # r 1, half segment 1.5
        phi = math.pi * vv
        ball = np.stack([np.sin(phi) * np.cos(theta), np.cos(phi), np.sin(phi) * np.sin(theta)], axis=1)
        ball[:, 1] += np.where(ball[:, 1] >= 0, 1.5, -1.5)
        side = np.stack([np.cos(theta), 3 * vv - 1.5, np.sin(theta)], axis=1)
        return np.concatenate([ball, side])
    if shape == "torus":  # ring 3, tube 1
        phi = 2 * math.pi * vv
        rho = 3 + np.cos(phi)
        return np.stack([rho * np.cos(theta), np.sin(phi), rho * np.sin(theta)], axis=1)
    raise ValueError(shape)


def local_sdf(shape, p):
    x, y, z = p
    return {
        "box": lambda: g.sdf_box(x, y, z, 1.0, 2.0, 0.5),
        "cylinder": lambda: g.sdf_cylinder(x, y, z, 1.5, 1.0),
        "capsule": lambda: g.sdf_capsule(x, y, z, 1.0, 1.5),
        "torus": lambda: g.sdf_torus(x, y, z, 3.0, 1.0),
        "sphere": lambda: g.sdf_sphere(x, y, z, 2.0),
    }[shape]()


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["box", "cylinder", "capsule", "torus"])
def test_closed_forms_are_the_distance_to_the_surface(shape):
    # The nearest of ~10^6 surface samples, found by a k-d tree (exactly the brute force's minimum).
    surface = cKDTree(surface_samples(shape))
    points = RNG.uniform(-5, 5, (300, 3))
    spacing = 2 * math.pi * 4 / 400  # the samples' widest gap bounds the brute force's error
    nearest, _ = surface.query(points)
    for p, brute in zip(points, nearest, strict=True):
        d = local_sdf(shape, p)[0]
        assert abs(abs(d) - brute) < spacing, (p, d, brute)


def test_signs_and_known_values():
    assert g.sdf_box(3.0, 0.0, 0.0, 1.0, 2.0, 0.5) == (2.0, 1.0, 0.0, 0.0)
    d, *n = g.sdf_box(2.0, 3.0, 0.0, 1.0, 2.0, 0.5)  # off an edge: the corner line at (1, 2)
    assert d == pytest.approx(math.sqrt(2)) and n == pytest.approx([2**-0.5, 2**-0.5, 0])
    assert g.sdf_box(0.0, 0.0, 0.1, 1.0, 2.0, 0.5) == pytest.approx((-0.4, 0.0, 0.0, 1.0))
    assert g.sdf_sphere(0.0, 3.0, 4.0, 2.0) == pytest.approx((3.0, 0.0, 0.6, 0.8))
    assert g.sdf_sphere(0.0, 0.0, 0.0, 2.0) == (-2.0, 0.0, 1.0, 0.0)  # the centre: +Y, as stated
    assert g.sdf_cylinder(0.0, 0.0, 0.0, 1.5, 1.0) == (-1.0, 0.0, 1.0, 0.0)  # nearer a cap than the side
    assert g.sdf_cylinder(0.0, 0.0, 3.0, 1.5, 1.0) == pytest.approx((1.5, 0.0, 0.0, 1.0))
    assert g.sdf_cylinder(2.5, 2.0, 0.0, 1.5, 1.0)[0] == pytest.approx(math.sqrt(2))  # off the rim
    assert g.sdf_capsule(0.0, 4.0, 0.0, 1.0, 1.5) == pytest.approx((1.5, 0.0, 1.0, 0.0))
    assert g.sdf_capsule(0.0, 0.2, 0.0, 1.0, 1.5) == (-1.0, 1.0, 0.0, 0.0)  # on the segment: +X
    assert g.sdf_torus(3.0, 0.0, 0.0, 3.0, 1.0) == (-1.0, 1.0, 0.0, 0.0)  # on the ring: outwards
    assert g.sdf_torus(0.0, 0.0, 0.0, 3.0, 1.0)[0] == 2.0  # the hole's centre is outside
    assert g.sdf_plane(5.0, -2.0, 1.0) == (-2.0, 0.0, 1.0, 0.0)


@pytest.mark.parametrize("shape", ["box", "sphere", "cylinder", "capsule", "torus"])
def test_the_normal_is_the_gradient_and_a_unit_vector(shape):
    eps = 1e-6
    for p in RNG.uniform(-4, 4, (200, 3)):
        d, *n = local_sdf(shape, p)
        assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-12)
        fd = [(local_sdf(shape, p + e)[0] - local_sdf(shape, p - e)[0]) / (2 * eps) for e in np.eye(3) * eps]
        if not np.allclose(fd, n, atol=1e-5):  # only where a difference straddles a ridge inside
            assert d < 0 and on_a_ridge(shape, p, 1e-5), (p, n, fd)


def on_a_ridge(shape, p, eps):
    """Whether p lies within eps of the inner medial set of a box or a cylinder, where two faces
    are equally near and the distance has no gradient."""
    x, y, z = np.abs(p)
    if shape == "box":
        q = sorted([x - 1.0, y - 2.0, z - 0.5])
        return q[2] - q[1] < 2 * eps
    if shape == "cylinder":
        return abs((math.hypot(x, z) - 1.5) - (y - 1.0)) < 2 * eps
    return False


def matrix(yaw, pitch, roll):
    """R_y(yaw) R_x(pitch) R_z(roll) written out by hand."""
    y, p, r = np.radians([yaw, pitch, roll])
    ry = np.array([[math.cos(y), 0, math.sin(y)], [0, 1, 0], [-math.sin(y), 0, math.cos(y)]])
    rx = np.array([[1, 0, 0], [0, math.cos(p), -math.sin(p)], [0, math.sin(p), math.cos(p)]])
    rz = np.array([[math.cos(r), -math.sin(r), 0], [math.sin(r), math.cos(r), 0], [0, 0, 1]])
    return ry @ rx @ rz


def rotated(angles, v):
    return np.array(g.rotate(*g.euler_quaternion(*angles), *v))


def test_the_rotation_convention():
    assert rotated((90, 0, 0), (0, 0, 1)) == pytest.approx([1, 0, 0], abs=1e-15)  # yaw: +Z to +X
    assert rotated((0, 90, 0), (0, 0, 1)) == pytest.approx([0, -1, 0], abs=1e-15)  # pitch: nose down
    assert rotated((0, 0, 90), (1, 0, 0)) == pytest.approx([0, 1, 0], abs=1e-15)  # roll: +X to +Y
    # Roll first, then pitch, then yaw: +X rolled to +Y, pitched to (0, 0, 1), yawed to +X.
    assert rotated((90, 90, 90), (1, 0, 0)) == pytest.approx([1, 0, 0], abs=1e-15)
    for angles in RNG.uniform(-400, 400, (50, 3)):
        v = RNG.standard_normal(3)
        assert rotated(angles, v) == pytest.approx(matrix(*angles) @ v, abs=1e-12)
        q = g.euler_quaternion(*angles)
        back = g.to_local(1.0, 2.0, 3.0, *q, *g.to_world(1.0, 2.0, 3.0, *q, *v))
        assert back == pytest.approx(v, abs=1e-12)


def test_rotated_and_scaled_objects_measure_in_their_own_frame():
    # A box of size [1, 2, 4] scaled [2, 1, 0.5] is the box [2, 2, 2], rotated and moved.
    angles, centre = (30.0, -50.0, 120.0), np.array([5.0, -2.0, 7.0])
    obj = Object("box", size=(1.0, 2.0, 4.0), scale=(2.0, 1.0, 0.5), position=tuple(centre), rotation=angles)
    data, offsets = pack_objects([obj])
    r = matrix(*angles)
    for p in centre + RNG.uniform(-4, 4, (100, 3)):
        local = r.T @ (p - centre)
        expected = g.sdf_box(*local, 1.0, 1.0, 1.0)
        d, *n = object_sdf(data, offsets[0], 0.0, *p)
        assert d == pytest.approx(expected[0], abs=1e-12)
        assert n == pytest.approx(r @ np.array(expected[1:]), abs=1e-12)
    # A sphere's one scale multiplies its radius; a capsule's y scale stretches its height only.
    data, offsets = pack_objects(
        [
            Object("sphere", radius=1.5, scale=2.0),
            Object("capsule", radius=1.0, height=4.0, scale=(1.0, 2.0, 1.0)),
        ]
    )
    assert object_sdf(data, offsets[0], 0.0, 0.0, 5.0, 0.0)[0] == pytest.approx(2.0)
    assert object_sdf(data, offsets[1], 0.0, 0.0, 5.0, 0.0)[0] == pytest.approx(1.0)  # height 8: top at 4
    assert object_sdf(data, offsets[1], 0.0, 3.0, 0.0, 0.0)[0] == pytest.approx(2.0)


def linear_grid(a, shape=(5, 6, 7), origin=(-1.0, 2.0, 0.5), h=0.3):
    i, j, k = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    x, y, z = (origin[0] + i * h, origin[1] + j * h, origin[2] + k * h)
    return np.ascontiguousarray(a[0] * x + a[1] * y + a[2] * z + a[3]), origin, h


def test_trilinear_interpolation_is_exact_on_linear_fields():
    a = (0.7, -1.3, 2.1, 0.4)
    values, origin, h = linear_grid(a)
    top = np.array(origin) + (np.array(values.shape) - 1) * h
    for p in RNG.uniform(origin, top, (200, 3)):
        d, *grad = g.grid_sdf(values, *origin, h, *p)
        assert d == pytest.approx(a[0] * p[0] + a[1] * p[1] + a[2] * p[2] + a[3], abs=1e-12)
        assert grad == pytest.approx(a[:3], abs=1e-12)
    # The nodes themselves, to the last bit.
    assert g.grid_sdf(values, *origin, h, origin[0] + 2 * h, origin[1] + 3 * h, origin[2] + h)[
        0
    ] == pytest.approx(values[2, 3, 1], abs=1e-14)


def test_beyond_the_grid_the_distance_grows_by_the_distance_to_its_box():
    values, origin, h = linear_grid((0.2, 0.1, -0.3, 1.0))
    top = np.array(origin) + (np.array(values.shape) - 1) * h
    eps = 1e-6
    for p in RNG.uniform(np.array(origin) - 3, top + 3, (300, 3)):
        c = np.clip(p, origin, top)
        d, *grad = g.grid_sdf(values, *origin, h, *p)
        assert d == pytest.approx(g.grid_sdf(values, *origin, h, *c)[0] + np.linalg.norm(p - c), abs=1e-12)
        assert grad == pytest.approx(grid_difference(values, origin, h, p, eps), abs=1e-5)


def motion_record(points, times, loop, rotations=None):
    obj = Object(
        "sphere", radius=1.0, motion={"points": points, "times": times, "loop": loop, "rotations": rotations}
    )
    from flock3d.core.objects import normalise_object

    data, offsets = pack_objects([normalise_object(obj)])
    return data, int(data[offsets[0] + 13])


def test_keyframed_positions_at_the_knots_between_them_and_looping():
    points = [[0, 0, 0], [10, 0, 0], [10, 5, 0], [0, 0, 0]]
    data, m = motion_record(points, [0.0, 1.0, 3.0, 4.0], True)
    for t, p in zip([0.0, 1.0, 3.0, 4.0], points, strict=True):
        assert g.keyframe_frame(data, m, t)[:3] == pytest.approx(p, abs=1e-12)
    assert g.keyframe_frame(data, m, 0.25)[:3] == pytest.approx([2.5, 0, 0])
    assert g.keyframe_frame(data, m, 2.0)[:3] == pytest.approx([10, 2.5, 0])
    for t in (0.3, 1.7, 3.9):  # the period is 4 s, both ways
        assert g.keyframe_frame(data, m, t + 8.0)[:3] == pytest.approx(
            g.keyframe_frame(data, m, t)[:3], abs=1e-12
        )
        assert g.keyframe_frame(data, m, t - 4.0)[:3] == pytest.approx(
            g.keyframe_frame(data, m, t)[:3], abs=1e-12
        )
    data, m = motion_record(points, [0.0, 1.0, 3.0, 4.0], False)
    assert g.keyframe_frame(data, m, 9.0)[:3] == pytest.approx(points[-1])
    assert g.keyframe_frame(data, m, 1.5)[:3] == pytest.approx([10, 1.25, 0])
    data, m = motion_record([[1, 2, 3], [5, 2, 3]], [2.0, 4.0], False)
    assert g.keyframe_frame(data, m, -1.0)[:3] == pytest.approx([1, 2, 3])  # held before the start


def test_keyframed_rotations_turn_spherically_and_the_distance_follows():
    data, m = motion_record([[0, 0, 0], [0, 0, 0]], [0.0, 2.0], False, [[0, 0, 0], [90, 0, 0]])
    q = g.keyframe_frame(data, m, 1.0)[3:]
    assert q == pytest.approx(g.euler_quaternion(45.0, 0.0, 0.0), abs=1e-12)
    # A box moving along x: its distance at time t is the still box's from the moved point.
    box = Object(
        "box", size=(2.0, 2.0, 2.0), motion={"points": [[0, 0, 0], [10, 0, 0]], "times": [0.0, 10.0]}
    )
    from flock3d.core.objects import normalise_object

    data, offsets = pack_objects([normalise_object(box)])
    for t in (0.0, 2.5, 7.0):
        assert object_sdf(data, offsets[0], t, 20.0, 0.0, 0.0)[0] == pytest.approx(20.0 - t - 1.0)


def test_a_planar_heightfield_measures_exactly():
    # Heights rising 0.5 per unit along x: the ground is the plane y = 0.5 x.
    xs = np.linspace(-10, 10, 11)
    heights = np.repeat((0.5 * xs)[:, None], 7, axis=1)
    flat = heights.reshape(-1)
    for p in RNG.uniform(-8, 8, (100, 3)):
        d, *n = g.heightfield_sdf(flat, 0, 11, 7, -10.0, -6.0, 2.0, 2.0, *p)
        normal = np.array([-0.5, 1.0, 0.0]) / math.sqrt(1.25)
        assert d == pytest.approx(normal @ p, abs=1e-12)
        assert n == pytest.approx(normal, abs=1e-12)


def test_seeded_terrain_is_deterministic_and_signs_are_exact():
    a, b = g.fractal_heights(3), g.fractal_heights(3)
    assert np.array_equal(a, b) and a.min() == 0.0 and a.max() == 1.0
    assert not np.array_equal(a, g.fractal_heights(4))
    flat = (10.0 * a).reshape(-1)
    for x, z in RNG.uniform(-50, 50, (100, 2)):
        h = g.heightfield_height(flat, 0, 129, 129, -50.0, -50.0, 100 / 128, 100 / 128, x, z)[0]
        assert g.heightfield_sdf(flat, 0, 129, 129, -50.0, -50.0, 100 / 128, 100 / 128, x, h + 0.01, z)[0] > 0
        assert g.heightfield_sdf(flat, 0, 129, 129, -50.0, -50.0, 100 / 128, 100 / 128, x, h - 0.01, z)[0] < 0


def grid_difference(values, origin, h, p, eps):
    """The grid's distance differentiated by central differences at p."""
    d = [g.grid_sdf(values, *origin, h, *(p + e))[0] - g.grid_sdf(values, *origin, h, *(p - e))[0]
         for e in np.eye(3) * eps]  # fmt: skip
    return np.array(d) / (2 * eps)


def test_the_grid_gradient_is_the_interpolants_derivative_on_any_field():
    values = np.ascontiguousarray(RNG.standard_normal((4, 5, 6)))
    origin, h, eps = (0.5, -1.0, 2.0), 0.4, 1e-7
    for cell in RNG.integers(0, 3, (100, 3)):
        p = np.array(origin) + (cell + RNG.uniform(0.1, 0.9, 3)) * h  # inside a cell, off its faces
        grad = g.grid_sdf(values, *origin, h, *p)[1:]
        assert grad == pytest.approx(grid_difference(values, origin, h, p, eps), abs=1e-6)


def test_compiled_code_and_python_measure_the_same_distances():
    # The fast engine calls these functions from compiled code, the reference from Python.
    import numba

    from flock3d.core.objects import clearance, normalise_object

    objects = [normalise_object(o) for o in (
        Object("box", size=(2.0, 3.0, 4.0), rotation=(10.0, 20.0, 30.0), position=(1.0, 2.0, 3.0)),
        Object("torus", radius=4.0, tube=1.0, motion={"points": [[0, 0, 0], [0, 5, 0]], "times": [0, 2],
                                                      "rotations": [[0, 0, 0], [0, 90, 0]]}),
        Object("heightfield", size=(40.0, 40.0), height=5.0, seed=1, position=(0.0, -6.0, 0.0)),
        Object("capsule", radius=1.0, height=6.0, role="arena", scale=(9.0, 3.0, 9.0)),
    )]  # fmt: skip
    data, offsets = pack_objects(objects)

    @numba.njit
    def compiled(data, offsets, points, t):
        out = np.empty((points.shape[0], 5))
        for i in range(points.shape[0]):
            c, nx, ny, nz, k = clearance(data, offsets, t, points[i, 0], points[i, 1], points[i, 2])
            out[i, 0], out[i, 1], out[i, 2], out[i, 3], out[i, 4] = c, nx, ny, nz, k
        return out

    points = RNG.uniform(-12, 12, (500, 3))
    fast = compiled(data, offsets, points, 0.7)
    python = np.array([clearance(data, offsets, 0.7, *p) for p in points])
    assert np.abs(fast - python).max() <= 1e-12
    assert set(fast[:, 4]) == {0.0, 1.0, 2.0, 3.0}  # every object is the nearest somewhere
