"""The generated source of each layout's step, stored: a change to the generator shows as a diff.

The fast step is Python source that flock3d.core.assemble writes for a flock's layout (its
terms, update and combine modes, arena, rules...). These snapshots hold that source for a
layout of every kind, so that moving the generator's code around cannot change what runs
unnoticed: a test fails and shows the first differing line. When a change is meant, run

    FLOCK3D_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_step_snapshots.py

and say in the commit message why each layout's source changed.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import numpy as np
import pytest

import flock3d
from flock3d import Flock
from flock3d.core import assemble
from flock3d.core.models import MODELS
from flock3d.core.models.ism import DEFAULTS as ISM_DEFAULTS
from flock3d.core.models.vicsek import DEFAULTS as VICSEK_DEFAULTS
from flock3d.core.params import (
    TERMS,
    Attractor,
    Object,
    Obstacle,
    Params,
    Species,
    WaypointPath,
)

SNAPSHOTS = Path(__file__).parent / "snapshots" / "steps"


@flock3d.pair_rule(radius=3.0)
def keep_apart(p_i, v_i, p_j, v_j):
    """A pair rule of the snapshots: away from each neighbour."""
    return p_i - p_j


@flock3d.pair_rule(fov=120.0, average=False)
def follow(p_i, v_i, p_j, v_j):
    """A pair rule with its own cone."""
    return v_j - v_i


@flock3d.force
def updraft(position, velocity, time):
    """A force of the snapshots."""
    return np.array([0.0, 1.0 + 0.0 * time, 0.0])


_RING = ((6.0, 0.0, 0.0), (0.0, 6.0, 0.0), (-6.0, 0.0, 0.0))

#: name -> (params, rules, forces): a layout of every kind the generator writes.
LAYOUTS = {
    "spec": (Params(), (), ()),
    "box": (Params(arena_shape="box"), (), ()),
    "periodic": (Params(arena_shape="periodic", arena_radius=15.0), (), ()),
    "wrap": (Params(arena_shape="wrap"), (), ()),
    "open": (Params(arena_shape="none"), (), ()),
    "planar": (Params(dimensions=2), (), ()),
    "falloff-linear-gap": (Params(separation_falloff="linear_gap"), (), ()),
    "alignment-mean": (Params(alignment_form="mean", empty_mean="zero"), (), ()),
    "own-radii-and-cones": (
        Params(alignment_distance=3.5, cohesion_distance=4.0, separation_fov=300.0, alignment_fov=180.0),
        (),
        (),
    ),
    "world-features": (
        Params(
            attractors=[Attractor(_RING[0], 1.0)],
            path=WaypointPath(_RING, 1.0, 2.0),
            obstacles=[Obstacle(_RING[1], 2.0)],
            predator_count=2,
            wind=(1.0, 0.0, 0.0),
            containment=30.0,
        ),
        (),
        (),
    ),
    "objects-perching": (
        Params(
            objects=[Object("plane", position=(0.0, -20.0, 0.0)), Object("sphere", radius=3.0)],
            perching_height=1.0,
        ),
        (),
        (),
    ),
    "objects-sequential-adaptive": (
        Params(update="sequential", neighbours=7, adaptive=True, objects=[Object("sphere", radius=3.0)]),
        (),
        (),
    ),
    "box-containment": (Params(arena_shape="box", containment=30.0), (), ()),
    "mesh-turn": (Params(turn_limit="mesh"), (), ()),
    "topological": (Params(neighbours=7), (), ()),
    "adaptive": (Params(neighbours=7, adaptive=True), (), ()),
    "species": (Params(species=[Species("a", 10, aligns=("a",)), Species("b", 10, max_speed=7.0)]), (), ()),
    "chain": (Params(combine="chain", rule_order=("cohesion", "separation")), (), ()),
    "sequential": (Params(update="sequential", attractors=[Attractor(_RING[0], 1.0)]), (), ()),
    "per-rule": (Params(update="per_rule", combine="chain", predator_count=1), (), ()),
    "user-rules-sum": (Params(), (keep_apart, follow), (updraft,)),
    "user-rules-chain": (Params(combine="chain"), (keep_apart,), (updraft,)),
    "user-rules-sequential": (Params(update="sequential"), (follow,), (updraft,)),
    "couzin": (Params(model="couzin", arena_shape="none", count=100), (), ()),
    "vicsek": (Params(**VICSEK_DEFAULTS), (), ()),
    "vicsek-topological-3d": (Params(**{**VICSEK_DEFAULTS, "dimensions": 3, "neighbours": 7}), (), ()),
    "vicsek-old-position": (Params(**{**VICSEK_DEFAULTS, "position_update": "old"}), (), ()),
    "ism": (Params(**ISM_DEFAULTS), (), ()),
    "cucker-smale": (Params(model="cucker-smale"), (), ()),
    "pearce": (Params(model="pearce"), (), ()),
    "aerodynamic-roost": (Params(flight="aerodynamic", roost_weight=2.0, roost_altitude=0.3), (), ()),
    "wander": (Params(wander=10.0), (), ()),
    "escape-aerodynamic": (
        Params(neighbours=7, predator_count=1, escape_distance=5.0, flight="aerodynamic", roost_weight=2.0),
        (),
        (),
    ),
    "ism-metric-planar-open": (
        Params(**{**ISM_DEFAULTS, "neighbours": None, "dimensions": 2, "arena_shape": "none"}),
        (),
        (),
    ),
}


def source_of(params: Params, rules, forces) -> str:
    return assemble.generate(assemble.layout_of(params, rules, forces))[0]


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_the_generated_step_is_the_stored_one(name):
    source = source_of(*LAYOUTS[name])
    path = SNAPSHOTS / f"{name}.py.txt"
    if os.environ.get("FLOCK3D_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    stored = path.read_text()
    if source != stored:
        diff = "".join(
            list(difflib.unified_diff(stored.splitlines(True), source.splitlines(True), "stored", "now"))[:60]
        )
        pytest.fail(f"the generated step of {name!r} changed:\n{diff}")


def test_every_stored_snapshot_is_a_layout_here():
    assert {p.name.removesuffix(".py.txt") for p in SNAPSHOTS.glob("*.py.txt")} == set(LAYOUTS)


def test_the_snapshots_cover_every_term_of_the_model():
    # Read from the registry (flock3d.core.params.TERMS), so that a new term fails here until a
    # layout above uses it and its snapshot is stored.
    covered = {stage for params, rules, forces in LAYOUTS.values()
               for stage in assemble.layout_of(params, rules, forces).stages}  # fmt: skip
    terms = {term.name for term in TERMS}
    assert terms <= covered, terms - covered


def test_the_snapshots_cover_every_model():
    # Read from the registry, so that a new model's module fails here until a layout uses it.
    assert {model.name for model in MODELS} == {params.model for params, _, _ in LAYOUTS.values()}


def small(params: Params) -> Params:
    """A layout's parameters with at most 80 boids (a species sets its own count): the same
    generated step, a flock the reference engine steps in a fraction of a second."""
    return params if params.species else params.replace(count=min(params.count, 80))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_each_layouts_fast_step_equals_the_reference_engines(name):
    # The oracle over the generator's table: every kind of layout it writes, stepped by both
    # engines from one start, agrees to 1e-9 in every array a step changes.
    params, rules, forces = LAYOUTS[name]
    fast, ref = (
        Flock(small(params), seed=5, engine=e, rules=rules, forces=forces) for e in ("fast", "reference")
    )
    fast.step(10)
    ref.step(10)
    for array in ("positions", "velocities", "predator_positions"):
        np.testing.assert_allclose(
            getattr(fast, array), getattr(ref, array), rtol=0, atol=1e-9, err_msg=array
        )
    same_rotation = np.abs(np.sum(fast.orientations * ref.orientations, axis=1))  # q and -q are one
    np.testing.assert_allclose(same_rotation, 1.0, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(fast.state.waypoints, ref.state.waypoints)
    assert fast.state.carried.keys() == ref.state.carried.keys()
    for key, values in fast.state.carried.items():  # spins, perching timers, adaptive radii
        np.testing.assert_allclose(values, ref.state.carried[key], rtol=0, atol=1e-9, err_msg=key)
    assert fast.step_count == ref.step_count == 10


def test_debug_step_prints_the_source_that_runs():
    from helpers import flock3d as run_flock3d

    out = run_flock3d("debug", "step", "features/wind", "--set", "flock.count=20")
    assert out.returncode == 0, out.stderr
    source, _, names = out.stdout.rpartition("\n# pv, the values it reads, in order: ")
    compile(source, "step", "exec")  # valid Python, as numba gets it
    assert "wind_term.acceleration(px, py, pz, box, wind)" in source
    from flock3d.scene import load_scene

    params = load_scene("features/wind").params
    assert source == source_of(params.replace(count=20), (), ())
    assert names.strip().split(", ") == assemble.generate(assemble.layout_of(params))[1]
    bad = run_flock3d("debug", "step", "no-such-scene")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
