"""Worlds that look like places: objects in their colours, a sky with its sun and the light and
shadows it gives, a quiet ground grid, guides that can be hidden, terrain shaded by height and
slope without sawtooth rims, and a cave drawn from inside. Pixels of small offscreen renders
(EGL, all in one process: looks_probe.py), the scene keys and the geometry behind them."""

import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from helpers import once_per_run

from flock3d.core.objects import Object
from flock3d.scene import SceneError, resolve_scene

PROBE = pathlib.Path(__file__).with_name("looks_probe.py")


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> dict:
    # The checkout's flock3d first: the probe runs as a script, whose own folder is on its path.
    path = os.pathsep.join([str(PROBE.parents[1]), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}

    def make(out: pathlib.Path) -> None:
        run = subprocess.run(
            [sys.executable, str(PROBE), str(out)], capture_output=True, text=True, timeout=300, env=env
        )
        if run.returncode != 0 and "needs EGL" in run.stderr:
            pytest.skip("no EGL/OpenGL for offscreen rendering here")
        assert run.returncode == 0, run.stderr

    return dict(np.load(once_per_run(tmp_path_factory, "looks.npz", make)))


def hue_saturation(rgb) -> tuple[np.ndarray, np.ndarray]:
    """Hue (degrees) and saturation (max - min over max) of sRGB pixels (..., 3) in [0, 255]."""
    c = np.asarray(rgb, np.float64) / 255.0
    r, g, b = c[..., 0], c[..., 1], c[..., 2]
    hue = np.degrees(np.arctan2(np.sqrt(3.0) * (g - b), 2.0 * r - g - b)) % 360.0
    top = c.max(axis=-1)
    return hue, (top - c.min(axis=-1)) / np.maximum(top, 1e-9)


def window(image: np.ndarray, point, half: int = 2) -> np.ndarray:
    x, y = (int(round(v)) for v in point)
    return image[y - half : y + half + 1, x - half : x + half + 1].reshape(-1, 3)


def hue_distance(a, b) -> np.ndarray:
    return np.abs((np.asarray(a) - b + 180.0) % 360.0 - 180.0)


def luminance(rgb) -> np.ndarray:
    return np.asarray(rgb, np.float64) @ (0.2126, 0.7152, 0.0722) / 255.0


@pytest.mark.slow
@pytest.mark.gui
def test_objects_are_drawn_in_their_own_colours(images):
    image, tops = images["colors.image"], images["colors.tops"]
    for (x, y), color in zip(tops, ((208, 32, 32), (32, 176, 48), (32, 64, 208)), strict=True):
        expected = hue_saturation(color)[0]  # the boxes' own colours' hues
        hue, saturation = hue_saturation(window(image, (x, y)))
        assert saturation.min() > 0.5, (expected, saturation)
        assert hue_distance(hue, expected).max() < 20.0, (expected, hue)


@pytest.mark.gui
@pytest.mark.parametrize("shape", ["box", "sphere", "cylinder", "capsule", "torus"])
def test_a_primitive_drawn_without_its_back_faces_looks_the_same(images, shape):
    # The primitives are wound outward, so an outside camera sees none of their back faces:
    # culling them (software OpenGL's forest frame: 48 -> 38 ms) changes no pixel of the
    # object. A primitive wound inward would lose every face it shows.
    held, culled, whole = (images[f"culled.{shape}_{name}"] for name in ("held", "culled", "whole"))
    assert held[0] > 0 and held[1] == 0, held  # all its triangles in the culling visual
    differing = np.abs(culled.astype(int) - whole.astype(int)).max(axis=2) > 24
    assert np.count_nonzero(differing) <= 12, np.count_nonzero(differing)  # silhouette ties at most
    assert np.count_nonzero(hue_saturation(culled)[1] > 0.35) > 200  # the orange object is there


def test_only_the_primitives_drawn_here_are_marked_closed_and_culled():
    from flock3d.look.world import object_mesh

    rock = str(pathlib.Path(__file__).parents[1] / "scenes" / "worlds" / "assets" / "rock.obj")
    objects = (Object("box", size=(1.0, 2.0, 3.0)), Object("sphere", radius=1.0),
               Object("torus", radius=2.0, tube=0.5), Object("plane"), Object("mesh", file=rock))  # fmt: skip
    closed = {o.shape: object_mesh(o, 50.0).closed for o in objects}
    assert closed == {"box": True, "sphere": True, "torus": True, "plane": False, "mesh": False}


def test_each_sky_has_its_colours_and_its_sun_where_its_light_comes_from(images):
    skies = ("day", "dusk", "night")
    top = {name: images[f"skies.{name}"][2:10].reshape(-1, 3).mean(axis=0) for name in skies}
    assert luminance(top["day"]) > 3 * luminance(top["dusk"]) > 3 * luminance(top["night"])
    assert hue_distance(hue_saturation(top["day"])[0], 215.0) < 20.0  # a blue sky
    for name in skies:
        image, (x, y) = images[f"skies.{name}"], images[f"skies.{name}_sun"]
        h, w, _ = image.shape
        assert 10 < x < w - 10 and 10 < y < h - 10, (name, x, y)
        disc = luminance(window(image, (x, y), 1)).mean()
        assert disc > 0.75, (name, disc)  # the disc is drawn where its light comes from...
        far = (x + w / 3) % w, y  # ...and only there
        assert luminance(window(image, far, 1)).mean() < 0.75 * disc, name


@pytest.mark.gui
def test_an_object_casts_its_shadow_away_from_the_sun(images):
    (ax, ay), (sx, sy) = images["shadow.points"]  # a point away from the sun, and one towards it
    with_box, without = images["shadow.with"], images["shadow.without"]
    shade = luminance(window(with_box, (ax, ay))).mean() / luminance(window(without, (ax, ay))).mean()
    assert shade < 0.8, shade  # darkened where the box stands between the ground and the sun
    lit = luminance(window(with_box, (sx, sy))).mean() / luminance(window(without, (sx, sy))).mean()
    assert lit == pytest.approx(1.0, abs=0.02)  # and not on the side the sun comes from


@pytest.mark.gui
def test_guides_are_drawn_only_when_shown(images):
    def guide_pixels(image):  # green (the path) or yellow (the attractor), and bright: not the sky
        hue, saturation = hue_saturation(image)
        return ((hue > 40.0) & (hue < 160.0) & (saturation > 0.3) & (luminance(image) > 0.2)).sum()

    assert guide_pixels(images["guides.shown"]) > 100
    assert guide_pixels(images["guides.hidden"]) == 0


@pytest.mark.gui
def test_the_ground_grid_takes_its_opacity(images):
    none, full = images["grid.none"], images["grid.full"]
    h = none.shape[0]
    rows = slice(int(0.6 * h), h)  # the near ground
    assert np.abs(np.diff(luminance(none[rows]), axis=1)).max() < 0.02  # plain ground
    assert np.abs(np.diff(luminance(full[rows]), axis=1)).max() > 0.08  # lines across it


@pytest.mark.gui
def test_the_ground_far_below_a_small_arena_is_not_lost_in_the_fog(images):
    # The fog ended 4 diameters past the arena's far side: ground 60 below a sphere of radius 6
    # was all sky. It now reaches the ground below the world, and the ground the horizon.
    image, (x, y) = images["high.image"], images["high.below"][0]
    h, w = image.shape[:2]
    hue, saturation = hue_saturation(image[int(0.75 * h) :])
    assert np.mean((hue_distance(hue, 120.0) < 30.0) & (saturation > 0.25)) > 0.5  # green, not sky
    if 0 <= x < w and 0 <= y < h:
        below_hue, below_saturation = hue_saturation(window(image, (x, y)))
        assert np.all(hue_distance(below_hue, 120.0) < 30.0) and np.all(below_saturation > 0.25)


@pytest.mark.gui
def test_a_cave_is_drawn_from_inside_with_its_stalactite_hanging_from_its_roof(images):
    image = images["cave.image"]
    middle, roof, wall = images["cave.points"]
    hue, saturation = hue_saturation(window(image, middle))
    assert saturation.min() > 0.5 and hue_distance(hue, 0.0).max() < 20.0  # the stalactite, not the near wall
    for point in (roof, wall):  # the cave's own green above and behind it: its roof and far wall
        hue, saturation = hue_saturation(window(image, point))
        assert saturation.min() > 0.3 and hue_distance(hue, 120.0).max() < 25.0, (point, hue)


# -- scene keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "setting, message",
    [
        ('view.sky="noon"', "view.sky must be one of 'day', 'dusk', 'night' (got 'noon')"),
        ("view.ground_grid=1.5", "view.ground_grid must be in [0, 1] (got 1.5)"),
        ("view.show_guides=1", "view.show_guides must be true or false (got 1)"),
    ],
)
def test_bad_look_keys_are_refused_in_one_line(setting, message):
    with pytest.raises(SceneError) as error:
        resolve_scene("default", overrides=[setting])
    assert len(error.value.problems) == 1 and error.value.problems[0].endswith(message)


