"""How a :class:`~flock3d.flock.Flock` on the CPU advances: the fast engine's compiled steps, run
where signals reach them (a long call on the stepping thread, so that Ctrl-C and
:meth:`~flock3d.flock.Flock.interrupt` end it after the step under way), and the reference
engine's readable loop.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import TYPE_CHECKING

from flock3d.core import assemble, reference
from flock3d.core.models import model_of
from flock3d.errors import SimulationError
from flock3d.step_errors import compile_error, failure_error

if TYPE_CHECKING:
    from flock3d.flock import Flock

__all__ = ["fast_steps", "reference_steps"]

#: A step call expected to take longer than this (seconds) runs where signals can reach it.
_RESPONSIVE = 0.1
#: Seconds an interrupted step may take to end (or ten steps' time, if longer) before it is given up.
_GRACE = 2.0


def fast_steps(flock: Flock, n: int) -> None:
    """Run ``n`` steps of the fast engine (compiled for the flock's params, rules and forces).

    Raises:
        SimulationError, RuleError: as :meth:`Flock.step`.
    """
    try:
        stepper = assemble.stepper_for(flock._params, flock._rules, flock._forces)
        status = _advance(flock, stepper, n)
    except Exception as error:  # not only NumbaError: numba raises ImportError without scipy
        raise compile_error(error, flock._rules, flock._forces) from None
    if not status.ok:
        raise failure_error(flock, status.code, status.boid, status.term)


def _advance(flock: Flock, stepper: assemble.Stepper, n: int) -> assemble.StepStatus:
    """Run ``n`` fast steps; from the main thread, on the stepping thread when the call may
    be long, so that signals (Ctrl-C, SIGTERM) are handled within about a tenth of a second.

    Python runs signal handlers only in the main thread, between its own instructions, so
    a compiled loop of many steps (or a rule that never returns) would hold them off until
    it ends. A short call of built-in terms alone runs here: handing it over costs about as
    much as a small flock's step, and it cannot hang.
    """
    advance = lambda k: stepper.advance(  # noqa: E731
        flock._state, flock._params, k, flock.noise_seed, flock._workspace, flock._stop, flock._fields
    )
    start = time.perf_counter()
    mine = flock._rules or flock._forces  # user code, which may not return
    long = flock._step_seconds is None or n * flock._step_seconds > _RESPONSIVE
    if threading.current_thread() is not threading.main_thread() or not (mine or (long and n > 1)):
        status = advance(n)
    else:
        stepper.prepare(flock._state)  # compile here, where Ctrl-C reaches the compiler
        status = _stepping_thread.run(lambda: advance(n), flock)
    if status.steps:
        flock._step_seconds = (time.perf_counter() - start) / status.steps
    return status


def reference_steps(flock: Flock, n: int) -> None:
    """Run ``n`` steps of the reference engine (or the model's own step), with the clock kept as
    the fast engine keeps it.

    Raises:
        SimulationError, RuleError: as :meth:`Flock.step`.
    """
    state, dt = flock._state, flock._params.dt
    t0, k0 = state.clock(dt)
    before = state.time, state.step_count, state.clock_origin
    done, failure = 0, None
    try:
        while done < n and not flock._stop[0]:
            state.time = t0 + (k0 + done) * dt
            try:
                model = model_of(flock._params)
                if model.update_kind != "terms":
                    new = model.step(state, flock._params, flock.noise_seed)
                else:
                    new = reference.step(
                        state, flock._params, flock._rules, flock._forces, flock.noise_seed, flock._fields
                    )
            except reference.StepFailure as failed:
                failure, new = failed, failed.state
            # Keep the live arrays (Boid views and user references stay valid).
            state.assign(new)
            done += 1
            if failure is not None:
                break
    finally:  # the clock as in the fast engine, so both report the same time
        state.time, state.step_count, state.clock_origin = before
        state.advance_clock(done, dt)
    if failure is not None:
        raise failure_error(flock, failure.code, failure.boid, failure.term, failure.cause)


class _SteppingThread:
    """The thread that long step calls of the main thread run on, while it waits for signals.

    One thread serves every flock: a parallel loop started from a new thread makes that
    thread its own team of OpenMP threads, so a thread per call would pay for a team each
    time. It is a daemon: a step that never ends (a rule stuck in a loop) is given up and
    does not keep the process from exiting; the next call then gets a new thread.
    """

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue | None = None

    def run(self, call, flock: Flock):
        """``call()`` there; on an interrupt, ask ``flock`` to stop and wait for the step under way."""
        if self._calls is None:
            self._calls = queue.SimpleQueue()
            threading.Thread(
                target=self._serve, args=(self._calls,), name="flock3d-step", daemon=True
            ).start()
        done = threading.Event()
        outcome: list = []
        self._calls.put((call, outcome, done))
        try:
            while not done.wait(_RESPONSIVE):
                if flock._stop[0]:
                    self._wait_or_abandon(done, flock)
        except BaseException:  # Ctrl-C, or an exception a signal handler raised
            flock.interrupt()
            self._wait_or_abandon(done, flock)
            raise
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    @staticmethod
    def _serve(calls: queue.SimpleQueue) -> None:
        while True:
            call, outcome, done = calls.get()
            try:
                outcome.append(call())
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                outcome.append(error)
            done.set()

    def _wait_or_abandon(self, done: threading.Event, flock: Flock) -> None:
        """Wait for a call asked to stop; past the grace period, give it and the thread up."""
        grace = max(_GRACE, 10.0 * (flock._step_seconds or 0.0))
        if not done.wait(max(0.0, flock._stop_asked + grace - time.monotonic())):
            self._calls = None  # its thread is stuck in the call
            flock._abandoned = (
                f"step {flock.step_count + 1}: the step did not end within {grace:.3g} s of being "
                "interrupted (is one of your rules stuck in a loop?); this flock's state is undefined "
                "and it cannot step again: make a new Flock"
            )
            raise SimulationError(flock._abandoned)


_stepping_thread = _SteppingThread()
