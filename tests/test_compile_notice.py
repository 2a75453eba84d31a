"""A compile of seconds says so in one line on stderr, from Python as from the command line,
once however many functions it compiles; the user can silence it; the window can ask for it."""

from __future__ import annotations

import logging

import numba
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


def _another_compile() -> None:
    """A compile of a function new to numba (a burst of its own, of a fraction of a second)."""
    compiling.watch()
    numba.njit(lambda x: x + 1)(1)


@pytest.mark.slow
def test_a_compile_from_python_says_one_line(capsys):
    flock = flock3d.Flock(flock3d.Params(count=20), seed=1, rules=[_rule(0.25)])
    flock.step(2)
    assert capsys.readouterr().err.splitlines() == [COMPILING]
    flock.step(2)  # compiled: nothing more
    _another_compile()  # within QUIET s of the one that spoke: silent
    assert capsys.readouterr().err == ""
    assert compiling.compiling_since() is None  # no compile runs now


def test_the_line_is_silenced_through_its_logger(capsys, monkeypatch):
    logger = logging.getLogger("flock3d.compiling")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        _another_compile()
    finally:
        logger.setLevel(level)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(compiling._watch, "said_at", None)  # as if the silenced one was long ago
    _another_compile()  # the logger as it was: the line again
    assert capsys.readouterr().err.splitlines() == [COMPILING]


def test_a_block_says_its_own_line_once_and_the_window_sees_the_wait(capsys):
    seen: list[float | None] = []
    with compiling.notices("flock3d: compiling the test..."):
        compiling._watch.start()  # as numba starts a compile: the window's clock runs
        seen.append(compiling.compiling_since())
        compiling._watch.end()
        _another_compile()  # a second burst in the block: nothing more
    assert seen[0] is not None and compiling.compiling_since() is None
    assert capsys.readouterr().err.splitlines() == ["flock3d: compiling the test..."]
