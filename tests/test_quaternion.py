import math
import types

import numba
import numpy as np
import pytest
from pyquaternion import Quaternion

from flock3d.core import quaternion as qm
from flock3d.core.state import _unit_vectors

RNG = np.random.default_rng(42)


def random_quaternions(n: int) -> np.ndarray:
    q = RNG.standard_normal((n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def test_identity_axes_follow_unity():
    q = np.array([[1.0, 0, 0, 0]])
    np.testing.assert_array_equal(qm.forward(q), [[0, 0, 1]])
    np.testing.assert_array_equal(qm.up(q), [[0, 1, 0]])


def test_forward_up_and_matrices_agree_with_pyquaternion():
    q = random_quaternions(200)
    m = qm.to_matrices(q)
    for i in range(len(q)):
        ref = Quaternion(q[i])
        np.testing.assert_allclose(m[i], ref.rotation_matrix, atol=1e-14)
        np.testing.assert_allclose(qm.forward(q[i : i + 1])[0], ref.rotate([0, 0, 1]), atol=1e-14)
        np.testing.assert_allclose(qm.up(q[i : i + 1])[0], ref.rotate([0, 1, 0]), atol=1e-14)


def test_multiply_agrees_with_pyquaternion():
    a, b = random_quaternions(50), random_quaternions(50)
    out = qm.multiply(a, b)
    for i in range(50):
        np.testing.assert_allclose(out[i], (Quaternion(a[i]) * Quaternion(b[i])).elements, atol=1e-14)


def test_look_rotation_faces_the_direction_without_roll():
    d = RNG.standard_normal((500, 3)) * RNG.uniform(0.1, 10, (500, 1))
    q = qm.look_rotation(d)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(qm.forward(q), d / np.linalg.norm(d, axis=1, keepdims=True), atol=1e-13)
    right = qm.to_matrices(q)[:, :, 0]
    # No roll: the right axis stays horizontal and the up axis points upwards.
    np.testing.assert_allclose(right[:, 1], 0.0, atol=1e-13)
    assert np.all(qm.up(q)[:, 1] > 0)


def test_look_rotation_of_vertical_directions_uses_z_as_up_hint():
    q = qm.look_rotation(np.array([[0.0, 2.0, 0.0], [0.0, -1.0, 0.0], [1e-12, 1.0, 0.0]]))
    np.testing.assert_allclose(qm.forward(q), [[0, 1, 0], [0, -1, 0], [1e-12, 1, 0]], atol=1e-12)
    # The up hint +Z, made orthogonal to forward, becomes the boid's up (as in Unity's LookRotation).
    np.testing.assert_allclose(qm.up(q)[:2], [[0, 0, 1], [0, 0, 1]], atol=1e-12)


def test_look_rotation_of_zero_is_identity():
    np.testing.assert_array_equal(qm.look_rotation(np.zeros((1, 3))), [[1, 0, 0, 0]])


def test_look_rotation_of_tiny_and_huge_vectors_does_not_underflow():
    d = np.array([[1e-300, 0.0, 0.0], [0.0, 0.0, -1e300], [3e-320, 4e-320, 0.0]])
    np.testing.assert_allclose(
        qm.forward(qm.look_rotation(d)), [[1, 0, 0], [0, 0, -1], [0.6, 0.8, 0]], atol=1e-12
    )


@pytest.mark.parametrize("up", [(0.0, 1.0, 0.0), (0.0, 0.0, 1.0)])
def test_look_rotation_in_python_is_bit_identical_to_the_compiled_loop(up):
    # Small arrays run the scalar function in Python (qm.PYTHON_ROWS), large ones its compiled loop.
    rows = qm.PYTHON_ROWS
    d = RNG.standard_normal((rows + 1, 3)) * RNG.uniform(1e-3, 1e3, (rows + 1, 1))
    edges = [[0, 1, 0], [0, -1, 0], [0, 0, 0], [1e-300, 0, 0], [0, 1, 1e-10], [0, 0, 1], [0, 0, -1]]
    edges.append([3, 4, 5])
    d[: len(edges)] = edges  # vertical, zero and tiny directions, and a plain one
    compiled = qm.look_rotation(d, up)
    small = np.vstack([qm.look_rotation(d[k : k + rows], up) for k in range(0, len(d), rows)])
    np.testing.assert_array_equal(small, compiled)
    assert qm.in_python(qm.look_rotation_of) is not qm.look_rotation_of


def test_the_euler_quaternion_in_python_rounds_as_its_source_compiled():
    from flock3d.core import geometry as g

    compiled = numba.njit(types.FunctionType(g.euler_quaternion.__code__, vars(g)))  # its callees compiled
    for yaw, pitch, roll in RNG.uniform(-720.0, 720.0, (500, 3)):
        q = g.euler_quaternion(yaw, pitch, roll)
        assert q == compiled(yaw, pitch, roll)
        ref = Quaternion(axis=[0, 1, 0], degrees=yaw) * Quaternion(axis=[1, 0, 0], degrees=pitch)
        ref = (ref * Quaternion(axis=[0, 0, 1], degrees=roll)).elements
        np.testing.assert_allclose(np.array(q) * np.sign(np.dot(q, ref)), ref, atol=1e-14)


@pytest.mark.parametrize("max_angle", [1e-3, 0.05, 0.5, 2.0, math.pi, math.inf])
def test_rotate_towards_equals_pyquaternion_slerp(max_angle):
    q = random_quaternions(300)
    d = _unit_vectors(RNG, 300)
    out = qm.rotate_towards(q, d, max_angle)
    f = qm.forward(q)
    for i in range(len(q)):
        start = Quaternion(q[i])
        theta = math.atan2(np.linalg.norm(np.cross(f[i], d[i])), f[i] @ d[i])
        axis = np.cross(f[i], d[i])
        target = Quaternion(axis=axis, angle=theta) * start  # FromToRotation(f, d) * q
        expected = Quaternion.slerp(start, target, min(1.0, max_angle / theta))
        # Same rotation: equal up to the quaternion's sign.
        assert abs(abs(np.dot(out[i], expected.elements)) - 1.0) < 1e-12


@pytest.mark.parametrize("max_angle", [1e-4, 0.05, 1.0, 3.0])
def test_turn_never_exceeds_the_limit_and_reaches_the_target_when_allowed(max_angle):
    q = random_quaternions(2000)
    d = _unit_vectors(RNG, 2000)
    f0 = qm.forward(q)
    f1 = qm.forward(qm.rotate_towards(q, d, max_angle))
    turned = np.arctan2(np.linalg.norm(np.cross(f0, f1), axis=1), np.sum(f0 * f1, axis=1))
    wanted = np.arctan2(np.linalg.norm(np.cross(f0, d), axis=1), np.sum(f0 * d, axis=1))
    assert turned.max() <= max_angle + 1e-12
    np.testing.assert_allclose(turned, np.minimum(wanted, max_angle), atol=1e-9)
    reachable = wanted <= max_angle
    np.testing.assert_allclose(f1[reachable], d[reachable], atol=1e-12)


def test_exactly_opposite_direction_turns_about_up():
    q = qm.look_rotation(np.array([[0.0, 0.0, 1.0]]))
    out = qm.rotate_towards(q, np.array([[0.0, 0.0, -1.0]]), 0.1)
    f = qm.forward(out)[0]
    # A turn about up (+Y) keeps the heading horizontal and changes it by exactly 0.1 rad.
    assert f[1] == pytest.approx(0.0, abs=1e-15)
    assert math.acos(f[2]) == pytest.approx(0.1, abs=1e-12)
    np.testing.assert_allclose(qm.up(out)[0], [0, 1, 0], atol=1e-15)


def test_exactly_opposite_turn_uses_the_boids_own_up_not_world_up():
    # Rolled 90 degrees about its heading (+Z): the boid's up is now -X, so turning back
    # about it swings the heading within the y-z plane, never towards x.
    rolled = Quaternion(axis=[0, 0, 1], angle=math.pi / 2)
    q = np.array([rolled.elements])
    np.testing.assert_allclose(qm.up(q)[0], [-1, 0, 0], atol=1e-15)
    f = qm.forward(qm.rotate_towards(q, np.array([[0.0, 0.0, -1.0]]), 0.2))[0]
    assert f[0] == pytest.approx(0.0, abs=1e-15)
    assert math.acos(f[2]) == pytest.approx(0.2, abs=1e-12)


def test_same_direction_is_no_turn():
    q = random_quaternions(10)
    np.testing.assert_allclose(qm.rotate_towards(q, qm.forward(q), 0.5), q, atol=1e-15)
