"""The classic variants and world features: closed forms on hand-built cases in both
engines, kernel == reference on every variant, and their behaviour over long runs."""

import itertools
import math

import numpy as np
import pytest

from flock3d import Flock, Params, metrics
from flock3d.core import quaternion
from flock3d.core.params import Attractor, Obstacle, WaypointPath
from flock3d.core.space import visible

from conftest import FAST_IS_SLOW, acceleration, free_params, hand_flock

DT = 0.01


# -- arenas -----------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_box_pushes_back_along_each_axis_beyond_its_margin(engine):
    params = free_params(arena_shape="box", arena_radius=10.0, confinement=3.0, confinement_start=0.8)
    p = [[9.0, 0.0, 0.0], [-9.0, 8.5, 0.0], [0.0, 0.0, 7.9], [-8.5, -8.5, -9.5]]
    a = acceleration(hand_flock(params, p, [[0, 0, 1]] * 4, engine))
    np.testing.assert_allclose(a, [[-3, 0, 0], [3, -3, 0], [0, 0, 0], [3, 3, 3]], atol=1e-9)


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_open_arena_has_no_walls(engine):
    params = Params(arena_shape="none", arena_radius=1.0, confinement=50.0)
    flock = hand_flock(params, [[100.0, 0, 0]], [[0, 0, 4.0]], engine)
    flock.step(30)
    np.testing.assert_allclose(flock.velocities[0], [0, 0, 4.0], atol=1e-12)


def test_periodic_arena_wraps_positions_and_sees_across_the_border(engine):
    params = free_params(arena_shape="periodic", arena_radius=10.0, view_distance=5.0, cohesion=1.0)
    # Two boids 2 apart across the x = +-10 border; directly, they are 18 apart.
    flock = hand_flock(params, [[9.5, 0, 0], [-9.5, 0, 0]], [[0, 0, 1.0], [0, 0, 1.0]], engine)
    a = acceleration(flock)
    np.testing.assert_allclose(a[0], [1.0, 0, 0], atol=1e-9)  # pulled outwards, towards the other
    np.testing.assert_allclose(a[1], [-1.0, 0, 0], atol=1e-9)
    flock = hand_flock(params, [[9.99, 0, 0]], [[5.0, 0, 0]], engine)
    flock.step(1)
    assert -10.0 <= flock.positions[0, 0] < -9.9  # it came out of the opposite face


def test_minimum_image_neighbours_equal_a_brute_force_over_27_images():
    params = Params(arena_shape="periodic", arena_radius=6.0, view_distance=4.0, fov=240.0)
    flock = Flock(params.replace(count=120, init_radius=6.0), seed=1)
    side = 2 * params.arena_radius
    shifts = np.array(list(itertools.product((-side, 0.0, side), repeat=3)))
    for boid in flock.boids[:40]:
        got = visible(boid.position, boid.forward, flock.positions, params)
        expected = np.zeros(len(flock), dtype=bool)
        for shift in shifts:
            expected |= visible(boid.position, boid.forward, flock.positions + shift, free_params(
                view_distance=params.view_distance, fov=params.fov))  # fmt: skip
        np.testing.assert_array_equal(got, expected)


def test_a_periodic_flock_always_lies_inside_its_box():
    params = Params(count=500, arena_shape="periodic", arena_radius=5.0, view_distance=3.0, init_radius=12.0)

    def inside(positions, radius):
        return np.all((positions >= -radius) & (positions < radius))

    flock = Flock(params, seed=1)  # drawn from a ball larger than the box: wrapped in
    assert inside(flock.positions, 5.0) and np.max(np.abs(flock.positions)) > 4.0
    given = Flock(params, positions=[[12.0, -7.0, 0.5]], velocities=[[0, 0, 1.0]])
    np.testing.assert_allclose(given.positions, [[2.0, 3.0, 0.5]])
    given.boids[0].position = [-5.5, 0.0, 26.0]
    np.testing.assert_allclose(given.positions, [[4.5, 0.0, -4.0]])
    flock.params = params.replace(arena_radius=4.0)  # a live shrink wraps everyone into the new box
    assert inside(flock.positions, 4.0)
    flock.step(5)
    assert inside(flock.positions, 4.0)


