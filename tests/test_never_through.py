"""Never inside, never through: thin walls, fast boids, thin mesh parts, objects moved onto the flock
and spiky ground, each checked against the exact shape with closed forms written here, not with
the engines' distance functions (docs/model.md, "Objects")."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from flock3d import Flock, Params
from flock3d.core.objects import MARCH, Motion, Object, object_room, pack_objects

trimesh = pytest.importorskip("trimesh")
pytest.importorskip("igl")
iio = pytest.importorskip("imageio.v3")

from flock3d.io.meshes import object_fields  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import adversarial  # noqa: E402  (benchmarks/adversarial.py: the worlds world_containment.py runs)


def box_depth(points: np.ndarray, center, half) -> np.ndarray:
    """How deep each point lies in an axis-aligned box (> 0 inside, <= 0 outside)."""
    return np.min(np.asarray(half) - np.abs(np.asarray(points) - np.asarray(center)), axis=-1)


def crossings(before: np.ndarray, after: np.ndarray, center, half, samples: int = 512) -> int:
    """How many moves before -> after pass through the box: some point of the segment (sampled
    far finer than any march) lies in it."""
    u = np.linspace(0.0, 1.0, samples)[None, :, None]
    path = before[:, None, :] + u * (after - before)[:, None, :]
    return int(np.count_nonzero((box_depth(path, center, half) > 0.0).any(axis=1)))


SOLO = dict(count=1, arena_shape="none", avoidance=0.0, separation=0.0, alignment=0.0, cohesion=0.0)


@pytest.mark.slow
def test_a_fast_boid_stops_before_a_wall_thinner_than_its_step(engine):
    # A wall 0.05 thick at x = 5; the boid moves 1.0 a step, from 4.6: its end, 5.6, is free.
    wall = Object("box", size=(0.05, 40.0, 40.0), position=(5.025, 0.0, 0.0))
    params = Params(**SOLO, objects=[wall], min_speed=10.0, max_speed=10.0, dt=0.1)
    flock = Flock(params, positions=[[4.6, 0.0, 0.0]], velocities=[[10.0, 0.0, 0.0]], engine=engine)
    flock.step()
    x = flock.positions[0, 0]
    assert 5.0 - 1.0 / MARCH <= x < 5.0  # on the near side, within a march step of the wall
    np.testing.assert_allclose(flock.velocities[0], [10.0, 0.0, 0.0], atol=1e-12)  # the boid's own


@pytest.mark.slow
def test_a_flock_of_fast_boids_never_goes_through_a_thin_slab(engine):
    # 0.05 thick, boids moving 0.6 to 1 a step: the old constraint looked only where they landed.
    center, half = (0.0, 0.0, 0.0), (30.0, 0.025, 30.0)
    slab = Object("box", size=(60.0, 0.05, 60.0))
    count = 200 if engine == "fast" else 24
    params = Params(count=count, arena_shape="box", arena_radius=12.0, init_radius=6.0, objects=[slab],
                    min_speed=12.0, max_speed=20.0, dt=0.05, avoidance=0.0)  # fmt: skip
    flock = Flock(params, seed=1, engine=engine)
    through = inside = 0
    for _ in range(300 if engine == "fast" else 60):
        before = flock.positions.copy()
        flock.step()
        inside += int(np.count_nonzero(box_depth(flock.positions, center, half) > 0.0))
        through += crossings(before, flock.positions, center, half)
    assert inside == 0 and through == 0


def _slab_mesh(tmp_path, thickness: float, side: float = 60.0) -> str:
    path = tmp_path / f"slab{thickness}.stl"
    trimesh.creation.box(extents=(side, thickness, side)).export(path)
    return str(path)


@pytest.mark.slow
def test_no_boid_enters_or_crosses_a_mesh_plate_thinner_than_its_grid(tmp_path):
    # A 0.1 plate 60 wide: its grid's cell is 0.59, so the sampled distance never goes below 0
    # (the plate vanished from it before); the grid's skin keeps the boids off the plate itself.
    center, half = (0.0, 0.0, 0.0), (30.0, 0.05, 30.0)
    params = Params(count=200, arena_shape="box", arena_radius=12.0, init_radius=6.0,
                    objects=[Object("mesh", file=_slab_mesh(tmp_path, 0.1))], min_speed=10.0,
                    max_speed=20.0, dt=0.05)  # fmt: skip
    flock = Flock(params, seed=2, fields=object_fields(params))
    through = inside = 0
    for _ in range(400):
        before = flock.positions.copy()
        flock.step()
        inside += int(np.count_nonzero(box_depth(flock.positions, center, half) > 0.0))
        through += crossings(before, flock.positions, center, half)
    assert inside == 0 and through == 0


@pytest.mark.slow
def test_boids_in_the_middle_of_a_mesh_plate_are_pushed_out_not_flung(tmp_path, engine):
    # On the plate's mid-plane the grid's gradient vanishes (about 1e-15): a Newton step along it
    # sent boids to 3.6e13. Placed there, they come out within a few units, on either face.
    center, half = (0.0, 0.0, 0.0), (30.0, 0.35, 30.0)
    params = Params(**{**SOLO, "count": 5}, objects=[Object("mesh", file=_slab_mesh(tmp_path, 0.7))],
                    min_speed=1.0, max_speed=1.0, dt=0.05)  # fmt: skip
    start = np.array([[x, 0.0, z] for x, z in ((0, 0), (3, 1), (-5, 2), (7, -4), (1, 9))], dtype=float)
    flock = Flock(params, positions=start, velocities=[[1.0, 0.0, 0.0]] * 5, engine=engine,
                  fields=object_fields(params))  # fmt: skip
    flock.step()
    assert np.isfinite(flock.positions).all()
    assert (box_depth(flock.positions, center, half) <= 0.0).all()
    assert np.linalg.norm(flock.positions - start, axis=1).max() < 3.0


@pytest.mark.slow
def test_a_planar_flock_is_pushed_out_of_a_box_whose_nearest_face_lies_along_its_plane(engine):
    # The box's bottom face is 0.1 below the flock's plane: where it covers a boid that face is
    # the nearest, its normal across the plane, and a push in the plane along it goes nowhere.
    sweep = Motion(((-12.0, 0.0, 2.9), (12.0, 0.0, 2.9), (-12.0, 0.0, 2.9)), (0.0, 3.0, 6.0), True)
    box = Object("box", size=(6.0, 6.0, 6.0), motion=sweep)
    count = 150 if engine == "fast" else 20
    params = Params(count=count, dimensions=2, arena_radius=12.0, objects=[box], avoidance=0.0,
                    min_speed=3.0, max_speed=4.0)  # fmt: skip
    flock = Flock(params, seed=3, engine=engine)
    inside = 0
    for _ in range(720 if engine == "fast" else 240):
        flock.step()
        phase = (flock.time % 6.0) / 3.0
        x = -12.0 + 24.0 * phase if phase <= 1.0 else 12.0 - 24.0 * (phase - 1.0)
        inside += int(np.count_nonzero(box_depth(flock.positions, (x, 0.0, 2.9), (3.0, 3.0, 3.0)) > 0.0))
    assert inside == 0


@pytest.mark.slow
@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_a_mesh_moved_or_scaled_onto_the_flock_leaves_no_boid_inside_after_one_step(tmp_path, scale):
    # A cube of side 3 (6 scaled) moved onto the flock's middle, where the grid's gradient
    # vanishes: the boids there had no way out the old pushes could follow.
    cube = tmp_path / "cube.stl"
    trimesh.creation.box(extents=(3.0, 3.0, 3.0)).export(cube)
    params = Params(count=150, arena_radius=12.0, init_radius=4.0)
    flock = Flock(params, seed=4)
    flock.step()
    center, half = flock.positions.mean(axis=0), (1.5 * scale,) * 3
    assert (box_depth(flock.positions, center, half) > 0.0).sum() >= 5  # the edit lands on the flock
    edited = params.replace(objects=[Object("mesh", file=str(cube), position=tuple(center), scale=scale)])
    flock.fields = object_fields(edited)
    flock.params = edited
    for _ in range(30):
        flock.step()
        assert (box_depth(flock.positions, center, half) <= 0.0).all()


@pytest.mark.slow
def test_a_boid_flying_into_a_spike_continued_beyond_the_ground_is_not_flung_over_it(tmp_path, engine):
    # A one-pixel spike 200 high in the corner of ground 16 wide continues beyond both edges as a
    # raised quarter, walled by a ramp 0.5 wide. A boid moving 5 a step across the ramp lands in
    # the quarter, where the ground's normal is vertical: the push up to its top (197 units) was
    # taken, where the move was 5.
    pixels = np.zeros((17, 17), dtype=np.uint8)
    pixels[0, 0] = 255
    iio.imwrite(tmp_path / "spike.png", pixels)
    ground = Object("heightfield", size=(16.0, 16.0), height=200.0, image=str(tmp_path / "spike.png"),
                    position=(0.0, -3.0, 0.0))  # fmt: skip
    params = Params(**SOLO, objects=[ground], min_speed=50.0, max_speed=50.0, dt=0.1)
    flock = Flock(params, positions=[[-12.0, 0.0, -6.0]], velocities=[[0.0, 0.0, -50.0]], engine=engine,
                  fields=object_fields(params))  # fmt: skip
    flock.step()
    x, y, z = flock.positions[0]
    assert np.hypot(x + 12.0, z + 6.0) <= 5.0 and y == 0.0  # it went no farther than its move
    assert z > -8.0  # and stopped before the ramp's foot, where the ground rises from y = -3


@pytest.mark.slow
def test_a_fast_thin_blade_carries_the_boids_it_meets_alike_in_both_engines(tmp_path):
    # The fan: a blade 0.2 thick turning once a second passes over the boids beside its middle
    # between two steps. Each engine carries them with it (keep_out's carried / the reference's
    # readable twin); before, a boid the blade had passed over stayed where it was, on the other
    # side of it (247 crossings in this run's 150 boids, 120 steps).
    world = adversarial.build("fan", tmp_path)
    params = world.params.replace(count=40, init_radius=4.0)
    fast, ref = Flock(params, seed=3), Flock(params, seed=3, engine="reference")
    for _ in range(20):
        fast.step()
        ref.step()
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9, rtol=0)
    result = adversarial.run(world, 60, engine="reference", count=40)
    assert result["inside"] == 0 and result["through"] == 0, result


@pytest.mark.slow
@pytest.mark.parametrize("name", list(adversarial.BUILDERS))
def test_each_adversarial_world_of_the_benchmark_holds_for_a_short_run(name, tmp_path):
    # The benchmark's worlds and judge, short: 150 boids, 120 steps (the edits start at step 50).
    result = adversarial.run(adversarial.build(name, tmp_path), 120, count=150)
    assert result["inside"] == 0 and result["through"] == 0 and result["deepest"] <= 0.0, result


def test_the_room_beyond_a_mesh_grids_box_is_no_more_than_the_distance(tmp_path, engine):
    # The grid adds the distance to its box to the value at the box's nearest point: more than
    # the distance for a point off to the side, so a move from below the box skipped the corner
    # of a plate 0.1 thick (found in review).
    params = Params(**SOLO, objects=[Object("mesh", file=_slab_mesh(tmp_path, 0.1, side=2.0))],
                    min_speed=41.1, max_speed=41.1, dt=0.1)  # fmt: skip
    fields = object_fields(params)
    start = np.array([-1.2691324791097554, -3.7709622092122403, -1.2672397119260363])
    end = np.array([-0.8649306140078409, 0.3015308320929464, -0.8860587151646132])  # above the plate
    rng = np.random.default_rng(8)
    points = rng.uniform(-4.0, 4.0, (2000, 3))
    data, offsets = pack_objects(params.objects, fields)
    room = np.array([object_room(data, offsets[0], 0.0, *p) for p in points])
    outside = np.linalg.norm(np.maximum(np.abs(points) - (1.0, 0.05, 1.0), 0.0), axis=1)  # the distance
    assert (room[outside > 0.0] <= outside[outside > 0.0] + 1e-12).all()
    flock = Flock(params, positions=[start], velocities=[(end - start) / 0.1], engine=engine, fields=fields)
    flock.step()
    assert crossings(start[None], flock.positions, (0.0, 0.0, 0.0), (1.0, 0.05, 1.0), samples=20_001) == 0


@pytest.mark.parametrize("update", ["synchronous", "sequential"])
def test_a_predator_never_enters_or_crosses_a_wall_between_it_and_its_prey(update):
    # Prey behind a wall 0.5 thick, a hawk moving 0.5 a step straight at it: it used to fly through.
    center, half = (0.0, 0.0, 0.0), (0.25, 20.0, 20.0)
    wall = Object("box", size=(0.5, 40.0, 40.0))
    params = Params(count=4, arena_shape="none", objects=[wall], separation=0.0, alignment=0.0, cohesion=0.0,
                    min_speed=0.5, max_speed=0.5, predator_count=1, predator_speed=10.0,
                    predator_turn_rate=float("inf"), flee=0.0, dt=0.05, update=update)  # fmt: skip
    positions = [[6.0, 0.0, 0.0], [6.0, 1.0, 0.0], [7.0, 0.0, 1.0], [7.0, -1.0, 0.0]]
    runs = {}
    for engine in ("fast", "reference"):
        flock = Flock(params, positions=positions, velocities=[[0.0, 0.5, 0.0]] * 4, engine=engine)
        flock.state.predator_positions[0] = [-3.0, 0.0, 0.0]
        track = [flock.state.predator_positions.copy()]
        for _ in range(40):
            flock.step()
            track.append(flock.state.predator_positions.copy())
        runs[engine] = track = np.concatenate(track)
        assert np.all(box_depth(track, center, half) <= 0.0)
        assert crossings(track[:-1], track[1:], center, half) == 0
        assert track[-1, 0] > -0.26  # it reached the wall and presses on it, on its own side
    np.testing.assert_allclose(runs["fast"], runs["reference"], atol=1e-9)
