"""Long step calls: an exact clock, and calls that signals can end.

A call of ``Flock.step(n)`` may run for hours; Ctrl-C (in a notebook, a kernel interrupt)
and SIGTERM must end it within a fraction of a second, with the state whole at the last
step done. A rule stuck in a loop cannot be ended, so it is given up, in one line.
"""

from __future__ import annotations

import re
import signal
import subprocess
import textwrap
import threading
import time

import numpy as np
import pytest
from helpers import flock3d

import flock3d as f3
from flock3d import Flock, Params

from conftest import first_line

# -- the clock ---------------------------------------------------------------------------------


@f3.force
def pulse(position, velocity, time):
    """A force that depends on time alone: any drift of the clock changes the trajectory."""
    return np.array([np.sin(40.0 * time), np.cos(70.0 * time), 0.0]) * 50.0


@pytest.mark.slow
@pytest.mark.parametrize(("engine", "n"), [("fast", 300), ("reference", 30)])
def test_one_long_call_and_many_single_steps_keep_the_same_clock(engine, n):
    params = Params(count=12, arena_radius=8.0)
    one = Flock(params, seed=3, engine=engine, forces=[pulse])
    many = Flock(params, seed=3, engine=engine, forces=[pulse])
    one.step(n)
    for _ in range(n):
        many.step()
    assert one.time == many.time == n * params.dt  # exactly: whole steps of dt, not a running sum
    assert one.step_count == many.step_count == n
    assert np.array_equal(one.positions, many.positions)
    assert np.array_equal(one.velocities, many.velocities)


def test_the_clock_counts_from_where_it_is_set_and_from_a_new_dt():
    flock = Flock(Params(count=10), seed=1)
    flock.step(7)
    flock.state.time = 100.0  # set by hand: counting starts again from there
    flock.step(3)
    assert flock.time == 100.0 + 3 * flock.params.dt
    dt = flock.params.dt
    flock.params = flock.params.replace(dt=0.01)
    flock.step(5)
    assert flock.time == (100.0 + 3 * dt) + 5 * 0.01
    assert flock.step_count == 15


# -- interrupting a call --------------------------------------------------------------------------


def test_interrupt_from_another_thread_ends_a_long_call_between_steps():
    flock = Flock(Params(count=300), seed=1)
    flock.step(2)
    threading.Timer(0.5, flock.interrupt).start()
    start = time.perf_counter()
    flock.step(10**12)
    assert time.perf_counter() - start < 10.0
    assert 2 < flock.step_count < 10**12
    assert flock.time == flock.step_count * flock.params.dt
    assert np.all(np.isfinite(flock.positions))
    flock.step(3)  # and it steps on
    assert flock.time == flock.step_count * flock.params.dt


def _script(code: str, tmp_path):
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(code))
    return script


def _signal_when_ready(child: subprocess.Popen, sig: int, after: float = 1.0) -> float:
    """Wait for the child's "ready" line, then send ``sig``; returns when it was sent."""
    assert first_line(child).strip() == "ready"
    time.sleep(after)
    child.send_signal(sig)
    return time.perf_counter()


