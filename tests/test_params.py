import dataclasses
import math
import re

import numpy as np
import pytest

from flock3d import Params
from flock3d.core.params import params_problems

SPEC_FIELDS = [
    "arena_radius", "arena_center", "confinement_start", "confinement", "view_distance", "fov",
    "separation_distance", "separation", "alignment", "cohesion", "min_speed", "max_speed",
    "max_turn_rate", "dt", "count", "init_radius",
]  # fmt: skip


def test_spec_fields_come_first_and_the_rest_default_to_the_spec():
    fields = [f.name for f in dataclasses.fields(Params)]
    assert fields[:16] == SPEC_FIELDS
    p = Params()
    assert (p.arena_shape, p.dimensions, p.separation_falloff, p.separation_average) == (
        "sphere",
        3,
        "inverse",
        True,
    )
    assert p.rule_distances == (p.separation_distance, p.view_distance, p.view_distance)
    assert p.rule_fovs == (p.fov, p.fov, p.fov)
    assert (p.attractors, p.path, p.obstacles, p.predator_count, p.wind) == ((), None, (), 0, (0.0, 0.0, 0.0))


def test_defaults_are_valid_and_match_the_spec_defaults():
    p = Params()
    assert params_problems(p) == []
    assert p.arena_center == (0.0, 0.0, 0.0)
    assert p.confinement_start == 0.8
    assert p.dt == pytest.approx(1 / 60)
    assert p.initial_radius == 0.5 * p.arena_radius


def test_frozen_and_replace_validates():
    p = Params()
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.fov = 100  # type: ignore[misc]
    assert p.replace(fov=120).fov == 120
    with pytest.raises(ValueError, match="fov"):
        p.replace(fov=0)


@pytest.mark.parametrize(
    "field, value, rule",
    [
        ("arena_radius", 0, "> 0"),
        ("arena_radius", math.inf, "finite"),
        ("confinement_start", 0, r"\(0, 1\]"),
        ("confinement_start", 1.5, r"\(0, 1\]"),
        ("confinement", -1, ">= 0"),
        ("view_distance", 0, "> 0"),
        ("view_distance", math.nan, "> 0"),
        ("fov", 0, r"\(0, 360\]"),
        ("fov", 361, r"\(0, 360\]"),
        ("separation_distance", 0, r"\(0, view_distance\]"),
        ("separation_distance", 6, r"\(0, view_distance\]"),
        ("separation", -0.1, ">= 0"),
        ("alignment", -1, ">= 0"),
        ("cohesion", -1, ">= 0"),
        ("min_speed", -1, ">= 0"),
        ("max_speed", 0, "> 0"),
        ("min_speed", 7, "<= max_speed"),
        ("max_turn_rate", 0, "> 0"),
        ("max_turn_rate", -1, "> 0"),
        ("dt", 0, "> 0"),
        ("dt", math.inf, "finite"),
        ("count", -1, "from 0 to 100,000,000"),
        ("count", 10**13, "from 0 to 100,000,000"),
        ("count", 2.5, "whole number"),
        ("count", True, "whole number"),
        ("arena_shape", "cube", "one of 'sphere', 'box', 'periodic', 'wrap', 'none'"),
        ("dimensions", 4, "2 or 3"),
        ("separation_falloff", "cubic", "one of 'inverse'"),
        ("alignment_distance", 9.0, r"unset or a finite number in \(0, view_distance\]"),
        ("cohesion_fov", 0.0, r"unset or in \(0, 360\]"),
        ("predator_count", -2, "from 0 to 10,000"),
        ("predator_speed", 0.0, "> 0"),
        ("flee", -1.0, ">= 0"),
        ("avoidance_lookahead", 0.0, "> 0"),
        ("wind", (1.0, math.inf, 0.0), "3 finite numbers"),
        ("init_radius", 0, "> 0"),
        ("arena_center", (0, 0), "3 finite numbers"),
        ("arena_center", (0, 0, math.nan), "3 finite numbers"),
        ("fov", "wide", "number"),
    ],
)
def test_invalid_values_name_the_field_and_the_range(field, value, rule):
    with pytest.raises(ValueError, match=rf"{field} .*{rule}") as info:
        Params(**{field: value})
    message = str(info.value)
    assert "(got " in message
    if not isinstance(value, tuple):  # a tuple is echoed after conversion to floats
        assert repr(value) in message


def test_huge_integers_are_reported_not_crashed_on():
    with pytest.raises(ValueError) as info:
        Params(arena_radius=10**400)
    assert (
        str(info.value) == "arena_radius must be a number > 0 (got 10000000000000000000...(401 characters))"
    )