def test_the_worlds_ship_with_daylight_and_no_guides_and_the_default_keeps_its_dusk():
    root = pathlib.Path(__file__).resolve().parents[1] / "scenes"
    for path in sorted((root / "worlds").glob("*.toml")):
        view = resolve_scene(str(path)).view
        assert (view.sky, view.show_guides, view.show_arena) == ("day", False, False), path.name
    assert resolve_scene(str(root / "default.toml")).view.sky == "dusk"


# -- the geometry behind the look --------------------------------------------------------------


def test_a_cliff_across_the_grid_is_drawn_without_a_sawtooth():
    from flock3d.look.world import _grid

    n = 12
    i, k = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    heights = np.where(i + k > n, 5.0, 0.0)  # a cliff running diagonally across the grid's cells
    mesh = _grid(np.arange(n, dtype=float), np.arange(n, dtype=float), heights)
    v = mesh.vertices.astype(float)[mesh.faces.astype(int)]
    normals = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    # Two flats and one straight cliff face between them: each cell is split along the cliff,
    # not across it (which would draw teeth, triangles leaning two ways along the rim).
    assert len(np.unique(np.round(normals, 6) + 0.0, axis=0)) == 2  # the flats share (0, 1, 0)


def test_terrain_is_rock_on_its_slopes_and_its_own_colour_on_the_flat():
    from flock3d.look.world import GROUND_FILL, _grid, ground_colors

    x = np.linspace(0.0, 40.0, 41)
    heights = np.clip(2.0 * (x - 15.0), 0.0, 10.0)[:, None] * np.ones((1, 5))  # flat, a 63-degree slope, flat
    mesh = _grid(x, np.arange(5.0), heights)
    base = np.array([0.3, 0.5, 0.2])
    colors = ground_colors(mesh, base)
    y, ny = mesh.vertices[:, 1], mesh.normals[:, 1]
    low, slope, high = (y == 0) & (ny > 0.99), ny < 0.5, (y == 10) & (ny > 0.99)
    assert low.sum() and slope.sum() and high.sum()
    assert np.allclose(colors[low] / base, colors[low][0] / base)  # the base's own hue, darkened
    assert colors[high].mean() > colors[low].mean()  # lighter high up
    saturation = lambda c: (c.max(axis=1) - c.min(axis=1)) / c.max(axis=1)  # noqa: E731
    assert saturation(colors[slope]).max() < 0.75 * saturation(colors[low]).min()  # greyer rock
    default = ground_colors(mesh, GROUND_FILL)  # no colour of its own: snow on top
    assert default[high].min() > 0.85


