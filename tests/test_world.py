"""Boids in a world of objects: avoidance and the constraint after the move, in both engines, still
and moving objects, and perching on the ground (docs/model.md, "Objects" and "Perching")."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from flock3d import Flock, Params
from flock3d.core.objects import Motion, Object, clearances, pack_objects
from flock3d.core.params import Attractor
from flock3d.scene import SceneError

from conftest import FAST_IS_SLOW

trimesh = pytest.importorskip("trimesh")
pytest.importorskip("igl")

from flock3d.io.meshes import object_fields  # noqa: E402

#: A loop through the flock and back, turning as it goes: the moving twin of each object.
LOOP = Motion(((-4.0, 1.0, 0.0), (4.0, -1.0, 2.0), (-4.0, 1.0, 0.0)), (0.0, 1.0, 2.0), True,
              ((0.0, 0.0, 0.0), (120.0, 40.0, 20.0), (0.0, 0.0, 0.0)))  # fmt: skip

#: Each kind of object: a still one and a moving one, placed where the flock meets them.
KINDS = {
    "box": dict(shape="box", size=(3.0, 2.0, 4.0), rotation=(30.0, 20.0, 10.0)),
    "sphere": dict(shape="sphere", radius=1.5),
    "cylinder": dict(shape="cylinder", radius=1.0, height=4.0, rotation=(0.0, 60.0, 0.0)),
    "capsule": dict(shape="capsule", radius=1.0, height=4.0, rotation=(45.0, 0.0, 30.0)),
    "torus": dict(shape="torus", radius=2.0, tube=0.6, rotation=(0.0, 0.0, 70.0)),
    "plane": dict(shape="plane", rotation=(0.0, 0.0, 10.0)),
    "heightfield": dict(shape="heightfield", size=(30.0, 30.0), height=3.0, seed=4),
    "mesh": dict(shape="mesh"),
}


def _mesh_file(tmp_path) -> str:
    """A closed, bumpy rock: an icosphere of radius 1.8 rippled by 15%."""
    rock = trimesh.creation.icosphere(2, radius=1.8)
    v = rock.vertices
    rock.vertices = v * (1.0 + 0.15 * np.sin(3.0 * v[:, 0]) * np.cos(2.0 * v[:, 1]))[:, None]
    path = tmp_path / "rock.obj"
    rock.export(path)
    return str(path)


def _world(kind: str, tmp_path) -> tuple[list[Object], dict | None]:
    shape = dict(KINDS[kind])
    if kind == "mesh":
        shape["file"] = _mesh_file(tmp_path)
    if kind in ("plane", "heightfield"):  # ground below the flock, rising and tilting as it moves
        still = Object(**shape, position=(0.0, -3.0, 0.0))
        moving = None if kind == "heightfield" else Object(**{**shape, "rotation": None},
            motion=Motion(((0.0, -6.0, 0.0), (0.0, -3.5, 0.0), (0.0, -6.0, 0.0)), (0.0, 1.5, 3.0), True,
                          ((0.0, 0.0, 0.0), (0.0, 20.0, 0.0), (0.0, 0.0, 0.0))))  # fmt: skip
        objects = [still] + ([moving] if moving else [])
        if kind == "heightfield":  # it moves: up into the flock and down again
            objects = [Object(**shape, motion=Motion(((0.0, -7.0, 0.0), (0.0, -5.0, 0.0)), (0.0, 2.0)))]
    else:
        objects = [
            Object(**shape, position=(3.5, 0.0, 0.0)),
            Object(**{**shape, "rotation": None}, motion=LOOP),
        ]
    params = Params(objects=objects)
    return objects, object_fields(params, resolution=24) if kind == "mesh" else None


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_fast_equals_reference_with_each_kind_of_object_still_and_moving(kind, tmp_path):
    objects, fields = _world(kind, tmp_path)
    params = Params(count=30, arena_radius=7.0, objects=objects, max_turn_rate=120.0, avoidance=40.0,
                    avoidance_margin=1.5)  # fmt: skip
    fast = Flock(params, seed=5, fields=fields)
    ref = Flock(params, seed=5, fields=fields, engine="reference")
    data, offsets = pack_objects(objects, fields)
    closest = math.inf
    for _ in range(10):
        fast.step(10)
        ref.step(10)
        closest = min(closest, clearances(data, offsets, fast.positions, fast.time).min())
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9, rtol=0)
    np.testing.assert_allclose(fast.velocities, ref.velocities, atol=1e-9, rtol=0)
    np.testing.assert_allclose(fast.orientations, ref.orientations, atol=1e-9, rtol=0)
    assert closest < params.avoidance_margin  # the boids met the objects: the avoidance acted
    assert closest >= 0.0


@pytest.mark.slow
def test_fast_equals_reference_in_a_turned_arena_object_with_every_kind_of_update():
    room = Object("box", size=(14.0, 9.0, 12.0), rotation=(25.0, 10.0, 0.0), role="arena")
    pillar = Object("cylinder", radius=1.0, height=9.0, motion=LOOP)
    base = Params(count=30, arena_shape="none", init_radius=3.5, objects=[room, pillar], max_turn_rate=90.0)
    for params in (base, base.replace(update="sequential"), base.replace(update="per_rule", combine="chain"),
                   base.replace(dimensions=2, count=20)):  # fmt: skip
        fast, ref = Flock(params, seed=2), Flock(params, seed=2, engine="reference")
        fast.step(100)
        ref.step(100)
        np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9, rtol=0)
        np.testing.assert_allclose(fast.velocities, ref.velocities, atol=1e-9, rtol=0)


def _worst_clearance(params, steps, fields=None, seed=1) -> tuple[float, float]:
    """(least clearance over every boid and step, mean fraction of boids within 0.01 of a surface)."""
    flock = Flock(params, seed=seed, fields=fields)
    data, offsets = pack_objects(params.objects, fields)
    worst, touching = math.inf, 0.0
    for _ in range(steps):
        flock.step()
        c = clearances(data, offsets, flock.positions, flock.time)
        worst = min(worst, float(c.min()))
        touching += float(np.mean(c < 0.01)) / steps
    return worst, touching


# Slow turns, a weak steer and a thin margin: steering alone lets boids hit the surfaces, so
# only the constraint after the move keeps them out (each run shows boids on a surface).
HARD = dict(count=150, max_turn_rate=40.0, min_speed=6.0, max_speed=8.0, avoidance=5.0,
            avoidance_margin=0.2, separation=5.0)  # fmt: skip


@pytest.mark.slow
def test_no_boid_is_ever_inside_a_turned_mesh_obstacle(tmp_path):
    rock = trimesh.creation.icosphere(3, radius=5.0)
    rock.vertices *= (1.6, 0.7, 1.0)
    rock.export(tmp_path / "rock.stl")
    rock = Object("mesh", file=str(tmp_path / "rock.stl"), rotation=(35.0, 25.0, 60.0))
    params = Params(**HARD, arena_radius=12.0, init_radius=10.0, containment=60.0, objects=[rock])
    worst, touching = _worst_clearance(params, 1500, object_fields(params, resolution=64))
    assert worst >= 0.0
    assert touching > 0.0


def test_no_boid_ever_leaves_a_turned_box_arena():
    room = Object("box", size=(20.0, 8.0, 14.0), rotation=(30.0, 15.0, 10.0), role="arena")
    params = Params(**HARD, arena_shape="none", init_radius=3.5, objects=[room])
    worst, touching = _worst_clearance(params, 1500)
    assert worst >= 0.0
    assert touching > 0.0


def test_no_boid_is_ever_inside_a_moving_sphere():
    # A ball of radius 4 sweeps through the flock at 8 units/s, faster than the boids turn away.
    sweep = Motion(((-14.0, 0.0, 0.0), (14.0, 0.0, 0.0), (-14.0, 0.0, 0.0)), (0.0, 3.5, 7.0), True)
    params = Params(
        **HARD, arena_radius=12.0, containment=60.0, objects=[Object("sphere", radius=4.0, motion=sweep)]
    )
    worst, touching = _worst_clearance(params, 1500)
    assert worst >= 0.0
    assert touching > 0.0


def test_the_constraint_puts_a_boid_back_on_the_surface_and_keeps_its_velocity(engine):
    # No steer (weight 0): a boid flying straight into a wall at x = 5 stops at it, sliding along.
    wall = Object("box", size=(2.0, 40.0, 40.0), position=(6.0, 0.0, 0.0))
    params = Params(count=1, arena_shape="none", objects=[wall], avoidance=0.0, separation=0.0,
                    alignment=0.0, cohesion=0.0, min_speed=4.0, max_speed=4.0, dt=0.1)  # fmt: skip
    flock = Flock(params, positions=[[4.5, 0.0, 0.0]], velocities=[[3.2, 2.4, 0.0]], engine=engine)
    flock.step(1)  # 4.5 + 0.32 = 4.82: not there yet
    np.testing.assert_allclose(flock.positions[0], [4.82, 0.24, 0.0], atol=1e-12)
    flock.step(1)  # 5.14 is inside: back to x = 5, y moved on
    np.testing.assert_allclose(flock.positions[0], [5.0 - 1e-6, 0.48, 0.0], atol=1e-12)
    np.testing.assert_allclose(flock.velocities[0], [3.2, 2.4, 0.0], atol=1e-12)


def test_objects_steer_across_the_heading_one_turn_radius_ahead(engine):
    # A wall's face at x = 5; a boid at x = 2 heading +x at 2 units/s, 90 deg/s: its turn radius
    # is 4/pi = 1.27, so it looks to x = 3.27, clearance 1.73 < the margin 3: urgency 1.27/3.
    wall = Object("box", size=(2.0, 40.0, 40.0), position=(6.0, 0.0, 0.0))
    params = Params(count=2, arena_shape="none", objects=[wall], avoidance=3.0, avoidance_margin=3.0,
                    separation=0.0, alignment=0.0, cohesion=0.0, min_speed=0.0, max_speed=100.0,
                    max_turn_rate=90.0, dt=0.001)  # fmt: skip
    # Boid 1, flying along the wall 2.5 from it, is pushed straight away with urgency 0.5/3.
    p, v = [[2.0, 0.0, 0.0], [2.5, 0.0, 10.0]], [[2.0, 0.0, 0.0], [0.0, 0.0, 2.0]]
    flock = Flock(params, positions=p, velocities=v, engine=engine)
    v0 = flock.velocities.copy()
    flock.step()
    a = (flock.velocities - v0) / params.dt
    urgency = (3.0 - (3.0 - 4.0 / math.pi)) / 3.0
    # Straight at the wall: the normal has no part across the heading; it steers to its right.
    assert np.linalg.norm(a[0]) == pytest.approx(3.0 * urgency, rel=1e-3)
    assert abs(a[0, 0]) < 1e-2 * np.linalg.norm(a[0])
    np.testing.assert_allclose(a[1], [-3.0 * 0.5 / 3.0, 0.0, 0.0], atol=1e-3)


# -- moving attractors ---------------------------------------------------------------------

GLIDE = Motion(((0.0, 0.0, 0.0), (10.0, 0.0, 0.0)), (0.0, 10.0))


@pytest.mark.slow
def test_a_moving_attractor_is_sought_where_its_motion_has_it(engine):
    params = Params(count=1, arena_shape="none", separation=0.0, alignment=0.0, cohesion=0.0, min_speed=0.0,
                    max_speed=2.0, max_turn_rate=math.inf, dt=0.01,
                    attractors=[Attractor(motion=GLIDE)])  # fmt: skip
    assert params.attractors[0].position == (0.0, 0.0, 0.0)  # where it starts (what the viewer shows)
    flock = Flock(params, positions=[[5.0, 3.0, 0.0]], velocities=[[0.0, 1.0, 0.0]], engine=engine)
    flock.state.time = 5.0  # it is at (5, 0, 0) then: straight below the boid
    flock.step()
    # One step of seek with weight 1: u = v + dt (s_max unit(a - p) - v) = (0, 1 + 0.01 (-2 - 1), 0).
    np.testing.assert_allclose(flock.velocities[0], [0.0, 0.97, 0.0], atol=1e-12)


def test_fast_equals_reference_with_moving_attractors():
    loop = Motion(
        ((-5.0, 0.0, 0.0), (0.0, 5.0, 3.0), (5.0, 0.0, 0.0), (-5.0, 0.0, 0.0)), (0.0, 1.0, 2.5, 4.0), True
    )
    attractors = [Attractor(motion=loop, weight=2.0), Attractor((3.0, 3.0, 0.0), 1.0, 5.0)]
    params = Params(count=30, arena_radius=8.0, attractors=attractors)
    fast, ref = Flock(params, seed=4), Flock(params, seed=4, engine="reference")
    fast.step(100)
    ref.step(100)
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9, rtol=0)
    still = Flock(params.replace(attractors=[Attractor((-5.0, 0.0, 0.0), 2.0), params.attractors[1]]), seed=4)
    still.step(100)
    assert np.abs(still.positions - fast.positions).max() > 0.1  # it moved, and the flock followed


def test_a_moving_attractor_round_trips_through_a_scene_file():
    from flock3d.scene import parse_scene

    text = """
