"""How a command ends when it fails: one line on stderr and exit status 2, never a traceback.

Expected failures (bad input, missing files) raise :class:`flock3d.errors.Flock3dError`; an
output that cannot be written raises :class:`OSError`. Both end here as ``flock3d COMMAND:
what went wrong``; Ctrl-C ends with status 130, as a shell reports SIGINT, and SIGTERM (a
scheduler's or ``kill``'s) with 143, after unwinding as Ctrl-C does: outputs closed or left as
they were, a sweep's cluster shut down.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from flock3d.errors import Flock3dError

#: The exit status of a command refused for its input (or its output's folder, disk, permissions).
EXIT_BAD_INPUT = 2

#: The exit status of a command stopped by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130

#: The exit status of a command stopped by SIGTERM (128 + 15).
EXIT_TERMINATED = 143

#: The exit status of a command whose reader went away (128 + SIGPIPE, as a shell reports it).
EXIT_BROKEN_PIPE = 141


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the main thread is, so that the command unwinds as on Ctrl-C."""

    said = "terminated"
    number = 15  # SIGTERM's, on every platform


class HungUp(Terminated):
    """SIGHUP (the terminal closed), raised as :class:`Terminated` is."""

    said = "hung up"
    number = 1


@contextmanager
def terminated_as_interrupted() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP (:func:`flock3d.runner.stopping_signals`: not where
    ``nohup`` ignores it) raise :class:`Terminated` and :class:`HungUp` in the main thread
    (elsewhere, where no handler can be installed, they are left as they are). A run's own
    handlers (:func:`flock3d.runner.stop_on_signals`) take over inside theirs and give these back."""
    from flock3d.runner import stopping_signals

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = {
        s: HungUp if s.name == "SIGHUP" else Terminated for s in stopping_signals() if s != signal.SIGINT
    }

    def terminate(num, frame):
        raise raised[signal.Signals(num)]

    previous = {s: signal.signal(s, terminate) for s in raised}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, like every other error."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def reported(command: str, run: Callable[[], int]) -> int:
    """``run()``'s exit status, or :data:`EXIT_BAD_INPUT` after one line naming ``command`` when
    it fails as expected (:class:`Flock3dError`, :class:`OSError`, :class:`MemoryError`)."""
    try:
        status = run()
        sys.stdout.flush()  # here, where a reader gone is caught, rather than at the interpreter's exit
        return status
    except BrokenPipeError:  # `flock3d metrics x.h5 | head`: nobody reads on, and nothing is wrong
        _stdout_to_nowhere()
        return EXIT_BROKEN_PIPE
    except Flock3dError as error:  # a line a problem (a scene's several), each naming the command
        for line in str(error).splitlines() or [""]:
            print(f"flock3d {command}: {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:  # an output that cannot be written: a full disk, no permission
        where = f"{error.filename}: " if error.filename else ""
        print(f"flock3d {command}: {where}{error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print(f"flock3d {command}: out of memory (fewer boids?)", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as stop:  # its text, where there is one, says what was kept
        terminated = isinstance(stop, Terminated)
        said = stop.said if terminated else "interrupted"
        if str(stop):
            said += f"; {stop}"
        print(f"flock3d {command}: {said}", file=sys.stderr)
        return 128 + stop.number if terminated else EXIT_INTERRUPTED


def signal_status(signal_name: str) -> int:
    """The exit status of a run a signal stopped: 128 + the signal's number, as a shell reports it."""
    return (
        128 + signal.Signals[signal_name].value
        if signal_name in signal.Signals.__members__
        else EXIT_TERMINATED
    )


def _stdout_to_nowhere() -> None:
    """Point standard output at the null device, so that the interpreter's last flush of what is
    still buffered for a reader that went away does not fail again at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file behind it (a test's capture)
        pass
