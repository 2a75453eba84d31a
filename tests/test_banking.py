"""The drawn bank: a coordinated turn's atan(a_lat / g), followed a share of the way a frame."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flock3d.core import quaternion
from flock3d.look.motion import follow_banks


@pytest.mark.parametrize("up", [(0.0, 1.0, 0.0), (0.0, 0.0, 1.0)])
def test_the_bank_is_the_coordinated_turns_and_moves_the_share_asked(up):
    rng = np.random.default_rng(3)
    q = rng.normal(size=(500, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    a = 20.0 * rng.normal(size=(500, 3))
    up = np.asarray(up)
    right = np.cross(up, quaternion.forward(q))  # the level right, unnormalised
    lateral = np.einsum("ij,ij->i", a, right) / np.linalg.norm(right, axis=1)
    turn = np.clip(np.arctan(lateral / 9.81), -1.2, 1.2)
    assert 0 < np.count_nonzero(np.abs(turn) == 1.2) < 500  # some at the limit, some not

    banks = np.zeros(500)
    follow_banks(q, a, up, 1.0, 9.81, 1.2, banks)
    assert np.allclose(banks, turn, rtol=0.0, atol=1e-12)
    start = rng.uniform(-1.0, 1.0, 500)
    banks = start.copy()
    follow_banks(q, a, up, 0.25, 9.81, 1.2, banks)
    assert np.allclose(banks, start + 0.25 * (turn - start), rtol=0.0, atol=1e-12)


def test_a_boid_flying_straight_up_has_no_level_right_and_flies_level():
    up_the_sky = quaternion.look_rotation(np.array([[0.0, 1.0, 0.0]]), up=(1.0, 0.0, 0.0))
    banks = np.array([0.5])
    follow_banks(up_the_sky, np.array([[30.0, 0.0, 0.0]]), np.array([0.0, 1.0, 0.0]), 1.0, 9.81, 1.2, banks)
    assert banks[0] == 0.0
    level = quaternion.look_rotation(np.array([[0.0, 0.0, 1.0]]))  # its level right: up x forward = +x
    follow_banks(level, np.array([[9.81, 0.0, 0.0]]), np.array([0.0, 1.0, 0.0]), 1.0, 9.81, 1.2, banks)
    assert math.isclose(banks[0], math.pi / 4, abs_tol=1e-12)
