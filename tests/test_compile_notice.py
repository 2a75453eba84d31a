"""A compile of seconds says so in one line on stderr, from Python as from the command line,
once however many functions it compiles; the user can silence it; the window can ask for it."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import flock3d
from flock3d.core import compiling
from flock3d.core.compiling import COMPILING

#: Each test's steps in a cache of its own (conftest.own_cache): a cached step is no compile.
pytestmark = pytest.mark.usefixtures("own_cache")


@pytest.fixture(autouse=True)
def _no_recent_line(monkeypatch):
    """As if no compile had spoken lately (another test in this process may have)."""
    monkeypatch.setattr(compiling._watch, "said_at", None)


def _rule(scale: float):
    """A pair rule no step has compiled before (its constant is its own)."""

    @flock3d.pair_rule(radius=2.0, weight=1.0)
    def push(p_i, v_i, p_j, v_j):
        return (p_i - p_j) * scale

    return push


def test_a_compile_from_python_says_one_line(capsys):
    flock = flock3d.Flock(flock3d.Params(count=20), seed=1, rules=[_rule(0.25)])
    flock.step(2)
    assert capsys.readouterr().err.splitlines() == [COMPILING]
    flock.step(2)  # compiled: nothing more
    flock3d.Flock(flock3d.Params(count=20), seed=1, rules=[_rule(0.3)]).step(1)  # within QUIET s: silent
    assert capsys.readouterr().err == ""
    assert compiling.compiling_since() is None  # no compile runs now


def test_the_line_is_silenced_through_its_logger(capsys):
    logger = logging.getLogger("flock3d.compiling")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        flock3d.Flock(flock3d.Params(count=20), seed=1, rules=[_rule(0.5)]).step(2)
    finally:
        logger.setLevel(level)
    assert capsys.readouterr().err == ""


def test_a_block_says_its_own_line_once_and_the_window_sees_the_wait(capsys):
    seen: list[float | None] = []

    @flock3d.force
    def watch(position, velocity, time):  # runs in the step: the compile is over by then
        return np.zeros(3)

    with compiling.notices("flock3d: compiling the test..."):
        compiling._watch.start()  # as numba starts a compile: the window's clock runs
        seen.append(compiling.compiling_since())
        compiling._watch.end()
        flock3d.Flock(flock3d.Params(count=20), seed=2, rules=[_rule(0.75)], forces=[watch]).step(1)
    assert seen[0] is not None and compiling.compiling_since() is None
    assert capsys.readouterr().err.splitlines() == ["flock3d: compiling the test..."]
