"""Imported first by the package: in the ``flock3d`` command's process (its script, or
``python -m flock3d.cli``), Ctrl-C while its libraries still load (the first half second) ends
with the command's one line, not a traceback of the import under way. The command puts Python's
own report back once it runs (:func:`loaded`): a window's Qt loop hands an exception in one of its
slots to the hook and goes on, and must not take Ctrl-C for a finished command. A program that
imports flock3d keeps its own handling throughout."""

from __future__ import annotations

import os
import sys

_BEFORE = sys.excepthook


def _interrupted(kind, value, traceback) -> None:
    if issubclass(kind, KeyboardInterrupt):
        print("flock3d: interrupted", file=sys.stderr)
    else:
        _BEFORE(kind, value, traceback)


def is_the_command() -> bool:
    """Whether this process is the flock3d command, not a program importing the package."""
    if os.path.basename(sys.argv[0] if sys.argv else "") in ("flock3d", "flock3d.exe"):
        return True
    argv = list(getattr(sys, "orig_argv", []))  # python [options] -m flock3d.cli ...
    return any(a == "-m" and b == "flock3d.cli" for a, b in zip(argv, argv[1:], strict=False))


def loaded() -> None:
    """The command has loaded: Python's own report of an exception again (see the module)."""
    if sys.excepthook is _interrupted:
        sys.excepthook = _BEFORE


if is_the_command():
    sys.excepthook = _interrupted
