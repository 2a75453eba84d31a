"""The shape table (flock3d.core.objects.shapes) agrees with the compiled distances, the drawn
meshes and the edit handles that read it."""

from __future__ import annotations

import numpy as np
import pytest

from flock3d.core import geometry
from flock3d.core.objects import (
    PRIMITIVES,
    SHAPES,
    Object,
    object_problems,
    object_sdf,
    pack_objects,
    shape_of,
)
from flock3d.core.objects.records import scales
from flock3d.look.world import object_mesh


def test_every_shape_has_its_geometry_code_and_the_compiled_convexity_test_agrees():
    assert tuple(geometry.KINDS) == tuple(sorted(SHAPES, key=lambda name: SHAPES[name].kind))
    # The compiled keep-out skips convex arena objects by their code (kind <= CAPSULE).
    assert {name for name, s in SHAPES.items() if s.convex} == {
        name for name, s in SHAPES.items() if s.kind <= geometry.CAPSULE
    }
    assert {name for name, s in SHAPES.items() if not s.closed} == {"plane", "heightfield"}


@pytest.mark.parametrize("name", PRIMITIVES)
def test_a_new_primitive_is_valid_and_drawn_where_its_distance_is_zero(name):
    o = Object(name, **SHAPES[name].upright(4.0))
    assert object_problems(o) == []
    mesh = object_mesh(o, 0.0, 32)
    data, offsets = pack_objects([o])
    sizes, bound = shape_of(o).packed(o, 1.0, 1.0, 1.0)
    d = np.array([object_sdf(data, offsets[0], 0.0, *v)[0] for v in mesh.vertices.astype(np.float64)])
    # Round shapes are drawn as polygons inscribed in the surface: within the chord's sag of it.
    assert np.all(np.abs(d) < 4.0 * (1 - np.cos(np.pi / 32)) + 1e-5)
    assert np.linalg.norm(mesh.vertices, axis=1).max() <= bound + 1e-5


@pytest.mark.parametrize("name", PRIMITIVES)
@pytest.mark.parametrize("up", [(0.0, 1.0, 0.0), (0.0, 0.0, 1.0)])
def test_a_primitive_lifted_by_its_lift_rests_on_the_ground(name, up):
    o = Object(name, **SHAPES[name].upright(4.0))
    up = np.array(up)
    lowest = float((object_mesh(o, 0.0, 64).vertices.astype(np.float64) @ up).min())
    assert shape_of(o).lift(o, up) == pytest.approx(-lowest, abs=1e-5)


def test_a_shape_refuses_its_own_bad_sizes_in_one_line_each():
    assert object_problems(Object("torus", radius=1.0, tube=2.0)) == [
        ".tube must be < its radius 1, or the ring closes up (got 2)"
    ]
    capsule = Object("capsule", radius=2.0, height=3.0)
    assert object_problems(capsule)[0].startswith(".height must be at least")
    assert object_problems(Object("heightfield", size=(10.0, 10.0, 1.0), height=1.0, seed=1)) == [
        ".size must be 2 numbers > 0 and at most 1e+09, like [20, 20] (got (10.0, 10.0, 1.0))"
    ]
    assert object_problems(Object("sphere", radius=1.0, tube=1.0)) == [
        ".tube does not apply to a sphere (a sphere takes radius)"
    ]


@pytest.mark.parametrize(
    ("o", "deepest"),
    [
        (Object("box", size=(3.0, 0.4, 2.0), scale=(1.0, 0.5, 2.0)), (0.0, 0.0, 0.0)),
        (Object("sphere", radius=0.7, scale=3.0), (0.0, 0.0, 0.0)),
        (Object("cylinder", radius=2.0, height=0.5), (0.0, 0.0, 0.0)),
        (Object("cylinder", radius=0.2, height=5.0, scale=(2.0, 1.0, 2.0)), (0.0, 0.0, 0.0)),
        (Object("capsule", radius=0.3, height=4.0), (0.0, 1.0, 0.0)),
        (Object("torus", radius=3.0, tube=0.25, scale=2.0), (6.0, 0.0, 0.0)),
    ],
)
def test_a_primitives_thinnest_part_is_twice_its_deepest_point(o, deepest):
    # The keep-out stops a move at least 64 times this (check warns of thinner walls): the ball
    # inscribed at the deepest point spans the thinnest part of each primitive.
    data, offsets = pack_objects([o])
    depth = -object_sdf(data, offsets[0], 0.0, *deepest)[0]
    assert SHAPES[o.shape].thinnest(o, *scales(o)) == pytest.approx(2.0 * depth, rel=1e-12)


def test_ground_is_never_thin_and_a_meshs_thickness_is_not_known_unmeasured():
    assert SHAPES["plane"].thinnest(Object("plane"), 1.0, 1.0, 1.0) == np.inf
    assert (
        SHAPES["heightfield"].thinnest(Object("heightfield", size=(4, 4), height=1, seed=1), 1, 1, 1)
        == np.inf
    )
    assert np.isnan(SHAPES["mesh"].thinnest(Object("mesh", file="x.stl"), 1.0, 1.0, 1.0))
