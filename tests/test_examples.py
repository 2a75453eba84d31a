"""The shipped examples of your own rules load, run in both engines alike, and do what they say."""

from pathlib import Path

import numpy as np
import pytest
from helpers import flock3d

from flock3d import Flock, Params, load_rules

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_there_are_examples():
    assert {p.stem for p in EXAMPLES} >= {"wind", "tend_to_place", "perching", "scatter", "seek_goal"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_example_runs_alike_in_both_engines(path):
    rules, forces = load_rules(path)
    params = Params(count=40, arena_radius=12.0)
    fast = Flock(params, seed=1, rules=rules, forces=forces)
    ref = Flock(params, seed=1, rules=rules, forces=forces, engine="reference")
    fast.step(20)
    ref.step(20)
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_example_runs_where_scipy_is_not_installed(path):
    """The README's install (pip install .) has no scipy, so numba has no linear algebra there."""
    out = flock3d("run", "small-arena", "--steps", "3", "--rules", path, "--no-progress", without_scipy=True)
    assert out.returncode == 0, out.stderr


def test_the_wind_blows_the_flock_downwind():
    rules, forces = load_rules(EXAMPLES[[p.stem for p in EXAMPLES].index("wind")])
    params = Params(count=200, arena_shape="none", alignment=0.0, cohesion=0.0)
    calm, windy = Flock(params, seed=2), Flock(params, seed=2, forces=forces)
    calm.step(300)
    windy.step(300)
    assert windy.velocities[:, 0].mean() > calm.velocities[:, 0].mean() + 1.0
