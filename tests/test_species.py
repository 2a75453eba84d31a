"""Species: the interaction matrix on hand-built two-boid cases, each species' own parameters,
fast == reference, the scene tables and their look, and the recording of who is what."""

import math

import numpy as np
import pytest

from flock3d import Flock, Params, metrics
from flock3d.core.params import Species
from flock3d.scene import SceneError, parse_scene

from conftest import acceleration, free_params, hand_flock

#: Boid 0 (species a) at the origin flying +z; boid 1 (species b) 1 unit to its side, flying +x.
P = [[0, 0, 0], [1.0, 0, 0]]
V = [[0, 0, 1.0], [1.0, 0, 0]]


def two(engine, a: dict | None = None, b: dict | None = None, **flock):
    """A pair of boids, one of each species; the flock's rules by ``flock``, free otherwise."""
    species = [Species("a", 1, **(a or {})), Species("b", 1, **(b or {}))]
    base = dict(
        cohesion=1.0, alignment=1.0, separation=1.0, separation_distance=2.0, separation_falloff="linear"
    )
    return hand_flock(free_params(**{**base, **flock}, species=species), P, V, engine)


# Each rule's closed form, for boid 0 (partner at +x, velocity +x) and boid 1 (partner at -x,
# velocity +z). Linear separation: the offset away; alignment: v_j - v_i; cohesion: the offset.
SEPARATION = np.array([[-1.0, 0, 0], [1.0, 0, 0]])
ALIGNMENT = np.array([[1.0, 0, -1.0], [-1.0, 0, 1.0]])
COHESION = np.array([[1.0, 0, 0], [-1.0, 0, 0]])


@pytest.mark.slow
@pytest.mark.parametrize(
    "a, b, expected",
    [
        ({}, {}, [SEPARATION + ALIGNMENT + COHESION] * 1),
        # a does not see b: a gets nothing, b everything.
        ({"sees": ("a",)}, {}, [[0, 0, 0], (SEPARATION + ALIGNMENT + COHESION)[1]]),
        # b separates from a, and neither aligns nor coheres with it; a only aligns with b.
        ({"separates": (), "coheres": ()}, {"aligns": (), "coheres": ()}, [ALIGNMENT[0], SEPARATION[1]]),
        # a coheres only (no separation, no alignment); b sees only its own kind.
        ({"separates": (), "aligns": ()}, {"sees": ("b",)}, [COHESION[0], [0, 0, 0]]),
    ],
)
def test_the_interaction_matrix_on_two_boids(engine, a, b, expected):
    got = acceleration(two(engine, a, b))
    np.testing.assert_allclose(
        got, np.broadcast_to(np.asarray(expected, float).reshape(-1, 3), (2, 3)), atol=1e-12
    )


def test_each_species_has_its_own_weights(engine):
    got = acceleration(two(engine, {"cohesion": 3.0, "alignment": 0.0, "separation": 0.0},
                           {"alignment": 2.0, "cohesion": 0.0, "separation": 0.5}))  # fmt: skip
    np.testing.assert_allclose(got[0], 3.0 * COHESION[0], atol=1e-12)
    np.testing.assert_allclose(got[1], 2.0 * ALIGNMENT[1] + 0.5 * SEPARATION[1], atol=1e-12)


def test_each_species_has_its_own_view_and_field_of_view(engine):
    # The partner 1 away: a sees within 0.5 only; b's 60-degree cone along +x holds boid 0 (at -x)? No:
    # it looks along +x and boid 0 lies behind, so b sees nothing either.
    got = acceleration(two(engine, {"view_distance": 0.5, "separation_distance": 0.5}, {"fov": 60.0}))
    np.testing.assert_allclose(got, 0.0, atol=1e-12)
    # Widen b's cone to 360: it sees a again.
    got = acceleration(two(engine, {"view_distance": 0.5, "separation_distance": 0.5}, {"fov": 360.0}))
    np.testing.assert_allclose(got[1], (SEPARATION + ALIGNMENT + COHESION)[1], atol=1e-12)