def test_a_written_velocity_in_a_planar_flock_keeps_up_along_z():
    flock = Flock(Params(dimensions=2, count=3), seed=0)
    flock.boids[1].velocity = [0.0, 3.0, 0.0]
    np.testing.assert_allclose(quaternion.up(flock.orientations[1:2])[0], [0, 0, 1.0], atol=1e-15)
    np.testing.assert_allclose(flock.boids[1].forward, [0, 1.0, 0], atol=1e-15)


def test_planar_flocks_stay_in_their_plane():
    params = Params(dimensions=2, count=300, arena_center=(0.0, 0.0, 4.0))
    flock = Flock(params, seed=2)
    flock.step(1800)  # 30 s: planar flocks order more slowly than 3D ones (0.86-0.96 here)
    np.testing.assert_array_equal(flock.positions[:, 2], 4.0)
    np.testing.assert_array_equal(flock.velocities[:, 2], 0.0)
    np.testing.assert_allclose(quaternion.up(flock.orientations), np.tile([0, 0, 1.0], (300, 1)), atol=1e-9)
    assert metrics.group_polarization(flock.positions, flock.velocities, params.view_distance) > 0.75


# -- separation variants ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "falloff, magnitude",
    [("inverse", 1 / 1.5), ("linear", 1.5), ("linear_gap", 2.0 - 1.5), ("quadratic", (2.0 - 1.5) ** 2)],
)
def test_separation_falloffs(engine, falloff, magnitude):
    params = free_params(separation=3.0, separation_falloff=falloff)
    a = acceleration(hand_flock(params, [[0, 0, 0], [1.5, 0, 0]], [[0, 0, 1]] * 2, engine))
    np.testing.assert_allclose(a[0], [-3.0 * magnitude, 0, 0], atol=1e-9)


@pytest.mark.parametrize("average", [True, False])
def test_separation_averages_or_sums(engine, average):
    params = free_params(separation=1.0, separation_falloff="linear", separation_average=average)
    p = [[0, 0, 0], [1.0, 0, 0], [0, 1.5, 0]]
    a = acceleration(hand_flock(params, p, [[0, 0, 1]] * 3, engine))
    total = np.array([-1.0, -1.5, 0.0])
    np.testing.assert_allclose(a[0], total / 2 if average else total, atol=1e-9)


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_each_rule_has_its_own_radius_and_cone(engine):
    params = free_params(
        view_distance=10.0, separation_distance=2.0, separation=1.0, separation_falloff="linear",
        alignment=1.0, alignment_distance=4.0, alignment_fov=90.0,
        cohesion=1.0, cohesion_distance=8.0, cohesion_fov=360.0,
    )  # fmt: skip
    # Boid 0 faces +z. B1 ahead at 3: aligns, coheres. B2 behind at 1: separates, coheres.
    # B3 to the side at 6: coheres only.
    p = [[0, 0, 0], [0, 0, 3.0], [0, 0, -1.0], [6.0, 0, 0]]
    v = [[0, 0, 1.0], [1.0, 0, 1.0], [0, 3.0, 0], [0, 0, 5.0]]
    a = acceleration(hand_flock(params, p, v, engine))[0]
    separation = -np.array(p[2])  # linear falloff: the offset itself, averaged over one
    alignment = np.array(v[1]) - v[0]
    cohesion = np.mean(p[1:], axis=0)
    np.testing.assert_allclose(a, separation + alignment + cohesion, atol=1e-9)


def test_global_perception_pulls_to_the_centre_of_the_whole_flock(engine):
    params = free_params(view_distance=math.inf, separation_distance=1.0, cohesion=0.01)
    p = np.array([[0, 0, 0], [300.0, 0, 0], [0, -600.0, 90.0], [120.0, 30.0, -60.0]])
    a = acceleration(hand_flock(params, p, [[0, 0, 1]] * 4, engine))
    for i in range(4):
        centre_of_others = np.delete(p, i, axis=0).mean(axis=0)
        np.testing.assert_allclose(a[i], 0.01 * (centre_of_others - p[i]), atol=1e-9)


