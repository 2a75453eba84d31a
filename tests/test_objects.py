"""Objects in Params: their checks, one line each, and the boids' start among them."""

import math

import numpy as np
import pytest

from flock3d import Params
from flock3d.core.objects import Motion, Object, clearances, pack_objects
from flock3d.core.state import random_state, spawn_points


def problem(**params) -> str:
    with pytest.raises(ValueError) as error:
        Params(**params)
    return str(error.value)


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ([{"shape": "cube", "size": [1, 1, 1]}], "objects[0].shape must be one of 'mesh', 'box'"),
        ([{"shape": "spere", "radius": 1}], "did you mean 'sphere'?"),
        ([{"shape": "box"}], "objects[0].size is required for a box: its side lengths [x, y, z]"),
        ([{"shape": "cylinder", "radius": 1}], "objects[0].height is required for a cylinder"),
        ([{"shape": "box", "size": [1, 1, 1], "radius": 2}], "objects[0].radius does not apply to a box"),
        (  # the scene's seed written after the last table (the game-developer walk)
            [{"shape": "box", "size": [1, 1, 1], "seed": 3}],
            "objects[0].seed does not apply to a box (a box takes size); a key after a [[objects]] table "
            "belongs to it: the scene's seed goes above the tables",
        ),
        ([{"shape": "box", "size": [1, 0, 1]}], "objects[0].size must be 3 numbers > 0"),
        ([{"shape": "sphere", "radius": math.nan}], "objects[0].radius must be a number > 0 (got nan)"),
        ([{"shape": "sphere", "radius": 1, "scale": 0}], "objects[0].scale must be a number or 3 numbers"),
        ([{"shape": "sphere", "radius": 1, "scale": 1e9}], "each from 1e-06 to 1e+06"),
        (
            [{"shape": "sphere", "radius": 1, "scale": [1, 2, 1]}],
            "objects[0].scale must be one number for a sphere",
        ),
        (
            [{"shape": "capsule", "radius": 1, "height": 1}],
            "objects[0].height must be at least twice its radius",
        ),
        ([{"shape": "torus", "radius": 1, "tube": 2}], "objects[0].tube must be < its radius"),
        ([{"shape": "heightfield", "size": [10, 10], "height": 2}], "takes one; neither was given"),
        ([{"shape": "plane", "role": "arena"}], "objects[0].role 'arena' needs a closed shape"),
        (
            [{"shape": "sphere", "radius": 1, "position": [0, math.inf, 0]}],
            "objects[0].position must be 3 finite",
        ),
        (
            [{"shape": "sphere", "radius": 1, "color": "red"}],
            'objects[0].color must be a colour like "#3080ff"',
        ),
        (
            [{"shape": "sphere", "radius": 1, "motion": {"points": [[0, 0, 0], [1, 0, 0]], "times": [1, 1]}}],
            "objects[0].motion.times must increase from each keyframe to the next (got 1 then 1)",
        ),
        (
            [
                {
                    "shape": "sphere",
                    "radius": 1,
                    "motion": {"points": [[0, 0, 0], [1, 0, 0]], "times": [0, 1, 2]},
                }
            ],
            "objects[0].motion.times has 3 values but .motion.points has 2",
        ),
        (
            [
                {
                    "shape": "sphere",
                    "radius": 1,
                    "motion": {"points": [[9, 0, 0], [19, 0, 0]], "times": [0, 1], "loop": True},
                }
            ],
            "objects[0].motion loops, so it must end where it starts",
        ),  # fmt: skip
        (  # 0 to 360 in one keyframe was taken as no turn at all, 0 to 270 as -90 (the shorter way)
            [
                {
                    "shape": "box",
                    "size": [4, 1, 1],
                    "motion": {
                        "points": [[0, 0, 0], [0, 0, 0]],
                        "times": [0, 3],
                        "rotations": [[0, 0, 0], [360, 0, 0]],
                    },
                }
            ],
            "objects[0].motion.rotations[0] to [1] turns 360 degrees; each keyframe turns the shorter way",
        ),  # fmt: skip
        (
            [
                {
                    "shape": "sphere",
                    "radius": 1,
                    "position": [1, 2, 3],
                    "motion": {"points": [[9, 0, 0], [19, 0, 0]], "times": [0, 1]},
                }
            ],
            "objects[0].position is given by .motion.points",
        ),  # fmt: skip
    ],
)
def test_each_bad_object_gets_one_message_naming_it(objects, message):
    text = problem(objects=objects)
    assert message in text and "\n" not in text, text


