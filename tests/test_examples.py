"""The shipped examples of your own rules load, run in both engines alike, and do what they say."""

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import WITHOUT_SCIPY, process_env

from flock3d import Flock, Params, load_rules

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_there_are_examples():
    assert {p.stem for p in EXAMPLES} >= {"wind", "tend_to_place", "perching", "scatter", "seek_goal"}


#: Loads an example's rules (the file named first) and runs 20 steps of both engines from one start;
#: prints the largest difference of the positions.
ALIKE = """
import sys
import numpy as np
from flock3d import Flock, Params, load_rules
rules, forces = load_rules(sys.argv[1])
params = Params(count=40, arena_radius=12.0)
fast = Flock(params, seed=1, rules=rules, forces=forces)
ref = Flock(params, seed=1, rules=rules, forces=forces, engine="reference")
fast.step(20)
ref.step(20)
print(float(np.abs(fast.positions - ref.positions).max()))
"""


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_example_runs_alike_in_both_engines_where_scipy_is_not_installed(path):
    """The README's install (pip install .) has no scipy, so numba has no linear algebra there: each
    example compiles without it, and the fast engine runs it as the reference engine does. (One
    process does both: its compile is the test's cost.)"""
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_SCIPY + ALIKE, str(path)],
        capture_output=True, text=True, timeout=600, env=process_env(),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.strip().splitlines()[-1]) <= 1e-9, out.stdout


@pytest.mark.slow
def test_the_wind_blows_the_flock_downwind():
    rules, forces = load_rules(EXAMPLES[[p.stem for p in EXAMPLES].index("wind")])
    params = Params(count=200, arena_shape="none", alignment=0.0, cohesion=0.0)
    calm, windy = Flock(params, seed=2), Flock(params, seed=2, forces=forces)
    calm.step(300)
    windy.step(300)
    assert windy.velocities[:, 0].mean() > calm.velocities[:, 0].mean() + 1.0