# -- world features -------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_attractor_seek_and_its_radius(engine):
    params = free_params(
        max_speed=5.0, attractors=[Attractor((10.0, 0, 0), 2.0, 20.0), Attractor((0, 50, 0), 1.0, 20.0)]
    )
    a = acceleration(hand_flock(params, [[0, 0, 0]], [[0, 0, 1.0]], engine))[0]
    # Seek the first (within 20): 2 * (5 * unit(+x) - v); the second is out of range.
    np.testing.assert_allclose(a, 2.0 * (np.array([5.0, 0, 0]) - [0, 0, 1.0]), atol=1e-9)


def test_path_moves_on_to_the_next_waypoint_within_reach(engine):
    points = ((0.0, 0.0, 0.0), (10.0, 0.0, 0.0), (10.0, 10.0, 0.0))
    params = free_params(max_speed=4.0, path=WaypointPath(points, 1.0, 2.0))
    flock = hand_flock(params, [[1.0, 0, 0], [9.0, 9.0, 0]], [[0, 0, 1.0]] * 2, engine)
    np.testing.assert_array_equal(flock.state.waypoints, [0, 2])  # nearest to start with
    a = acceleration(flock)
    # Boid 0 is within reach of waypoint 0: it seeks waypoint 1, to its +x.
    np.testing.assert_allclose(a[0], np.array([4.0, 0, 0]) - [0, 0, 1.0], atol=1e-9)
    unit = np.array([1.0, 1.0, 0]) / math.sqrt(2)  # boid 1, 1.41 from waypoint 2: moves on to 0
    np.testing.assert_allclose(a[1], 4.0 * -unit - [0, 0, 1.0], atol=1e-9)
    np.testing.assert_array_equal(flock.state.waypoints, [1, 0])


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_boids_steer_around_an_obstacle_ahead(engine):
    params = free_params(obstacles=[Obstacle((0.0, 0.0, 10.0), 2.0)], avoidance=10.0, avoidance_lookahead=2.0,
                         avoidance_margin=1.0, max_speed=6.0)  # fmt: skip
    # Heading +z towards the obstacle, passing 1 unit to its +x side: pushed further to +x,
    # harder the closer it is (look-ahead 12 units, obstacle 10 ahead).
    a = acceleration(hand_flock(params, [[1.0, 0, 0]], [[0, 0, 4.0]], engine))[0]
    np.testing.assert_allclose(a, [10.0 * (1 - 10 / 12), 0, 0], atol=1e-9)
    a = acceleration(hand_flock(params, [[1.0, 0, 20.0]], [[0, 0, 4.0]], engine))[0]  # already past it
    np.testing.assert_allclose(a, 0.0, atol=1e-9)
    a = acceleration(hand_flock(params, [[0.0, 2.5, 10.0]], [[0, 0, 4.0]], engine))[0]  # inside the margin
    np.testing.assert_allclose(a, [0, 10.0, 0], atol=1e-9)
    # Heading straight at the centre: no side is nearer, so it veers to its right (+x here).
    a = acceleration(hand_flock(params, [[0.0, 0, 0]], [[0, 0, 4.0]], engine))[0]
    np.testing.assert_allclose(a, [10.0 * (1 - 10 / 12), 0, 0], atol=1e-9)


@pytest.mark.slow
def test_obstacles_are_seen_across_a_periodic_border(engine):
    params = free_params(arena_shape="periodic", arena_radius=10.0, view_distance=5.0, avoidance=10.0,
                         avoidance_margin=0.5, obstacles=[Obstacle((9.5, 0.0, 0.0), 0.5)])  # fmt: skip
    # The obstacle's nearest image is at x = -10.5, 0.7 from the boid: inside its margin.
    a = acceleration(hand_flock(params, [[-9.8, 0, 0]], [[0, 0, 4.0]], engine))[0]
    np.testing.assert_allclose(a, [10.0, 0, 0], atol=1e-9)


@pytest.mark.slow
def test_no_boid_ends_inside_an_obstacle_over_a_long_run():
    from flock3d.scene import resolve_scene

    scene = resolve_scene("features/obstacles")
    flock = Flock.from_scene(scene)
    centres = np.array([o.center for o in scene.params.obstacles])
    radii = np.array([o.radius for o in scene.params.obstacles])
    closest = np.inf
    for _ in range(3600):  # 60 s, every step
        flock.step()
        gaps = np.linalg.norm(flock.positions[:, None] - centres[None], axis=2) - radii[None]
        closest = min(closest, gaps.min())
    assert closest > 0.0, f"a boid reached {closest:.3f} inside an obstacle"