def test_the_world_as_a_whole_is_checked():
    arena = {"shape": "box", "size": [40, 40, 40], "role": "arena"}
    assert "[0] is the arena: it needs arena_shape 'none' (got 'sphere')" in problem(objects=[arena])
    assert "[0, 1] all have role 'arena'" in problem(objects=[arena, arena], arena_shape="none")
    assert "objects is a feature of the boids model" in problem(
        model="couzin", objects=[{"shape": "sphere", "radius": 1, "position": [50, 0, 0]}]
    )
    assert "need an arena that is not periodic" in problem(
        arena_shape="periodic", objects=[{"shape": "sphere", "radius": 1, "position": [20, 0, 0]}]
    )


def test_objects_covering_every_spawn_point_are_refused():
    big = {"shape": "sphere", "radius": 20}  # the initial ball has radius 15
    assert "objects[0] with the avoidance_margin covers every spawn point" in problem(objects=[big])
    # Two half-spaces, each leaving half the ball free, together leave nothing.
    up = {"shape": "plane", "position": [0, 0.5, 0]}
    down = {"shape": "plane", "position": [0, -0.5, 0], "rotation": [0, 0, 180]}
    assert "objects together with the avoidance_margin cover every spawn point" in problem(objects=[up, down])
    # An arena object smaller than the ball still leaves room inside it.
    Params(arena_shape="none", objects=[{"shape": "sphere", "radius": 5, "role": "arena"}])


def test_objects_are_plain_hashable_records_that_compare_by_value():
    a = Params(objects=[{"shape": "box", "size": [1, 2, 3], "color": "#aabbcc",
                         "motion": {"points": [[20, 0, 0], [22, 0, 0]], "times": [0, 1]}}])  # fmt: skip
    b = Params(
        objects=(
            Object(
                "box",
                size=(1.0, 2.0, 3.0),
                color="#aabbcc",
                motion=Motion(((20.0, 0.0, 0.0), (22.0, 0.0, 0.0)), (0.0, 1.0)),
            ),
        )
    )
    assert a.objects[0].position is None and a == b and hash(a) == hash(b)
    assert isinstance(a.objects[0].motion, Motion) and a.objects[0].motion.times == (0.0, 1.0)


def test_no_boid_starts_inside_an_obstacle_or_outside_the_arena_object():
    obstacles = [
        {"shape": "box", "size": [6, 30, 6], "position": [4, 0, 0], "rotation": [30, 10, 0]},
        {"shape": "torus", "radius": 8, "tube": 2, "rotation": [0, 90, 0]},
        {"shape": "heightfield", "size": [60, 60], "height": 6, "seed": 2, "position": [0, -12, 0]},
        {"shape": "capsule", "radius": 2, "height": 10, "motion": {"points": [[-8, 0, 0], [-8, 9, 0]],
                                                                   "times": [0, 5]}},
    ]  # fmt: skip
    arena = {"shape": "cylinder", "radius": 14, "height": 30, "role": "arena"}
    params = Params(
        count=3000, arena_shape="none", arena_radius=40, init_radius=20, objects=[*obstacles, arena]
    )
    positions = random_state(params, seed=3).positions
    data, offsets = pack_objects(params.objects)
    assert clearances(data, offsets, positions, 0.0).min() >= params.avoidance_margin
    assert np.linalg.norm(positions, axis=1).max() <= 20.0
    # Without the objects, the same ball would have put boids in them.
    free = random_state(params.replace(objects=()), seed=3).positions
    assert clearances(data, offsets, free, 0.0).min() < 0.0


def test_sphere_obstacles_start_the_flock_as_before():
    # The old [[obstacles]] keep their stream: the same seed, the same first state.
    params = Params(count=500, obstacles=[((3.0, 0.0, 0.0), 4.0)])
    again = spawn_points(params, np.random.default_rng(5), 500)
    rng = np.random.default_rng(5)
    from flock3d.core.state import _uniform_positions

    expected = _uniform_positions(rng, 500, params)
    for _ in range(100):
        inside = np.linalg.norm(expected - (3.0, 0.0, 0.0), axis=1) < 5.0
        if not inside.any():
            break
        expected[inside] = _uniform_positions(rng, int(inside.sum()), params)
    assert np.array_equal(again, expected)


def test_a_crowded_start_still_starts_every_boid_outside():
    # The free room is a sliver Params lets through (about 1 draw in 500), too thin for 1,000 draws
    # to place every one of a thousand boids: the rest start at the check's free points.
    params = Params(count=1000, avoidance_margin=0.0, objects=[{"shape": "sphere", "radius": 14.99}])
    for seed in range(3):
        distance = np.linalg.norm(random_state(params, seed=seed).positions, axis=1)
        assert distance.min() >= 14.99 and distance.max() <= 15.0
