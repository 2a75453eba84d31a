import dataclasses
import math

import numpy as np
import pytest

from flock3d import Params
from flock3d.core.params import params_problems

SPEC_FIELDS = [
    "arena_radius", "arena_center", "confinement_start", "confinement", "view_distance", "fov",
    "separation_distance", "separation", "alignment", "cohesion", "min_speed", "max_speed",
    "max_turn_rate", "dt", "count", "init_radius",
]  # fmt: skip


def test_fields_are_exactly_the_spec_column():
    assert [f.name for f in dataclasses.fields(Params)] == SPEC_FIELDS


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
        ("count", -1, ">= 0"),
        ("count", 2.5, "whole number"),
        ("count", True, "whole number"),
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
