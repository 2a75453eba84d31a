"""The world's objects as the viewer draws them, without a window: their triangles lie on the
shapes the engines avoid, the shadows fall on the ground the engines fly over, rays find them."""

import math

import numpy as np
import pytest

from flock3d import Params
from flock3d.core.objects import Motion, Object, object_frame, object_sdf, pack_objects
from flock3d.look.world import Frames, ground_under, grounds_of, object_mesh, ray_distances
from flock3d.viewer.renderer import world_extent
from flock3d.viewer.scenery import grid_spacing

SHAPES = [
    Object("box", size=(2.0, 4.0, 6.0), scale=(1.0, 0.5, 2.0)),
    Object("sphere", radius=3.0, scale=1.5),
    Object("cylinder", radius=1.0, height=5.0, scale=(2.0, 1.0, 2.0)),
    Object("capsule", radius=1.0, height=6.0),
    Object("torus", radius=4.0, tube=1.0),
]
VOLUMES = [4 * 1 * 12, 4 / 3 * math.pi * 4.5**3, math.pi * 4 * 5, math.pi * (4 + 4 / 3), 2 * math.pi**2 * 4]


def placed(o: Object) -> Object:
    return o._replace(position=(3.0, -2.0, 1.0), rotation=(30.0, 20.0, -10.0))


def world_vertices(o: Object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mesh = object_mesh(o, 50.0)
    origins, rotations = Frames([o]).at(0.0)
    v = origins[0] + mesh.vertices.astype(float) @ rotations[0].T
    return v, mesh.normals.astype(float) @ rotations[0].T, mesh.faces.astype(int)


@pytest.mark.parametrize("shape, volume", list(zip(SHAPES, VOLUMES, strict=True)), ids=lambda x: str(x)[:20])
def test_a_primitive_is_drawn_on_the_surface_the_engines_avoid(shape, volume):
    o = placed(shape)
    v, n, faces = world_vertices(o)
    data, offsets = pack_objects([o])
    # Every vertex on the surface (to float32's precision)...
    assert np.abs([object_sdf(data, offsets[0], 0.0, *p)[0] for p in v]).max() < 1e-5
    # ...and each triangle's normals those of the surface under it: the distance's gradient at
    # its centroid (inside a face of a box, off the edges where the gradient picks a side).
    area = np.linalg.norm(np.cross(v[faces[:, 1]] - v[faces[:, 0]], v[faces[:, 2]] - v[faces[:, 0]]), axis=1)
    kept = faces[area > 1e-9]  # the revolved shapes' poles hold triangles of no area
    gradients = np.array([object_sdf(data, offsets[0], 0.0, *p)[1:] for p in v[kept].mean(axis=1)])
    normals = n[kept].mean(axis=1)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    assert np.einsum("ij,ij->i", gradients, normals).min() > 0.99
    # Wound outwards: the enclosed volume is positive, and close to the shape's.
    corners = v[faces] - o.position
    enclosed = np.einsum("ij,ij->i", corners[:, 0], np.cross(corners[:, 1], corners[:, 2])).sum() / 6.0
    assert enclosed == pytest.approx(volume, rel=0.02)


def test_a_heightfield_is_drawn_through_its_nodes_and_shadows_fall_on_it():
    ground = Object("heightfield", size=(40.0, 30.0), height=6.0, seed=4, position=(2.0, -10.0, 1.0),
                    rotation=(25.0, 0.0, 0.0))  # fmt: skip
    data, offsets = pack_objects([ground])
    v, _, _ = world_vertices(ground)
    assert np.abs([object_sdf(data, offsets[0], 0.0, *p)[0] for p in v[::97]]).max() < 1e-5  # float32
    rng = np.random.default_rng(3)
    points = np.c_[rng.uniform(-15, 15, 200), rng.uniform(-5, 20, 200), rng.uniform(-12, 12, 200)]
    origins, rotations = Frames([ground]).at(0.0)
    feet, normals, heights = ground_under(points, grounds_of([ground], 100.0), origins, rotations)
    below = np.isfinite(heights)
    assert below.sum() > 100
    # Each foot lies straight under its point, on the ground (distance 0), whose normal it carries.
    np.testing.assert_allclose(feet[below][:, [0, 2]], points[below][:, [0, 2]], atol=1e-9)
    np.testing.assert_allclose(heights[below], points[below, 1] - feet[below, 1], atol=1e-9)
    at_feet = np.array([object_sdf(data, offsets[0], 0.0, *p) for p in feet[below]])
    assert np.abs(at_feet[:, 0]).max() < 1e-9
    np.testing.assert_allclose(at_feet[:, 1:], normals[below], atol=1e-9)
    # A point off its footprint casts none.
    assert not np.isfinite(
        ground_under([[500.0, 0.0, 0.0]], grounds_of([ground], 100.0), origins, rotations)[2][0]
    )


def test_the_nearest_ground_below_takes_the_shadow():
    objects = [Object("plane", position=(0.0, -5.0, 0.0)), Object("plane", position=(0.0, 2.0, 0.0))]
    origins, rotations = Frames(objects).at(0.0)
    feet, normals, heights = ground_under([[1.0, 4.0, 1.0], [1.0, 0.0, 1.0], [1.0, -9.0, 1.0]],
                                          grounds_of(objects, 100.0), origins, rotations)  # fmt: skip
    np.testing.assert_allclose(heights[:2], [2.0, 5.0])
    np.testing.assert_allclose(feet[:2], [[1.0, 2.0, 1.0], [1.0, -5.0, 1.0]])
    assert np.isinf(heights[2]) and np.isnan(feet[2]).all()
    np.testing.assert_allclose(normals[:2], [[0.0, 1.0, 0.0]] * 2)


def test_an_object_sunk_into_the_ground_casts_its_shadow_from_its_foot():
    # A box reaching 3 units under a plane (scaled about its centre, or a trunk on a slope): its
    # faces with a corner underground cast nothing, and the top's shadow lay off its foot.
    from flock3d.look.world import cast_shadow

    objects = [Object("plane"), Object("box", size=(4.0, 10.0, 4.0), position=(0.0, 2.0, 0.0))]
    origins, rotations = Frames(objects).at(0.0)
    mesh = object_mesh(objects[1], 0.0)
    light = np.array([1.0, 1.0, 0.0]) / math.sqrt(2.0)  # the sun 45 degrees up, towards +x
    points, _ = cast_shadow(mesh.vertices @ rotations[1].T + origins[1], mesh.faces,
                            grounds_of(objects, 100.0), origins, rotations, light)  # fmt: skip
    triangles = points.reshape(-1, 3, 3)[:, :, [0, 2]]

    def shaded(x, z):
        a, b, c = triangles[:, 0], triangles[:, 1], triangles[:, 2]

        def cross(u, v):  # the z of the cross product of (N, 2) rows
            return u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]

        side = np.array([cross(q - p, np.array([x, z]) - p) for p, q in ((a, b), (b, c), (c, a))])
        return bool((np.all(side >= -1e-9, axis=0) | np.all(side <= 1e-9, axis=0)).any())

    np.testing.assert_allclose(points[:, 1], 0.0, atol=1e-6)  # on the ground
    assert points[:, 0].min() == pytest.approx(-9.0, abs=1e-4)  # the top, 7 up, casts 7 away
    assert all(shaded(x, z) for x in (-2.5, -5.0, -8.5) for z in (-1.5, 0.0, 1.5))  # from the foot on
    assert not shaded(-9.5, 0.0) and not shaded(2.5, 0.0) and not shaded(-5.0, 2.5)


