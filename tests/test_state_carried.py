"""Per-boid state declared by the terms and models that carry it, and the state derived from it.

A stateful term declares its arrays in its own module (:class:`flock3d.core.carried.Carried`);
FlockState, its copy, assignment and check, the first state, the reference engine and a
recording's frames take them from the declarations, never from a list of names of their own.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from flock3d.core import reference, state
from flock3d.core.carried import Carried
from flock3d.core.models import MODELS
from flock3d.core.params import Params
from flock3d.core.space import RADII
from flock3d.core.stages import TERMS
from flock3d.core.state import FlockState, carried_of, check_state, random_state, restart_carried
from flock3d.core.terms import Term
from flock3d.io import Trajectory, TrajectoryWriter
from flock3d.scene import Scene


class Trail(Term):
    """A throwaway stateful term: nothing outside this test names it or its array."""

    name = "trail"
    carries = (
        Carried(
            "trail",
            2,
            "a test's two numbers a boid",
            initial=lambda p: np.arange(2.0 * p.count).reshape(-1, 2),
        ),
    )

    def present(self, params):
        return False


@pytest.fixture
def with_trail(monkeypatch):
    """The registry as it is with the throwaway term added after the built-in ones."""
    monkeypatch.setattr(state, "CARRIED", carried_of((*TERMS, Trail()), MODELS, (RADII,)))


def _declared() -> list[Carried]:
    """Every declaration, read from the terms and models themselves (and the perception's)."""
    return [c for owner in (*TERMS, *MODELS) for c in owner.carries] + [RADII]


def test_the_built_in_declarations_are_the_state_arrays_of_their_shapes():
    declared = _declared()
    # The arrays that exist today, each declared by its owner's module.
    assert {c.name: c.width for c in declared} == {"escapes": 3, "perches": 1, "spins": 3, "radii": 1}
    assert [c.name for c in state.CARRIED] == [c.name for c in declared]
    params = Params(count=7, adaptive=True, neighbours=3, view_distance=4.0)
    s = random_state(params, seed=1)
    assert list(s.carried) == [c.name for c in declared]
    for c in declared:
        a = getattr(s, c.name)
        assert a is s.carried[c.name] and a.dtype == np.float64 and a.shape == c.shape(7)
    np.testing.assert_array_equal(s.radii, 4.0)  # the radius starts at the view distance
    np.testing.assert_array_equal(s.spins, 0.0)
    check_state(s, params)


def test_a_new_stateful_term_gets_its_array_without_state_knowing_it(with_trail):
    params = Params(count=5)
    bare = FlockState(np.zeros((5, 3)), np.ones((5, 3)), np.tile([1.0, 0.0, 0.0, 0.0], (5, 1)))
    np.testing.assert_array_equal(bare.trail, np.zeros((5, 2)))  # a state made without Params: zeros
    s = random_state(params, seed=2)
    np.testing.assert_array_equal(s.trail, np.arange(10.0).reshape(5, 2))  # its declared start
    assert "trail" in dir(s)
    check_state(s, params)

    copy = s.copy()
    copy.trail[0] = -1.0
    assert s.trail[0, 0] == 0.0  # a deep copy
    view = s.trail
    s.assign(copy)
    assert s.trail is view and view[0, 0] == -1.0  # assigned in place

    s.trail = np.zeros(5)  # the check names the array and its declared shape
    with pytest.raises(
        ValueError, match=r"state\.trail must be a C-contiguous float64 array of shape \(5, 2\)"
    ):
        check_state(s, params)
    s.trail = view

    # The reference engine carries it through a step: each boid holds its entry, and the new
    # state is built from them.
    after = reference.step(s, params)
    np.testing.assert_array_equal(after.trail, view)
    assert after.trail is not view
    assert reference.carried_entries(s, 1)["trail"].tolist() == [2.0, 3.0]


def test_a_state_refuses_an_undeclared_array():
    with pytest.raises(ValueError, match="state.carried names 'trail', which no term, model or perception"):
        FlockState(np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 4)), carried={"trail": np.zeros(1)})


@pytest.mark.parametrize("name", ["radii", "positions", "carried", "time"])
def test_a_declaration_may_not_take_a_name_already_taken(name):
    class Again(Trail):
        carries = (Carried(name, 1, "a clash"),)

    with pytest.raises(ValueError, match=f"'{name}' is declared twice, or names a FlockState attribute"):
        carried_of((*TERMS, Again()), MODELS, (RADII,))


def test_retuning_starts_again_what_the_declarations_say():
    off = Params(count=6, neighbours=2, view_distance=3.0)
    on = off.replace(adaptive=True)
    s = random_state(off, seed=0)
    s.radii[...] = 0.5
    s.perches[...] = 2.0
    restart_carried(s, off, off.replace(view_distance=5.0))  # not adaptive: kept
    np.testing.assert_array_equal(s.radii, 0.5)
    restart_carried(s, off, on)  # taking up the adaptive radius: it starts at the view distance
    np.testing.assert_array_equal(s.radii, 3.0)
    np.testing.assert_array_equal(s.perches, 2.0)  # the perching timer declares no restart


def test_a_recording_holds_the_flock_not_its_carried_state_and_reads_back_every_array(tmp_path, with_trail):
    # The recording's layout is positions, velocities and orientations; the per-boid state of
    # the terms is not recorded (a frame is for playing back and measuring, not for resuming),
    # so frames read back hold each declared array at zero, and old files read as before.
    scene = Scene(Params(count=4))
    s = random_state(scene.params, seed=3)
    zeroed = s.copy()
    for name in zeroed.carried:
        zeroed.carried[name][...] = 0.0
    for path, frame in ((tmp_path / "a.h5", s), (tmp_path / "b.h5", zeroed)):
        with TrajectoryWriter(path, 4, scene) as writer:
            writer.append(frame)
    with h5py.File(tmp_path / "a.h5") as a, h5py.File(tmp_path / "b.h5") as b:
        group = a["particles/flock"]
        assert {k for k in group if isinstance(group[k], h5py.Group) and "value" in group[k]} == {
            "position",
            "velocity",
            "orientation",
        }
        for name in ("position", "velocity", "orientation"):
            np.testing.assert_array_equal(group[f"{name}/value"], b[f"particles/flock/{name}/value"])
    with Trajectory(tmp_path / "a.h5") as traj:
        got = traj.frame(0)
    np.testing.assert_array_equal(got.positions, s.positions)
    for c in state.CARRIED:
        np.testing.assert_array_equal(getattr(got, c.name), c.zeros(4))