def test_boids_flee_a_predator_they_see(engine):
    params = free_params(fov=180.0, flee=8.0, flee_distance=5.0, predator_count=1)
    flock = hand_flock(params, [[0, 0, 0], [0, 0, 20.0]], [[0, 0, 1.0]] * 2, engine)
    flock.state.predator_positions[0] = [0.0, 2.4, 3.2]  # 4 units ahead-above boid 0; behind boid 1
    a = acceleration(flock)
    np.testing.assert_allclose(a[0], -8.0 * np.array([0, 0.6, 0.8]), atol=1e-9)
    np.testing.assert_allclose(a[1], 0.0, atol=1e-9)  # out of range and behind it


def test_predators_turn_towards_the_nearest_boid(engine):
    params = free_params(predator_count=1, predator_speed=3.0, predator_turn_rate=math.inf)
    flock = hand_flock(params, [[10.0, 0, 0], [0, -4.0, 0]], [[0, 0, 1.0]] * 2, engine)
    flock.state.predator_positions[0] = 0.0
    flock.step()
    np.testing.assert_allclose(flock.state.predator_velocities[0], [0, -3.0, 0], atol=1e-9)
    np.testing.assert_allclose(flock.state.predator_positions[0], [0, -3.0 * params.dt, 0], atol=1e-12)


def test_predators_reduce_the_number_of_boids_near_them():
    def crowding(flee: float) -> float:
        params = Params(count=400, predator_count=3, flee=flee, flee_distance=10.0)
        flock = Flock(params, seed=4)
        near = []
        for _ in range(40):  # 20 s, sampled every half second
            flock.step(30)
            d = np.linalg.norm(flock.positions[:, None] - flock.state.predator_positions[None], axis=2)
            near.append((d < 6.0).sum())
        return float(np.mean(near[10:]))

    assert crowding(flee=60.0) < 0.6 * crowding(flee=0.0)


@pytest.mark.parametrize("engine", FAST_IS_SLOW)
def test_wind_uniform_and_linear_field(engine):
    gradient = ((0.0, -0.5, 0.0), (0.5, 0.0, 0.0), (0.0, 0.0, 0.0))  # a vortex about z
    params = free_params(wind=(1.0, 0.0, -2.0), wind_gradient=gradient, arena_center=(1.0, 1.0, 0.0))
    a = acceleration(hand_flock(params, [[3.0, 1.0, 5.0]], [[0, 0, 1.0]], engine))[0]
    np.testing.assert_allclose(
        a, np.array([1.0, 0.0, -2.0]) + np.array(gradient) @ [2.0, 0.0, 5.0], atol=1e-9
    )


# -- the fast kernel against the reference on every variant ---------------------------------------