@pytest.mark.parametrize("shape", ["sphere", "box"])
def test_an_object_standing_on_a_heightfield_casts_its_whole_shadow_onto_it(shape):
    # The walk along the sun's rays ended a little under a slope for some corners, which then had
    # no ground "below" them: every triangle with such a corner was dropped, and a sphere or box
    # standing on the terrain cast no shadow at all (the game-developer walk's render).
    from flock3d.look.world import cast_shadow

    ground = Object("heightfield", size=(80.0, 80.0), height=6.0, seed=11)
    thing = (
        Object(shape, radius=4.0, position=(15.0, 4.0, -15.0))
        if shape == "sphere"
        else Object(shape, size=(6.0, 20.0, 6.0), position=(-15.0, 10.0, 15.0))
    )
    objects = [ground, thing]
    origins, rotations = Frames(objects).at(0.0)
    mesh = object_mesh(thing, 0.0)
    v = mesh.vertices @ rotations[1].T + origins[1]
    light = np.array([0.5, 0.8, 0.3]) / np.linalg.norm([0.5, 0.8, 0.3])
    facing = (
        np.cross(v[mesh.faces[:, 1]] - v[mesh.faces[:, 0]], v[mesh.faces[:, 2]] - v[mesh.faces[:, 0]]) @ light
    )
    points, _ = cast_shadow(v, mesh.faces, grounds_of(objects, 100.0), origins, rotations, light)
    assert len(points) >= 3 * np.count_nonzero(facing > 0.0)  # every face turned to the sun casts
    _, _, heights = ground_under(points + [0.0, 1e-3, 0.0], grounds_of(objects, 100.0), origins, rotations)
    assert np.abs(heights - 1e-3).max() < 1e-6  # each corner on the terrain
    # Split until it follows the terrain: no triangle's middle far under or over the ground (the
    # box's 20 x 6 sides cast triangles 10 to 30 long, whose middles were up to 0.29 off it).
    middles = points.reshape(-1, 3, 3).mean(axis=1)
    _, _, over = ground_under(middles + [0.0, 10.0, 0.0], grounds_of(objects, 100.0), origins, rotations)
    assert np.abs(over - 10.0).max() < 0.1, np.abs(over - 10.0).max()