def test_structured_features_name_the_item_and_its_field():
    from flock3d.core.params import Attractor, Obstacle, WaypointPath

    with pytest.raises(ValueError) as info:
        Params(
            attractors=[Attractor((0, 0, 0), 1.0), Attractor((0, 0, 0), -1.0)],
            obstacles=[Obstacle((0, 0, math.nan), 1.0)],
            path=WaypointPath(((0, 0, 0),), 1.0, 0.0),
        )
    text = str(info.value)
    assert "attractors[1].weight must be >= 0 (got -1.0)" in text
    assert "obstacles[0].center must be 3 finite numbers" in text
    assert "path.points must be a list of at least 2 points" in text and "path.reach must be > 0" in text


def test_a_point_beyond_the_largest_size_is_named_so_not_called_infinite():
    # [[attractors]] position = [1e10, 0, 0] was "must be 3 finite numbers": it is finite.
    from flock3d.core.params import Attractor, Obstacle, WaypointPath

    far = (1e10, 0.0, 0.0)
    for kwargs, name in [(dict(attractors=[Attractor(far, 1.0)]), "attractors[0].position"),
                         (dict(obstacles=[Obstacle(far, 1.0)]), "obstacles[0].center"),
                         (dict(path=WaypointPath(((0, 0, 0), far), 1.0, 1.0)), "path.points"),
                         (dict(arena_center=far), "arena_center")]:  # fmt: skip
        with pytest.raises(
            ValueError, match=f"{re.escape(name)} must be (a list of .*)?3 finite numbers of at most 1e[+]09"
        ):
            Params(**kwargs)