SMALL = dict(count=40, arena_radius=7.0)
VARIANTS = {
    "box": Params(**SMALL, arena_shape="box"),
    "periodic": Params(**SMALL, arena_shape="periodic", init_radius=7.0),
    "open": Params(**SMALL, arena_shape="none"),
    "planar": Params(**SMALL, dimensions=2),
    "planar periodic": Params(**SMALL, dimensions=2, arena_shape="periodic", init_radius=7.0),
    "linear sum": Params(**SMALL, separation_falloff="linear", separation_average=False, separation=2.0),
    "gap": Params(**SMALL, separation_falloff="linear_gap"),
    "quadratic": Params(**SMALL, separation_falloff="quadratic"),
    "per-rule radii and cones": Params(
        **SMALL,
        alignment_distance=3.0,
        cohesion_distance=4.5,
        separation_fov=300.0,
        alignment_fov=120.0,
        cohesion_fov=200.0,
    ),  # fmt: skip
    "attractors": Params(**SMALL, attractors=[Attractor((5, 0, 0), 2.0, 6.0), Attractor((-3, 3, 0), 0.5)]),
    "path": Params(**SMALL, path=WaypointPath(((6, 0, 0), (0, 6, 0), (-6, 0, 0), (0, -6, 0)), 1.5, 2.0)),
    "obstacles": Params(**SMALL, obstacles=[Obstacle((0, 0, 0), 2.0), Obstacle((4, 1, 0), 1.0)]),
    "predators": Params(**SMALL, predator_count=3),
    "wind": Params(**SMALL, wind=(1, 0, 0.5), wind_gradient=((0, -0.2, 0), (0.2, 0, 0), (0, 0, 0))),
    "periodic, started wider than the box": Params(**SMALL, arena_shape="periodic", init_radius=12.0),
    "planar obstacles and predators": Params(
        **SMALL,
        dimensions=2,
        predator_count=2,
        obstacles=[Obstacle((0, 0, 0), 2.0), Obstacle((4, 1, 0), 1.0)],
    ),
    "everything, periodic": Params(
        **SMALL,
        arena_shape="periodic",
        init_radius=7.0,
        predator_count=2,
        separation_falloff="quadratic",
        alignment_fov=180.0,
        attractors=[Attractor((2, 2, 2), 1.0)],
        obstacles=[Obstacle((-3, 0, 0), 1.5), Obstacle((6.5, 0, 0), 1.5)],  # one across the border
        wind=(0.3, 0, 0),
    ),  # fmt: skip
    # How a step is carried out (docs/model.md, "How a step is carried out").
    "sequential": Params(**SMALL, update="sequential"),
    "sequential, periodic, predators": Params(
        **SMALL, update="sequential", arena_shape="periodic", init_radius=7.0, predator_count=2
    ),
    "per rule, chained": Params(**SMALL, update="per_rule", combine="chain"),
    "chained, own order": Params(
        **SMALL,
        combine="chain",
        rule_order=("speed", "cohesion", "separation"),
        attractors=[Attractor((3, 0, 0))],
    ),
    "alignment mean, linear sum": Params(
        **SMALL, alignment_form="mean", alignment=0.2, separation_falloff="linear", separation_average=False
    ),
    "mesh turn limit": Params(**SMALL, turn_limit="mesh", max_turn_rate=90.0),
    "mesh, planar, sequential": Params(**SMALL, turn_limit="mesh", dimensions=2, update="sequential"),
    "wrap": Params(**SMALL, arena_shape="wrap", init_radius=9.0),
    "rectangular box": Params(**SMALL, arena_shape="box", arena_size=(20.0, 10.0, 14.0)),
    "rectangular periodic, planar": Params(
        **SMALL, arena_shape="periodic", arena_size=(24.0, 12.0, 1.0), dimensions=2, init_radius=9.0
    ),
    "containment, sphere": Params(**SMALL, containment=40.0, max_turn_rate=60.0),
    "containment, planar box": Params(**SMALL, containment=40.0, arena_shape="box", dimensions=2),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(VARIANTS))
def test_fast_kernel_equals_reference_on_every_variant(name):
    params = VARIANTS[name]
    fast, ref = Flock(params, seed=3), Flock(params, seed=3, engine="reference")
    fast.step(50)
    ref.step(50)
    np.testing.assert_allclose(fast.positions, ref.positions, atol=1e-9)
    np.testing.assert_allclose(fast.velocities, ref.velocities, atol=1e-9)
    np.testing.assert_array_equal(fast.state.waypoints, ref.state.waypoints)
    np.testing.assert_allclose(fast.state.predator_positions, ref.state.predator_positions, atol=1e-9)


def test_no_boid_starts_inside_an_obstacle_or_its_margin():
    obstacles = [Obstacle((0, 0, 0), 5.0), Obstacle((6, 0, 0), 2.0)]
    params = Params(count=2000, obstacles=obstacles, avoidance_margin=1.0, init_radius=8.0)
    flock = Flock(params, seed=0)
    for o in obstacles:
        assert np.linalg.norm(flock.positions - o.center, axis=1).min() >= o.radius + 1.0
    assert np.linalg.norm(flock.positions, axis=1).max() > 7.5  # still the whole initial ball
    with pytest.raises(ValueError, match=r"obstacles\[0\] with its margin covers the whole initial ball"):
        params.replace(init_radius=3.9)  # 3.9 + 0 <= 5 + 1