def test_what_reaches_out_through_a_cave_roof_ends_at_it():
    from flock3d.look.world import Frames, object_mesh, pull_inside

    cave = Object("sphere", radius=9.0, role="arena")
    mesh = object_mesh(cave, 0.0)
    origins, rotations = Frames([cave]).at(0.0)
    walls = (origins[0] + mesh.vertices.astype(float) @ rotations[0].T)[mesh.faces.astype(int)]
    points = np.array([[0.3, 12.0, 0.2], [1.0, 5.0, 0.0], [0.5, 9.5, 0.5], [20.0, 0.0, 0.0]])
    pulled = pull_inside(points, walls)
    assert np.linalg.norm(pulled[0]) == pytest.approx(9.0, abs=0.15)  # onto the roof over it
    assert pulled[2, 1] == pytest.approx(math.sqrt(81.0 - 0.5), abs=0.15)
    np.testing.assert_array_equal(pulled[[0, 2]][:, [0, 2]], points[[0, 2]][:, [0, 2]])  # straight down
    np.testing.assert_array_equal(pulled[[1, 3]], points[[1, 3]])  # inside, or beside it: kept


def test_the_cut_faces_the_camera_and_spares_the_far_half():
    from flock3d.viewer.scenery import cut_plane

    *normal, offset = cut_plane((0.0, 0.0, 0.0), (10.0, 5.0, 4.0), eye=(100.0, 30.0, 0.0), up=(0.0, 1.0, 0.0))
    np.testing.assert_allclose(normal, (1.0, 0.0, 0.0))
    assert offset == pytest.approx(5.0)  # half way from the middle to the near side
    above = cut_plane((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), eye=(0.0, 9.0, 0.0), up=(0.0, 1.0, 0.0))
    assert above == (0.0, 0.0, 0.0, 1.0)  # seen from straight above: nothing cut