def test_features_from_dicts_and_tuples_become_records_or_are_reported():
    p = Params(
        attractors=[{"position": [1, 2, 3], "weight": 2.0}, ((0, 0, 5),)],
        obstacles=[([9, 9, 9], 1.0)],
        path={"points": [[0, 0, 0], [9, 0, 0]]},
    )
    assert p.attractors[0].position == (1.0, 2.0, 3.0) and p.attractors[1].radius == math.inf
    assert p.obstacles[0].center == (9.0, 9.0, 9.0) and p.path.points[1] == (9.0, 0.0, 0.0)
    # A record without its required field is a ValueError naming the item, not a TypeError.
    for features, message in [
        ({"attractors": [{"weight": 1.0}]}, "attractors[0].position is required (or a .motion)"),
        ({"obstacles": [{"radius": 1.0}]}, "obstacles[0] must have a center and a radius"),
        ({"path": {"weight": 1.0}}, "path must have points"),
        ({"attractors": [{"position": (0, 0, 0), "pull": 1.0}]}, "attractors[0] must have a position"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            Params(**features)


def test_periodic_arenas_need_a_view_distance_below_the_radius():
    with pytest.raises(ValueError, match="view_distance must be < arena_radius 5.0 in a periodic arena"):
        Params(arena_shape="periodic", arena_radius=5.0, view_distance=5.0)
    assert Params(arena_shape="periodic", arena_radius=5.0, view_distance=4.9).arena_shape == "periodic"


def test_all_problems_are_reported_together():
    problems = params_problems({"fov": 0, "dt": -1, "count": -3})
    assert [p.field for p in problems] == ["fov", "dt", "count"]


def test_infinite_view_distance_and_turn_rate_are_allowed():
    p = Params(view_distance=math.inf, max_turn_rate=math.inf)
    assert math.isinf(p.view_distance) and math.isinf(p.max_turn_rate)


def test_sequences_and_numpy_scalars_are_normalised():
    p = Params(arena_center=np.array([1, 2, 3]), count=np.int64(7))
    assert p.arena_center == (1.0, 2.0, 3.0) and type(p.count) is int
    assert hash(p) == hash(Params(arena_center=(1, 2, 3), count=7))


def test_a_periodic_couzin_arena_must_be_wider_than_the_zone_of_attraction():
    from flock3d.core.models.couzin import DEFAULTS as COUZIN_DEFAULTS

    couzin = {**COUZIN_DEFAULTS, "arena_shape": "periodic", "arena_radius": 12.0}
    with pytest.raises(ValueError, match=r"zone_attraction_width must keep r_a .* \(got r_a = 17.0\)"):
        Params(**couzin)  # r_a = 1 + 2 + 14
    assert Params(**couzin, zone_attraction_width=8.9).zone_radii[2] == pytest.approx(11.9)
    # The boids model's view distance does not matter to the Couzin model, and the other way round.
    assert Params(**couzin, zone_attraction_width=8.0, view_distance=50.0).model == "couzin"


@pytest.mark.parametrize(
    "field, value",
    [
        ("attractors", [((0, 0, 0), 1.0)]),
        ("obstacles", [((5, 0, 0), 1.0)]),
        ("path", {"points": [(0, 0, 0), (10, 0, 0)], "reach": 2.0}),
        ("predator_count", 1),
        ("wind", (0.0, 0.5, 0.0)),
        ("wind_gradient", ((0, 1, 0), (0, 0, 0), (0, 0, 0))),
    ],
)
def test_the_couzin_model_refuses_the_boids_world_features(field, value):
    from flock3d.core.models.couzin import DEFAULTS as COUZIN_DEFAULTS

    with pytest.raises(
        ValueError, match=f"^{field} is a feature of the boids model; the couzin model has none"
    ):
        Params(**COUZIN_DEFAULTS, **{field: value})
    assert Params(**{field: value}).model == "boids"
    # Empty values are no feature at all.
    assert Params(**COUZIN_DEFAULTS, wind=[0, 0, 0], attractors=[], predator_count=0).model == "couzin"


def test_a_path_reach_must_not_cover_the_next_waypoint():
    points = [(0, 0, 0), (10, 0, 0), (10, 3, 0)]  # the shortest segment is 3 long
    with pytest.raises(
        ValueError, match=r"path.reach must be < half the shortest segment .*, 1.5 \(got 1.5\)"
    ):
        Params(path={"points": points, "reach": 1.5})
    assert Params(path={"points": points, "reach": 1.49}).path.reach == 1.49
    with pytest.raises(ValueError, match="path.reach must be < half the shortest segment"):
        Params(path={"points": [(0, 0, 0), (0, 0, 0), (5, 0, 0)], "reach": 0.1})  # a repeated point


# -- what the flock as a whole must respect ----------------------------------------------------


def test_used_stages_are_the_stages_a_step_assembles_and_rules_join_them_in_place():
    from flock3d.core.assemble import stage_names
    from flock3d.core.params import STAGES, Attractor, used_stages
    from flock3d.core.user_rules import Force, PairRule

    assert used_stages(Params()) == ["separation", "alignment", "cohesion", "confinement"]
    assert used_stages(Params(arena_shape="periodic", combine="chain")) == [
        "separation", "alignment", "cohesion", "speed",
    ]  # fmt: skip
    everything = Params(
        combine="chain",
        containment=40.0,
        attractors=[Attractor((1, 0, 0))],
        path={"points": [(0, 0, 0), (9, 0, 0)]},
        obstacles=[((5, 5, 5), 1.0)],
        predator_count=1,
        wind=(0, 0, 1),
    )
    assert used_stages(everything) == [
        "separation", "alignment", "cohesion", "confinement", "containment", "attractors", "path",
        "obstacles", "flee", "wind", "speed",
    ]  # fmt: skip
    assert used_stages({"containment": 40.0, "arena_shape": "none"}) == list(STAGES[:3])
    # The step: the built-in rules, yours, the built-in forces, yours, speed last.
    rule = PairRule(lambda p_i, v_i, p_j, v_j: p_i, "keep_apart")
    force = Force(lambda position, velocity, time: position, "tend")
    p = Params(combine="chain", predator_count=1)
    assert stage_names(p, [rule], [force]) == [
        "separation", "alignment", "cohesion", "rule0", "confinement", "flee", "force0", "speed",
    ]  # fmt: skip
    ordered = stage_names(p.replace(rule_order=("tend", "flee")), [rule], [force])
    assert ordered[:3] == ["force0", "flee", "separation"] and len(ordered) == 8


@pytest.mark.parametrize(
    "order, message",
    [
        (("containment",), "rule_order names 'containment', which this flock does not use: it needs "
         "containment > 0 and arena_shape 'sphere' or 'box' (its stages: 'separation', 'alignment', "
         "'cohesion', 'confinement', 'speed')"),
        (("separation", "wind"), "rule_order names 'wind', which this flock does not use: it needs a wind "
         "or wind_gradient other than zero"),
        (("flee",), "rule_order names 'flee', which this flock does not use: it needs predator_count > 0"),
    ],
)  # fmt: skip
def test_rule_order_naming_a_built_in_stage_the_flock_lacks_is_refused(order, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        Params(combine="chain", rule_order=order)
    assert Params(combine="chain", rule_order=order, containment=1.0, wind=(1, 0, 0), predator_count=1)


def test_rule_order_names_that_may_be_your_rules_are_checked_when_the_rules_are_known():
    from flock3d import Flock
    from flock3d.core.params import rule_order_problems

    p = Params(count=20, combine="chain", rule_order=("teleport", "separation"))  # a rule of yours, maybe
    assert params_problems(p) == [] and rule_order_problems(p) == []
    assert rule_order_problems(p, ["teleport"]) == []
    (problem,) = rule_order_problems(p, ["tend"])
    assert str(problem) == (
        "rule_order names 'teleport', which is neither a stage of this flock nor one of your rules "
        "(its stages: 'separation', 'alignment', 'cohesion', 'confinement', 'speed', 'tend')"
    )
    (problem,) = params_problems(p, rule_names=())
    assert "no rules of yours are given" in problem.message
    with pytest.raises(ValueError, match="^rule_order names 'teleport', which is no stage of this flock"):
        Flock(p)  # made without the rule: refused with the same words


def test_rule_order_refuses_a_name_both_a_built_in_stage_and_one_of_your_rules():
    from flock3d.core.params import rule_order_problems

    both = "which is both a built-in stage and one of your rules: rename yours to order it"
    used = Params(count=20, combine="chain", rule_order=("cohesion",))  # a stage this flock runs
    assert rule_order_problems(used) == [] and rule_order_problems(used, ["tend"]) == []
    assert [str(p) for p in rule_order_problems(used, ["cohesion"])] == [
        f"rule_order names 'cohesion', {both}"
    ]
    unused = dict(count=20, combine="chain", rule_order=("wind",))  # a stage this flock lacks
    assert [str(p) for p in params_problems(unused, rule_names=["wind"])] == [
        f"rule_order names 'wind', {both}"
    ]


def test_a_periodic_arena_holds_at_most_a_million_cells_a_side():
    from flock3d.core.models.couzin import DEFAULTS as COUZIN_DEFAULTS
    from flock3d.core.models.vicsek import DEFAULTS as VICSEK_DEFAULTS
    from flock3d.core.params import MAX_CELLS_PER_SIDE, Species

    assert MAX_CELLS_PER_SIDE == 1_000_000
    periodic = {"arena_shape": "periodic", "separation_distance": 1e-3}
    message = (
        "view_distance must be at least 2000 in a periodic arena whose longest side is 2e+09: its grid's "
        "cells are a view distance wide, at most 1,000,000 along a side (got 0.001); raise it or make the "
        "arena smaller"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Params(**periodic, arena_radius=1e9, view_distance=1e-3)
    with pytest.raises(ValueError, match="view_distance must be at least 2000 in a periodic arena"):
        Params(**{**VICSEK_DEFAULTS, "arena_radius": 1e9, "view_distance": 1e-3})
    # The bound is the longest side (of the plane, in 2D) over the view distance; a million passes.
    assert Params(**periodic, arena_radius=500.0, view_distance=1e-3)
    with pytest.raises(ValueError, match="at least 0.002 in a periodic arena whose longest side is 2000"):
        Params(**periodic, arena_size=(2000, 1, 1), view_distance=1e-3)
    assert Params(**periodic, arena_size=(1000, 1000, 5000), dimensions=2, view_distance=1e-3)
    # Species: the grid's cells are as wide as the longest sight of any of them.
    species = [Species("near", 5), Species("far", 5, view_distance=3.0)]
    assert Params(**periodic, arena_radius=1e6, view_distance=1e-3, species=species).count == 10
    with pytest.raises(ValueError, match=r"at least 20 .* \(the longest of the species' is 3\)"):
        Params(**periodic, arena_radius=1e7, view_distance=1e-3, species=species)
    # The Couzin model's cells are r_a wide.
    couzin = {**COUZIN_DEFAULTS, "arena_shape": "periodic", "arena_radius": 1e9}
    with pytest.raises(
        ValueError, match=r"^zone_attraction_width must keep r_a .* at least 2000 .*got r_a = 17\)"
    ):
        Params(**couzin)


def test_species_hold_at_most_as_many_boids_as_a_flock():
    from flock3d.core.params import MAX_BOIDS, Species

    halves = [Species("a", 60_000_000), Species("b", 60_000_000)]
    assert [str(p) for p in params_problems({"species": halves})] == [
        "species hold 120,000,000 boids in all; a flock may have at most 100,000,000"
    ]
    with pytest.raises(ValueError, match="^species hold 120,000,000 boids in all; a flock may have at most"):
        Params(species=halves)  # one problem, not also the count the species make
    assert params_problems({"species": [Species("a", MAX_BOIDS // 2), Species("b", MAX_BOIDS // 2)]}) == []


def test_a_flock_has_at_most_the_stated_number_of_species():
    # The step unrolls the interaction matrix per species, so hundreds of species cannot be
    # compiled (a RecursionError as the step's module loads, or gigabytes of memory; see
    # benchmarks/NOTES.md): refused before compiling, in one problem, not one per species.
    from flock3d.core.params import MAX_SPECIES, Species

    many = [Species(f"s{k}", 1) for k in range(200)]
    assert [str(p) for p in params_problems({"species": many})] == [
        f"species may be at most {MAX_SPECIES} (got 200): the compiled step holds each species' "
        "interactions, and its compile time and memory grow with their number"
    ]
    assert params_problems({"species": many[:MAX_SPECIES]}) == []
    with pytest.raises(ValueError, match=f"^species may be at most {MAX_SPECIES} "):
        Params(species=many[: MAX_SPECIES + 1])
