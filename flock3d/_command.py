"""Imported first by the package: in the ``flock3d`` command's process (its script, or
``python -m flock3d``), Ctrl-C while its libraries still load (the first half second) ends with
the command's one line, not a traceback of the import under way. A program that imports
flock3d keeps its own handling."""

from __future__ import annotations

import os
import sys


def _interrupted(kind, value, traceback, _before=sys.excepthook) -> None:
    if issubclass(kind, KeyboardInterrupt):
        print("flock3d: interrupted", file=sys.stderr)
    else:
        _before(kind, value, traceback)


def is_the_command() -> bool:
    """Whether this process is the flock3d command, not a program importing the package."""
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    return script in ("flock3d", "flock3d.exe") or getattr(sys, "orig_argv", [])[1:3] == ["-m", "flock3d"]


if is_the_command():
    sys.excepthook = _interrupted