[[attractors]]
weight = 2.0
motion = { points = [[0, 0, 0], [10, 0, 0], [0, 0, 0]], times = [0, 5, 10], loop = true }
"""
    scene = parse_scene(text)
    again = parse_scene(scene.to_toml())
    assert again.params.attractors == scene.params.attractors
    assert scene.params.attractors[0].motion.loop is True
    for bad, message in [
        ("position = [1, 0, 0]", "attractors[0].position is given by .motion.points when it moves"),
        ("radius = -1", "attractors[0].radius must be > 0"),
    ]:
        with pytest.raises(SceneError, match=re.escape(message)):
            parse_scene(text + bad + "\n")


# -- perching ------------------------------------------------------------------------------

GROUND = Object("plane", position=(0.0, -2.0, 0.0))
PERCH = dict(count=1, arena_shape="none", objects=[GROUND], separation=0.0, alignment=0.0, cohesion=0.0,
             avoidance=0.0, avoidance_margin=0.0, min_speed=1.0, max_speed=1.0, dt=0.25,
             perching_height=0.5, perching_duration=1.0, perching_cooldown=0.5)  # fmt: skip


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_a_boid_that_comes_low_lands_rests_and_takes_off(engine):
    # Gliding down at 45 degrees from 1 above the ground: after 3 steps it is 1 - 3 * 0.177 =
    # 0.47 above it, within 0.5: it lands there.
    params = Params(**PERCH)
    s = 0.25 * math.sqrt(0.5)
    flock = Flock(params, positions=[[0.0, -1.0, 0.0]], velocities=[[math.sqrt(0.5), -math.sqrt(0.5), 0.0]],
                  engine=engine)  # fmt: skip
    flock.step(2)
    assert flock.state.perches[0] == 0.0 and np.linalg.norm(flock.velocities[0]) == pytest.approx(1.0)
    flock.step(1)
    landed = flock.positions[0].copy()
    np.testing.assert_allclose(landed, [3 * s, -1.0 - 3 * s, 0.0], atol=1e-12)
    assert flock.state.perches[0] == 1.0 and not np.any(flock.velocities[0])
    heading = flock.orientations[0].copy()
    flock.step(3)  # 1 s of rest is 4 steps: still there after 3
    np.testing.assert_array_equal(flock.positions[0], landed)
    np.testing.assert_array_equal(flock.orientations[0], heading)
    assert flock.state.perches[0] == pytest.approx(0.25)
    flock.step(1)  # its time is up: it may not land for 0.5 s
    assert flock.state.perches[0] == -0.5
    np.testing.assert_array_equal(flock.positions[0], landed)
    flock.step(1)  # and flies off along its heading, at its lowest speed
    assert np.linalg.norm(flock.velocities[0]) == pytest.approx(1.0)
    assert np.linalg.norm(flock.positions[0] - landed) == pytest.approx(0.25)
    assert flock.state.perches[0] == -0.25


@pytest.mark.slow
def test_a_flock_with_perching_equals_its_reference_and_some_boids_rest():
    ground = Object("heightfield", size=(40.0, 40.0), height=4.0, seed=2, position=(0.0, -6.0, 0.0))
    params = Params(count=40, arena_radius=9.0, objects=[ground], perching_height=2.5, perching_duration=0.5,
                    perching_cooldown=1.0, cohesion=0.0, wind=(0.0, -4.0, 0.0))  # fmt: skip
    fast, ref = Flock(params, seed=1), Flock(params, seed=1, engine="reference")
    rested = 0
    for _ in range(10):
        fast.step(10)
        ref.step(10)
        rested = max(rested, int(np.sum(fast.state.perches > 0)))
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9, rtol=0)
    np.testing.assert_array_equal(fast.state.perches, ref.state.perches)
    assert rested > 0


def test_perching_needs_a_ground_in_one_line():
    wanted = (
        r"perching_height needs a ground to land on: an \[\[objects\]\] table of shape plane or heightfield"
    )
    with pytest.raises(ValueError, match=wanted + r" \(got perching.height 1 and no ground\)"):
        Params(perching_height=1.0, objects=[Object("sphere", radius=1.0, position=(20, 0, 0))])
    with pytest.raises(ValueError, match="perching_duration must be > 0"):
        Params(perching_height=1.0, perching_duration=0.0, objects=[GROUND])


@pytest.mark.slow
def test_check_names_a_perching_scene_without_ground_in_one_line(tmp_path):
    from helpers import assert_one_line_failure, flock3d

    scene = tmp_path / "perch.toml"
    scene.write_text(
        '[perching]\nheight = 1.0\n\n[[objects]]\nshape = "sphere"\nradius = 2.0\nposition = [20, 0, 0]\n'
    )
    assert_one_line_failure(flock3d("check", scene), "perch.toml: perching.height needs a ground to land on")
    scene.write_text("[perching]\nheight = 1.0\nduration = -2\n\n[[objects]]\nshape = \"plane\"\n"
                     "position = [0, -20, 0]\n")  # fmt: skip
    assert_one_line_failure(flock3d("check", scene), "perch.toml: perching.duration must be > 0 (got -2")