@pytest.mark.slow
def test_each_species_has_its_own_speeds_and_turn_rate(engine):
    species = [Species("slow", 1, min_speed=1.0, max_speed=1.0, max_turn_rate=30.0),
               Species("fast", 1, min_speed=5.0, max_speed=5.0)]  # fmt: skip
    params = Params(species=species, arena_shape="none", max_turn_rate=math.inf)
    flock = hand_flock(params, [[0, 0, 0], [100.0, 0, 0]], [[0, 0, 3.0], [0, 3.0, 0]], engine)
    flock.velocities[0] = [3.0, 0, 0]  # wants to turn 90 degrees: only 30 deg/s * dt happen
    flock.step(1)
    np.testing.assert_allclose(np.linalg.norm(flock.velocities, axis=1), [1.0, 5.0], atol=1e-12)
    turned = math.degrees(math.acos(flock.boids[0].forward @ np.array([0, 0, 1.0])))
    assert turned == pytest.approx(30.0 * params.dt, abs=1e-9)


def test_species_are_consecutive_ranges_of_boids():
    params = Params(species=[Species("a", 3), Species("b", 0), Species("c", 2)])
    assert params.count == 5
    np.testing.assert_array_equal(params.species_of_boids, [0, 0, 0, 2, 2])
    flock = Flock(params, seed=1)
    np.testing.assert_array_equal(flock.species, [0, 0, 0, 2, 2])
    assert flock.boids[4].species == 2
    with pytest.raises(ValueError, match="4 boids given, but the species hold 5"):
        Flock(params, positions=np.zeros((4, 3)))


def test_a_species_starts_within_its_own_speeds():
    params = Params(
        species=[
            Species("a", 300, min_speed=1.0, max_speed=2.0),
            Species("b", 300, min_speed=7.0, max_speed=9.0),
        ]
    )
    speeds = np.linalg.norm(Flock(params, seed=0).velocities, axis=1)
    assert 1.0 <= speeds[:300].min() and speeds[:300].max() <= 2.0
    assert 7.0 <= speeds[300:].min() and speeds[300:].max() <= 9.0


