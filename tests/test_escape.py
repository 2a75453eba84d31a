"""Escape waves (escape.*): a bird near a predator zig-zags by banking and its neighbours copy it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flock3d import Flock, Params
from flock3d.gpu import kernel_source, refusal

from conftest import free_params

#: A line of birds one unit apart along x, all flying +z: each sees its two neighbours only.
LINE = 6
BANK, DECAY, REACTION, DURATION = 5.0, 0.5, 0.05, 0.2


def line_flock(engine: str, copy: float = 1.0, looks: int = 1, seed: int = 0, count: int = LINE) -> Flock:
    """The line, a slow predator 1.5 units before its first bird (only that one is near it)."""
    params = free_params(count=count, view_distance=1.5, separation_distance=1.0, neighbours=2,
                         predator_count=1, predator_speed=1e-3, flee=0.0,
                         escape_distance=2.0, escape_bank=BANK, escape_bank_decay=DECAY,
                         escape_reaction=REACTION, escape_duration=DURATION, escape_copy=copy,
                         escape_looks=looks)  # fmt: skip
    positions = np.array([[float(i), 0.0, 0.0] for i in range(count)])
    velocities = np.tile([0.0, 0.0, 2.0], (count, 1))
    flock = Flock(params, positions=positions, velocities=velocities, engine=engine, seed=seed)
    flock.state.predator_positions[0] = [-1.5, 0.0, 0.0]
    return flock


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_each_neighbour_begins_one_reaction_time_later_with_its_bank_decayed(engine):
    flock = line_flock(engine)
    dt, g = flock.params.dt, flock.params.flight_gravity
    lag = round(REACTION / dt)  # the reaction time in whole steps
    pushes, first = [], np.full((LINE, 3), np.nan)  # each bird's first escape: began, generation, side
    for _ in range(LINE * lag + round(DURATION / dt) + 2):
        v0 = flock.velocities.copy()
        flock.step()
        right = np.cross([0.0, 1.0, 0.0], v0 / np.linalg.norm(v0, axis=1, keepdims=True))  # the level right
        a = (flock.velocities - v0) / dt  # the acceleration, exactly (free_params)
        np.testing.assert_allclose(a - np.sum(a * right, axis=1)[:, None] * right, 0.0, atol=1e-9)
        pushes.append(np.sum(a * right, axis=1))
        new = np.isnan(first[:, 0]) & (flock.state.escapes[:, 0] > -1.0)
        first[new] = flock.state.escapes[new]
    pushes = np.array(pushes)
    np.testing.assert_allclose(first[:, 0], dt * lag * np.arange(LINE), atol=1e-12)
    np.testing.assert_array_equal(first[:, 1], np.arange(LINE))
    for i in range(1, LINE):  # the predator's bird starts again, and again: its next escapes are copied too
        side = first[i, 2]
        push = g * math.tan(math.radians(BANK) * DECAY**i)  # the lateral acceleration of a level turn
        steps = round(DURATION / dt)
        zig, zag = (
            pushes[i * lag : i * lag + steps // 2, i],
            pushes[i * lag + steps // 2 : i * lag + steps, i],
        )
        np.testing.assert_allclose(pushes[: i * lag, i], 0.0, atol=1e-12)  # nothing before it began
        np.testing.assert_allclose(zig, side * push, atol=1e-9)
        np.testing.assert_allclose(zag, -side * push, atol=1e-9)


@pytest.mark.slow
def test_more_looks_give_more_chances_to_copy_and_change_nothing_when_the_first_copies():
    # With copy = 1 the first look copies: more looks change nothing, each bird begins one reaction
    # time after the one before it.
    looks = 4  # the most the duration allows: 1 + (0.2 - 0.01) / 0.05
    for engine in ("fast", "reference"):
        flock = line_flock(engine, looks=looks)
        lag = round(REACTION / flock.params.dt)
        flock.step(2 * lag + 1)
        began = flock.state.escapes[:3, 0]
        np.testing.assert_allclose(began, flock.params.dt * lag * np.arange(3), atol=1e-12)
    # Chances at each look, each of its own draw: over many birds, the share that copies a neighbour's
    # escape with probability p a look is 1 - (1 - p)^L.
    p, trials = 0.3, []
    for looks in (1, 3):
        copied = 0
        for seed in range(60):
            flock = line_flock("fast", copy=p, looks=looks, seed=seed, count=2)
            flock.step(round((DURATION + REACTION) / flock.params.dt))
            copied += flock.state.escapes[1, 0] > -1.0
        trials.append(copied / 60)
    assert abs(trials[0] - p) < 0.2 and abs(trials[1] - (1 - (1 - p) ** 3)) < 0.2
    assert trials[1] > trials[0] + 0.15


@pytest.mark.slow
def test_a_bird_that_copies_no_one_escapes_alone():
    flock = line_flock("fast", copy=0.0)
    flock.step(30)
    assert flock.state.escapes[0, 0] >= 0.0
    assert np.all(flock.state.escapes[1:, 0] == -1e9)


def _attacked(params: Params, engine: str) -> Flock:
    """30 birds in a 4-unit box flying +z, a predator amid them."""
    positions = np.random.default_rng(3).uniform(-2.0, 2.0, (params.count, 3))
    velocities = np.tile([0.0, 0.0, 5.0], (params.count, 1))
    flock = Flock(params, seed=3, positions=positions, velocities=velocities, engine=engine)
    flock.state.predator_positions[0] = [0.0, 0.0, -1.0]
    return flock


@pytest.mark.slow
@pytest.mark.parametrize(
    "changes",
    [
        {
            "flight": "aerodynamic",
            "roost_weight": 1.0,
            "roost_altitude": 0.5,
            "min_speed": 2.0,
            "max_speed": 8.0,
        },
        pytest.param({"update": "sequential", "combine": "chain"}, marks=pytest.mark.slow),
    ],
    ids=["aerodynamic", "sequential chain"],
)
def test_fast_equals_reference_under_attack(changes):
    params = Params(count=30, arena_shape="none", neighbours=7, predator_count=1, predator_speed=2.0,
                    escape_distance=2.5, escape_duration=0.3, escape_reaction=0.05, escape_copy=0.7,
                    escape_copy_decay=0.9, escape_bank_decay=0.8, **changes)  # fmt: skip
    fast, ref = _attacked(params, "fast"), _attacked(params, "reference")
    fast.step(40)
    ref.step(40)
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9, rtol=0)
    np.testing.assert_array_equal(fast.state.escapes, ref.state.escapes)
    assert np.sum(fast.state.escapes[:, 1] > 0) > 0  # some copied


def test_escapes_need_topological_neighbours_and_a_reaction_of_a_step_in_one_line():
    with pytest.raises(
        ValueError, match=r"escape_distance needs topological neighbours .*flock.neighbours = k"
    ):
        Params(escape_distance=2.0)
    with pytest.raises(ValueError, match=r"escape_reaction must be at least one step"):
        Params(escape_distance=2.0, neighbours=7, escape_reaction=0.001)
    with pytest.raises(ValueError, match=r"escape_distance needs update = 'synchronous' or 'sequential'"):
        Params(escape_distance=2.0, neighbours=7, update="per_rule", combine="chain")
    with pytest.raises(ValueError, match=r"escape_copy must be"):
        Params(escape_distance=2.0, neighbours=7, escape_copy=1.5)
    with pytest.raises(ValueError, match=r"escape_looks must be a whole number, 1 or more \(got 0\)"):
        Params(escape_distance=2.0, neighbours=7, escape_looks=0)
    # (0.5 s - dt) / 0.1 s: the fifth look, 0.4 s after the first, still sees the neighbour escape
    with pytest.raises(ValueError, match=r"escape_looks must be at most 5: the last look"):
        Params(escape_distance=2.0, neighbours=7, escape_looks=6)
    assert Params(escape_distance=2.0, neighbours=7, escape_looks=5).escape_looks == 5


def test_the_gpu_engine_runs_escapes_from_the_public_indices_of_the_k_nearest():
    # (equal to the reference under the CUDA simulator: tests/test_gpu_engine.py's "escape" case)
    params = Params(count=20, neighbours=7, predator_count=1, escape_distance=2.0)
    assert refusal(params) == ""
    source, _ = kernel_source(params)
    assert "kid[jj] = bid[sel[jj]]" in source and "escape_term.escape(pv, escapes_at, boid," in source
