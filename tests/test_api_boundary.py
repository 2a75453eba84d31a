"""The Python API's boundary: arrays a user replaces are checked before a step reads them.

The kernel indexes its arrays without bounds checks (that is what makes it fast), so a state
array of the wrong shape that reached it would end the process (SIGFPE, SIGSEGV, SIGABRT) or
read out of bounds. Each case runs in a subprocess, so a crash fails the test instead of the test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CASES = {
    "positions, far too many": (
        "f = Flock(Params(count=100)); f.state.positions = np.zeros((100000, 3))",
        "state.positions must be a C-contiguous float64 array of shape (100, 3) for this flock "
        "(got a float64 array of shape (100000, 3))",
    ),
    "positions, too few": (
        "f = Flock(Params(count=100)); f.state.positions = np.zeros((10, 3))",
        "state.positions must be a C-contiguous float64 array of shape (100, 3) for this flock "
        "(got a float64 array of shape (10, 3))",
    ),
    "velocities": (
        "f = Flock(Params(count=1000)); f.state.velocities = np.zeros((3, 3))",
        "state.velocities must be a C-contiguous float64 array of shape (1000, 3) for this flock "
        "(got a float64 array of shape (3, 3))",
    ),
    "orientations": (
        "f = Flock(Params(count=100)); f.state.orientations = np.zeros((3, 4))",
        "state.orientations must be a C-contiguous float64 array of shape (100, 4) for this flock "
        "(got a float64 array of shape (3, 4))",
    ),
    "orientations, transposed": (
        "f = Flock(Params(count=4)); f.state.orientations = np.zeros((4, 4)).T",
        "state.orientations must be a C-contiguous float64 array of shape (4, 4) for this flock "
        "(got a float64 array of shape (4, 4), not C-contiguous)",
    ),
    "positions, as integers": (
        "f = Flock(Params(count=5)); f.state.positions = np.zeros((5, 3), dtype=int)",
        "state.positions must be a C-contiguous float64 array of shape (5, 3) for this flock "
        "(got a int64 array of shape (5, 3))",
    ),
    "radii too short": (
        "f = Flock(Params(count=100, neighbours=7, adaptive=True)); f.state.radii = np.ones(3)",
        "state.radii must be a C-contiguous float64 array of shape (100,) for this flock "
        "(got a float64 array of shape (3,))",
    ),
    "predators, too few": (
        "f = Flock(Params(count=50, predator_count=3)); f.state.predator_positions = np.zeros((1, 3))",
        "state.predator_positions must be a C-contiguous float64 array of shape (3, 3) for this flock "
        "(got a float64 array of shape (1, 3))",
    ),
    "a waypoint past the path": (
        "f = Flock(Params(count=50, path=PATH)); f.state.waypoints[:] = 10**9",
        "state.waypoints must be indices of the path's points, 0 to 2 (got 1000000000)",
    ),
    "a negative waypoint": (
        "f = Flock(Params(count=50, path=PATH)); f.state.waypoints[7] = -5",
        "state.waypoints must be indices of the path's points, 0 to 2 (got -5)",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_a_state_array_of_the_wrong_shape_is_refused_by_name(engine):
    # One subprocess runs every case: a crash would end it without the "done" line.
    code = textwrap.dedent(
        f"""
        import numpy as np
        from flock3d import Flock as _Flock, Params
        from flock3d.core.params import WaypointPath
        Flock = lambda params: _Flock(params, engine={engine!r})
        PATH = WaypointPath(((0.0, 0.0, 0.0), (10.0, 0.0, 0.0), (0.0, 10.0, 0.0)))
        cases = {{name: make for name, (make, _) in {dict(CASES)!r}.items()}}
        for name, make in cases.items():
            exec(make)
            try:
                f.step(2)
            except ValueError as error:
                print(name, "|", error, flush=True)
            else:
                print(name, "| stepped", flush=True)
        print("done")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "done"
    got = dict(line.split(" | ", 1) for line in lines[:-1])
    assert got == {name: message for name, (_, message) in CASES.items()}


@pytest.mark.slow
def test_a_flock_stepped_after_a_refusal_steps_once_its_arrays_are_right():
    import numpy as np

    from flock3d import Flock, Params

    flock = Flock(Params(count=20), seed=2)
    good = flock.state.positions
    flock.state.positions = np.zeros((5, 3))
    with pytest.raises(ValueError, match=r"state\.positions"):
        flock.step()
    assert flock.step_count == 0
    flock.state.positions = good
    flock.step(2)
    assert flock.step_count == 2 and len(flock) == 20


@pytest.mark.slow
def test_a_state_set_to_non_finite_values_is_named_as_set_from_outside():
    import numpy as np

    from flock3d import Flock, Params, SimulationError

    flock = Flock(Params(count=30), seed=2)
    flock.positions[4] = np.nan
    with pytest.raises(SimulationError, match=r"boid 4: its position was already non-finite"):
        flock.step()