@pytest.mark.parametrize("roll", [0.0, -30.0])
def test_a_draped_shadow_keeps_its_outline_on_a_tilted_heightfield(roll, monkeypatch):
    # The split corners were lifted along the world's up and dropped along the terrain's: on a
    # field rolled 30 degrees they slid sideways, and a shadow grew to 5 times its area.
    import flock3d.look.world as look
    from flock3d.look.world import cast_shadow

    ground = Object("heightfield", size=(80.0, 80.0), height=6.0, seed=11, rotation=(0.0, 0.0, roll))
    box = Object("box", size=(6.0, 20.0, 6.0), position=(-15.0, 14.0, 15.0))
    objects = [ground, box]
    origins, rotations = Frames(objects).at(0.0)
    mesh = object_mesh(box, 0.0)
    v = mesh.vertices @ rotations[1].T + origins[1]
    light = np.array([0.5, 0.8, 0.3]) / np.linalg.norm([0.5, 0.8, 0.3])
    field_up = rotations[0][:, 1]

    def area(points):  # the triangles' area seen along the terrain's up
        t = points.reshape(-1, 3, 3)
        return float(np.abs(np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]) @ field_up).sum() / 2.0)

    draped, _ = cast_shadow(v, mesh.faces, grounds_of(objects, 100.0), origins, rotations, light)
    monkeypatch.setattr(look, "_draped", lambda p, n, *rest: (p, n))
    flat, _ = cast_shadow(v, mesh.faces, grounds_of(objects, 100.0), origins, rotations, light)
    assert len(draped) > 3 * len(flat) and area(draped) == pytest.approx(area(flat), rel=0.05)


def test_a_moving_object_is_placed_where_the_engines_place_it():
    motion = Motion(((0.0, 0.0, 0.0), (10.0, 0.0, 0.0), (0.0, 0.0, 0.0)), (0.0, 2.0, 4.0), True,
                    ((0.0, 0.0, 0.0), (90.0, 0.0, 0.0), (0.0, 0.0, 0.0)))  # fmt: skip
    objects = [Object("box", size=(1.0, 1.0, 1.0), position=(5.0, 0.0, 0.0)), Object("torus", radius=2.0,
               tube=0.5, motion=motion)]  # fmt: skip
    frames = Frames(objects)
    assert frames.moving == (1,)
    data, offsets = pack_objects(objects)
    for t in (0.0, 1.0, 3.3, 9.0):
        origins, rotations = frames.at(t)
        frame = object_frame(data, offsets[1], t)
        np.testing.assert_allclose(origins[1], frame[:3])
        np.testing.assert_allclose(origins[0], (5.0, 0.0, 0.0))
    origins, rotations = frames.at(1.0)  # halfway to a quarter turn: an eighth of a turn about +y
    np.testing.assert_allclose(origins[1], (5.0, 0.0, 0.0))
    np.testing.assert_allclose(
        rotations[1] @ [0.0, 0.0, 1.0], [math.sqrt(0.5), 0.0, math.sqrt(0.5)], atol=1e-12
    )


def test_a_ray_meets_the_first_triangle_on_its_way():
    box = Object("box", size=(2.0, 2.0, 2.0), position=(0.0, 0.0, 10.0))
    v, _, faces = world_vertices(box)
    s = ray_distances([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], v[faces])
    assert np.isfinite(s).sum() == 4  # two triangles of the near face and two of the far one (shared edges)
    assert np.min(s) == pytest.approx(9.0) and np.max(s[np.isfinite(s)]) == pytest.approx(11.0)
    assert np.isinf(ray_distances([0.0, 0.0, 0.0], [0.0, 0.0, -1.0], v[faces])).all()  # behind the origin
    assert np.isinf(ray_distances([0.0, 5.0, 0.0], [0.0, 0.0, 1.0], v[faces])).all()  # passing above


def test_the_world_is_framed_by_its_arena_object_in_open_space():
    arena = Object("sphere", radius=40.0, role="arena", position=(10.0, 5.0, 0.0))
    centre, radius = world_extent(Params(arena_shape="none", objects=(arena,), init_radius=5.0,
                                         arena_center=(10.0, 5.0, 0.0)))  # fmt: skip
    np.testing.assert_allclose(centre, (10.0, 5.0, 0.0), atol=1e-9)
    assert radius == pytest.approx(40.0, rel=1e-3)
    centre, radius = world_extent(Params(arena_radius=25.0))
    assert radius == 25.0 and np.allclose(centre, 0.0)


@pytest.mark.parametrize("size, spacing", [(30.0, 5.0), (100.0, 20.0), (1.0, 0.2), (2500.0, 500.0)])
def test_the_ground_grid_takes_a_round_spacing_near_a_sixth_of_the_world(size, spacing):
    assert grid_spacing(size) == pytest.approx(spacing)
