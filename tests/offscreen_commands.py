"""Runs the ``flock3d`` commands that render offscreen, one after another, for a test process
(``helpers.OffscreenProcess``): vispy binds EGL here once, the test process keeps Qt for its
windows, and each compiled step is loaded once.

Each request is a JSON line on stdin, ``[arguments, folder]``; each reply a JSON line on stdout,
``[exit status, stdout, stderr]``, as a process of the command's own gives them. Before it
replies, the compiles the command started in children end (a process of its own would have
ended them with itself), so that none outlives its test.
"""

from __future__ import annotations

import json
import os
import sys

from helpers import await_compiles, call_main


def main() -> None:
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what a library or a child writes on file 1 is not a reply
    for request in sys.stdin:
        args, cwd = json.loads(request)
        done = call_main(tuple(args), {}, cwd)
        await_compiles()
        replies.write(json.dumps([done.returncode, done.stdout, done.stderr]) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
