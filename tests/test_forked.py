"""A compiling child made by forking its parent (flock3d.core.forked): only where that is safe,
ended with nothing of the parent's run twice, handled as a fresh interpreter's child is."""

import os
import subprocess
import sys
import textwrap
import threading

import pytest

from flock3d.core import compiling, forked

#: Run in a fresh process of its own (one thread, compiling for itself), whatever started the test.
PARENT = textwrap.dedent(
    """
    import atexit, os, pathlib, subprocess, sys, time
    from flock3d.core import elsewhere, forked

    out = pathlib.Path(sys.argv[1])

    def mark(path):  # only this process's __main__ has it: a fresh interpreter's child would not
        pathlib.Path(path).write_text(f"{os.getppid()} {'flock3d.core.assemble' in sys.modules}")

    def fail():
        raise ValueError("no such layout")

    atexit.register(lambda: open(out / "exits", "a").write(f"{os.getpid()}\\n"))
    sys.stdout.write("said once")  # in this process's buffer when it forks
    assert forked.safe()
    assert elsewhere.compile_in_child("__main__:mark", (str(out / "mark"),), announce=False)
    try:
        elsewhere.compile_in_child("__main__:fail", announce=False)
    except elsewhere.CompileFailed as error:
        print(f" | {error}")
    child = elsewhere.start("time:sleep", (60,))
    try:
        child.wait(0.2)
    except subprocess.TimeoutExpired:
        child.kill()
        print(f" | killed: {child.wait()} | {os.getpid()}")
    """
)


def test_a_child_is_its_parent_forked_and_runs_nothing_of_the_parent_twice(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", PARENT, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    said, failed, killed, pid = (part.strip() for part in out.stdout.split(" | "))
    # The parent's buffered output is written once, by the parent; its exit handlers run once.
    assert said == "said once"
    assert (tmp_path / "exits").read_text() == f"{pid}\n"
    # The child ran in the parent's image: its __main__, flock3d imported already.
    assert (tmp_path / "mark").read_text() == f"{pid} True"
    assert failed == "compiling __main__:fail in a child process failed: ValueError: no such layout"
    assert killed == "killed: -9"


def test_a_process_with_another_thread_or_a_window_is_never_forked(monkeypatch):
    monkeypatch.setattr(compiling, "_children_only", False)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not forked.safe()
    finally:
        release.set()
        other.join()
    monkeypatch.setattr(compiling, "_children_only", True)  # a window's process: its toolkit's threads
    assert not forked.safe()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts this process's open files in /proc")
def test_a_fork_refused_by_the_system_raises_and_leaves_no_pipe_open(monkeypatch):
    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(forked.os, "fork", refused)
    before = sorted(os.listdir("/proc/self/fd"))
    with pytest.raises(OSError, match="temporarily unavailable"):
        forked.Forked(lambda: 0)
    assert sorted(os.listdir("/proc/self/fd")) == before