def test_ctrl_c_ends_a_call_of_a_trillion_steps_with_the_state_whole(tmp_path, child):
    script = _script(
        """
        import numpy as np
        from flock3d import Flock, Params
        flock = Flock(Params(count=300), seed=1)
        flock.step(2)  # compiled before the signal comes
        print("ready", flush=True)
        try:
            flock.step(10**12)
        except KeyboardInterrupt:
            whole = np.all(np.isfinite(flock.positions)) and flock.time == flock.step_count * flock.params.dt
            print("interrupted", flock.step_count, whole, flush=True)
        flock.step(1)
        print("stepped on", flock.step_count)
        """,
        tmp_path,
    )
    process = child(script=script, cwd=tmp_path)
    sent = _signal_when_ready(process, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert time.perf_counter() - sent < 5.0, "the call did not end soon after Ctrl-C"
    assert process.returncode == 0, err
    interrupted, stepped = out.splitlines()
    word, steps, whole = interrupted.split()
    assert word == "interrupted" and whole == "True" and int(steps) > 2
    assert stepped == f"stepped on {int(steps) + 1}"


STUCK = '''
import numpy as np
import flock3d

@flock3d.force
def stuck(position, velocity, time):
    """Never returns once the flock is a tenth of a second old."""
    s = 0.0
    while time > 0.1 and velocity[0] == velocity[0]:
        s += 1.0
    return np.array([s, 0.0, 0.0])
'''


@pytest.mark.slow
def test_a_rule_stuck_in_a_loop_is_given_up_after_ctrl_c(tmp_path, child):
    (tmp_path / "stuck.py").write_text(STUCK)
    script = _script(
        """
        from flock3d import Flock, Params, SimulationError, load_rules
        rules, forces = load_rules("stuck.py")
        flock = Flock(Params(count=50), seed=1, forces=forces)
        flock.step(2)
        print("ready", flush=True)
        try:
            flock.step(100)
        except SimulationError as error:
            print("given up:", error, flush=True)
        try:
            flock.step(1)
        except SimulationError as error:
            print("again:", error, flush=True)
        """,
        tmp_path,
    )
    process = child(script=script, cwd=tmp_path)
    sent = _signal_when_ready(process, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert time.perf_counter() - sent < 10.0
    assert process.returncode == 0, err
    given_up, again = out.splitlines()
    assert re.fullmatch(
        r"given up: step (\d+): the step did not end within 2 s of being interrupted .*", given_up
    )
    assert "stuck in a loop" in given_up
    step = given_up.split()[3]
    assert again.startswith(f"again: step {step}") and "make a new Flock" in again


@pytest.mark.slow
def test_sigterm_ends_a_run_whose_rule_is_stuck_and_keeps_its_frames(tmp_path, child):
    from flock3d.io import Trajectory

    (tmp_path / "stuck.py").write_text(STUCK)
    # Compiled first (the rule does not loop in 3 steps), so that the signal finds it running.
    warm = flock3d("run", "default", "--steps", "3", "--rules", "stuck.py", cwd=tmp_path)
    assert warm.returncode == 0, warm.stderr
    out = tmp_path / "s.h5"
    process = child(
        "run", "default", "--steps", "100000", "--every", "1", "--rules", "stuck.py", "--out", out,
        "--no-progress", cwd=tmp_path, env={"PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert first_line(process).startswith("Default: 500 boids")
    time.sleep(3.0)
    process.send_signal(signal.SIGTERM)
    sent = time.perf_counter()
    _, err = process.communicate(timeout=120)
    assert time.perf_counter() - sent < 10.0
    assert process.returncode == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert re.fullmatch(r"flock3d run: step \d+: the step did not end within .*stuck in a loop.*", last)
    with Trajectory(out) as trajectory:
        assert len(trajectory) >= 1  # the frames written before are all there


@pytest.mark.parametrize(
    "argv0, said", [("/usr/bin/flock3d", "flock3d: interrupted\n"), ("my_study.py", None)]
)
def test_ctrl_c_while_the_command_loads_is_its_one_line_and_a_programs_own_otherwise(argv0, said):
    # In the command's first half second (its libraries loading) Ctrl-C printed the traceback of
    # whichever import was under way, 27 to 42 lines (the hostile-input walk). Here the package is
    # imported as the command's script imports it, and the interrupt comes right after.
    import sys

    from helpers import process_env

    code = f"import sys; sys.argv[0] = {argv0!r}; import flock3d; raise KeyboardInterrupt"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=process_env(), timeout=120
    )
    assert out.returncode == -signal.SIGINT, out.returncode  # ended by the signal, as a shell reports it
    if said is None:  # a program importing flock3d keeps Python's own report
        assert "Traceback" in out.stderr and out.stderr.rstrip().endswith("KeyboardInterrupt")
    else:
        assert out.stderr == said


def test_the_command_is_known_by_its_script_or_its_module_and_its_hook_ends_once_it_runs(monkeypatch):
    # python -X dev -m flock3d.cli was not known (argv[0] is "-m" while the package loads); and in
    # the window, Qt hands an exception of a slot to the hook: a Ctrl-C there must not be said as
    # a finished command's (the review of this stop).
    import sys

    from flock3d import _command
    from flock3d.cli import main

    for argv0, orig, known in (
        ("/usr/local/bin/flock3d", ["python", "/usr/local/bin/flock3d", "run"], True),
        ("-m", ["python", "-X", "dev", "-m", "flock3d.cli", "run"], True),
        ("-m", ["python", "-m", "pytest"], False),
        ("study.py", ["python", "study.py", "-m", "flock3d"], False),
    ):
        monkeypatch.setattr(sys, "argv", [argv0])
        monkeypatch.setattr(sys, "orig_argv", orig)
        assert _command.is_the_command() is known, orig
    monkeypatch.setattr(sys, "excepthook", _command._interrupted)
    assert main(["scenes"]) == 0
    assert sys.excepthook is _command._BEFORE