def test_boid_neighbours_respect_the_species_it_sees():
    params = Params(species=[Species("a", 2, sees=("a",)), Species("b", 2)], fov=360.0)
    flock = Flock(params, positions=[[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    assert [b.index for b in flock.boids[0].neighbours()] == [1]
    assert [b.index for b in flock.boids[2].neighbours()] == [0, 1, 3]


SPECIES = [
    Species("starlings", 20),
    Species("hawks", 10, separation=60.0, alignment=1.0, max_speed=8.0, view_distance=4.0, fov=200.0,
            max_turn_rate=90.0, sees=("starlings", "hawks"), aligns=("hawks",), coheres=("starlings",)),
]  # fmt: skip
AGREEMENT = {
    "two species": Params(arena_radius=4.8, species=SPECIES),
    "two species, topological, periodic": Params(arena_radius=5.5, species=SPECIES, neighbours=5,
                                                 arena_shape="periodic"),
    "three species, sequential, blind to one": Params(arena_radius=4.8, update="sequential", species=[
        Species("a", 10), Species("b", 10, sees=("b",)), Species("c", 10, cohesion=3.0, separates=("a",))]),
    "two species, per rule, chained": Params(arena_radius=4.8, update="per_rule", combine="chain",
                                             species=SPECIES),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", list(AGREEMENT))
def test_fast_equals_reference_with_species(name):
    params = AGREEMENT[name]
    fast, ref = Flock(params, seed=5), Flock(params, seed=5, engine="reference")
    fast.step(100)
    ref.step(100)
    np.testing.assert_allclose(fast.positions, ref.positions, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.velocities, ref.velocities, rtol=0, atol=1e-9)


def test_two_flocks_that_ignore_each_other_pass_through_each_other():
    # Two species that see only their own kind, flying head on: they cross without turning.
    species = [Species("east", 30, sees=("east",)), Species("west", 30, sees=("west",))]
    rng = np.random.default_rng(0)
    p = np.concatenate(
        [rng.normal(size=(30, 3)) * 1.5 + [-15, 0, 0], rng.normal(size=(30, 3)) * 1.5 + [15, 0, 0]]
    )
    v = np.concatenate([np.tile([4.0, 0, 0], (30, 1)), np.tile([-4.0, 0, 0], (30, 1))])
    params = Params(species=species, arena_shape="none", separation=0.0, cohesion=0.0)
    flock = Flock(params, positions=p, velocities=v)
    flock.step(450)  # 7.5 s: 30 units each way
    np.testing.assert_allclose(flock.velocities, v, atol=1e-9)
    assert flock.positions[:30, 0].mean() > 10 and flock.positions[30:, 0].mean() < -10


def test_species_in_a_scene_file_with_their_look():
    scene = parse_scene("""
        [[species]]
        name = "starlings"
        count = 50
        color = "#3080ff"
        [[species]]
        name = "hawks"
        count = 2
        max_speed = 9.0
        sees = ["starlings"]
        aligns = []
    """)
    assert scene.params.count == 52 and scene.params.species[1].max_speed == 9.0
    assert scene.params.interacts(1, 0) == (True, True, False, True)
    assert scene.params.interacts(1, 1) == (False, False, False, False)
    assert [s.color for s in scene.view.species] == ["#3080ff", None]
    again = parse_scene(scene.to_toml())
    assert again == scene and again.view.species == scene.view.species
    assert scene.with_overrides(["perception.fov=200"]).view.species == scene.view.species


ONE = '[[species]]\nname = "a"\ncount = 2\n'


@pytest.mark.parametrize(
    "text, message",
    [
        (ONE + '[[species]]\nname = "a"\ncount = 1', "species[1].name 'a' is used by another species"),
        (ONE + 'sees = ["b"]', "species[0].sees names 'b', which is no species here"),
        (ONE + 'sees = []\naligns = ["a"]', "species[0].aligns names 'a', which it does not see"),
        (ONE + "fov = 400", "species[0].fov must be in (0, 360]"),
        (ONE + "view_distance = 1", "species[0].separation_distance must be in (0, view_distance]"),
        (ONE + 'color = "red"', 'species[0].color must be a colour like "#3080ff"'),
        (ONE + "speed = 3", "species[0].speed: unknown key"),
        (ONE + 'mesh = "brid"', "species[0].mesh must be one of 'dart', 'cone', 'bird' (got 'brid')"),
        (ONE + "mesh = 3", "species[0].mesh must be one of 'dart', 'cone', 'bird' (got 3)"),
        (ONE + "[flock]\ncount = 3", "flock.count is 3 but the [[species]] tables hold 2"),
        ('model = "couzin"\n' + ONE, "species belong to the boids model"),
    ],
)
def test_bad_species_tables_are_one_line_naming_the_key(text, message):
    with pytest.raises(SceneError) as caught:
        parse_scene(text, source="x.toml")
    assert any(message in p for p in caught.value.problems), caught.value.problems


def test_a_species_may_carry_its_own_mesh_and_it_is_written_back():
    scene = parse_scene(ONE + 'mesh = "bird"\n[[species]]\nname = "b"\ncount = 1\n[view]\nmesh = "cone"\n')
    assert [look.mesh for look in scene.view.species] == ["bird", None]
    assert scene.view.mesh == "cone" and scene.params.species[0] == Species("a", 2)  # a look, no parameter
    again = parse_scene(scene.to_toml())
    assert again == scene and again.view.species == scene.view.species
    assert scene.with_overrides(["view.mesh='dart'"]).view.species == scene.view.species


def test_species_colours_take_each_table_s_colour_or_the_palette_s():
    from flock3d.look.colors import SPECIES_PALETTE, species_colors

    rgba = species_colors(np.array([0, 0, 1, 2]), ("#ff0000", None))
    np.testing.assert_allclose(rgba[:2], [[1.0, 0.0, 0.0, 1.0]] * 2)
    np.testing.assert_allclose(rgba[2, :3], SPECIES_PALETTE[1], atol=1e-6)
    np.testing.assert_allclose(rgba[3, :3], SPECIES_PALETTE[2], atol=1e-6)


def test_metrics_per_species():
    rng = np.random.default_rng(0)
    positions = rng.uniform(-5, 5, (40, 3))
    velocities = np.repeat([[1.0, 0, 0], [-1.0, 0, 0]], 20, axis=0)
    kinds = np.repeat([0, 1], 20)
    each = metrics.species_summary(positions, velocities, kinds, 3.0)
    assert [row["polarization"] for row in each] == pytest.approx([1.0, 1.0])
    assert metrics.summary(positions, velocities, 3.0)["polarization"] == pytest.approx(0.0, abs=1e-12)
    assert each[0] == metrics.summary(positions[:20], velocities[:20], 3.0)
