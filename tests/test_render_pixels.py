"""Offscreen renders (EGL) asserted on pixels: where boids appear, which way they point,
the arena's outline, and that the colour modes differ."""

import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
from helpers import foreground_mask, once_per_run, sky

pytestmark = pytest.mark.gui
PROBE = pathlib.Path(__file__).with_name("offscreen_probe.py")
#: The cases of this module's quick tests, rendered one after another in one process, once a run
#: (:func:`rendered`): a process a case spent most of each test starting (about 1.3 s of 1.5-2.4).
BATCHED = ("positions", "heading", "arena", "periodic_box", "antialias", "lit_box", "shadow", "moving",
           "small", "specks", "gpu_colors", "straddling_specks", "camera_direction")  # fmt: skip


def probe(case: str, tmp_path) -> dict:
    """What ``offscreen_probe.py`` renders for ``case``, in a process of its own."""
    _render(tmp_path, case)
    return dict(np.load(tmp_path / f"{case}.npz"))


def _render(folder: pathlib.Path, *cases: str) -> None:
    """``offscreen_probe.py``'s ``folder/CASE.npz`` of each case, in one process."""
    folder.mkdir(parents=True, exist_ok=True)
    run = subprocess.run([sys.executable, str(PROBE), str(folder), *cases], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    if run.returncode != 0 and "needs EGL" in run.stderr:
        pytest.skip("no EGL/OpenGL for offscreen rendering here")
    assert run.returncode == 0, run.stderr


@pytest.fixture
def rendered(tmp_path_factory):
    """``rendered(case)``: what ``offscreen_probe.py`` rendered for a case of :data:`BATCHED`."""

    def make(path: pathlib.Path) -> None:
        part = path.with_name(path.name + ".part")  # whole, or not there for the next test to make
        shutil.rmtree(part, ignore_errors=True)
        _render(part, *BATCHED)
        part.rename(path)

    folder = once_per_run(tmp_path_factory, "offscreen-probes", make)
    return lambda case: dict(np.load(folder / f"{case}.npz"))


def test_boids_appear_where_their_positions_project(rendered):
    data = rendered("positions")
    lit = foreground_mask(data["image"])
    h, w = lit.shape
    for x, y in data["screen"]:
        assert 0 <= x < w and 0 <= y < h
        window = lit[int(y) - 3 : int(y) + 4, int(x) - 3 : int(x) + 4]
        assert window.any(), f"no boid drawn at ({x:.0f}, {y:.0f})"
    # Everything lit lies near one of the boids.
    ys, xs = np.nonzero(lit)
    nearest = np.min(np.hypot(xs[:, None] - data["screen"][:, 0], ys[:, None] - data["screen"][:, 1]), axis=1)
    assert nearest.max() < 25


def test_a_boid_points_along_its_heading(rendered):
    data = rendered("heading")
    for image, centre, arrow in zip(data["images"], data["screen"], data["arrows"], strict=True):
        ys, xs = np.nonzero(foreground_mask(image))
        assert len(xs) > 50
        pixels = np.c_[xs, ys] - centre
        direction = arrow / np.linalg.norm(arrow)
        along = pixels @ direction
        # The dart's nose reaches forward as far as its tail reaches back, but its body is
        # wide at the tail: most of its area lies behind the centre, the tip ahead of it.
        assert np.mean(along) < -1.0
        assert along.max() > 0.6 * -along.min()
        tip = pixels[np.argmax(along)]
        assert abs(tip @ np.array([-direction[1], direction[0]])) < 3.0  # the tip is on the axis


def test_the_arena_outline_appears(rendered):
    data = rendered("arena")
    lit = foreground_mask(data["image"], tolerance=6)
    ys, xs = np.nonzero(lit)
    assert len(xs) > 500
    radius = np.mean(np.linalg.norm(data["rim"] - data["centre"], axis=1))
    r = np.hypot(xs - data["centre"][0], ys - data["centre"][1])
    assert r.max() < radius * 1.08  # nothing outside the sphere
    assert np.mean(r > 0.9 * radius) > 0.15  # a visible outline near its silhouette


def test_a_periodic_box_is_framed_whole_from_every_side(rendered):
    data = rendered("periodic_box")
    h, w = data["images"].shape[1:3]
    for image, corners in zip(data["images"], data["corners"], strict=True):
        assert np.all((corners > 4) & (corners < [w - 4, h - 4])), corners  # every corner on the picture
        ys, xs = np.nonzero(foreground_mask(image, tolerance=6))
        assert len(xs) > 300  # the box's edges are drawn...
        assert xs.min() > 2 and ys.min() > 2 and xs.max() < w - 3 and ys.max() < h - 3  # ...and none is cut
        assert ys.max() - ys.min() > 0.5 * h  # filling the view, not lost in it


@pytest.mark.slow
def test_colour_modes_give_different_pictures(tmp_path):
    images = probe("colors", tmp_path)
    means = {}
    for mode, image in images.items():
        lit = foreground_mask(image)
        assert lit.sum() > 300
        means[mode] = image[lit].mean(axis=0)
    modes = list(means)
    for i, a in enumerate(modes):
        for b in modes[i + 1 :]:
            assert np.abs(means[a] - means[b]).max() > 8, (a, b, means[a], means[b])
    # Lighting changes brightness, not hue: one hue for uniform, many for random headings.
    assert hues_used(images["uniform"]) == 1
    assert hues_used(images["heading"]) >= 4


def hues_used(image: np.ndarray) -> int:
    """How many of twelve hue sectors hold at least 4% of the clearly coloured pixels
    (bright ones: anti-aliased edges and the depth cue blend boids with the blue sky)."""
    px = image[foreground_mask(image)].astype(float) / 255.0
    px = px[px.max(axis=1) > 0.4]
    r, g, b = px.T
    hue = (np.degrees(np.arctan2(np.sqrt(3.0) * (g - b), 2.0 * r - g - b)) % 360.0) / 360.0
    counts = np.histogram(hue, bins=12, range=(0.0, 1.0))[0] / len(px)
    return int((counts >= 0.04).sum())


def luminance(image: np.ndarray) -> np.ndarray:
    from flock3d.look.colors import relative_luminance

    return relative_luminance(image[..., :3] / 255.0)


def test_edges_are_anti_aliased(rendered):
    images = rendered("antialias")

    def blended_edge_pixels(image):
        """Drawn pixels much darker than the boid's darkest face: partly covered, blended with the sky."""
        lit = foreground_mask(image)
        inside = lit.copy()
        for shift in ((0, 1), (0, -1), (1, 0), (-1, 0)):
            inside &= np.roll(lit, shift, axis=(0, 1))
        lum = luminance(image)
        return int((lit & (lum < 0.6 * np.percentile(lum[inside], 5))).sum())

    on, off = blended_edge_pixels(images["on"]), blended_edge_pixels(images["off"])
    assert on > 40 and on > 5 * off, (on, off)
    # FXAA, the window's anti-aliasing in software OpenGL: the plain picture's edges blended
    # (the silhouette's and the crease between the faces), on the boid's side: the pass leaves
    # the sky's pixels as they are.
    fxaa, plain = images["fxaa"], images["off"]
    assert blended_edge_pixels(fxaa) > 12 and off == 0, (blended_edge_pixels(fxaa), off)
    changed = np.any(fxaa != plain, axis=-1)
    assert changed.sum() > 100 and not (changed & ~foreground_mask(plain)).any()


def test_a_lit_box_shows_its_faces_in_the_shades_the_sun_gives_them(rendered):
    data = rendered("lit_box")
    image, eye, sun = data["image"], data["eye"], data["sun"]
    seen = [(n, (x, y)) for n, c, (x, y) in zip(data["normals"], data["centres"], data["screen"], strict=True)
            if np.dot(n, eye - c) > 0]  # fmt: skip
    assert len(seen) == 3  # the top and two sides
    shades = {}
    for normal, (x, y) in seen:
        window = image[int(y) - 2 : int(y) + 3, int(x) - 2 : int(x) + 3]
        assert foreground_mask(window).all()  # the box is drawn where its faces project
        shades[float(np.dot(normal, sun))] = float(luminance(window).mean())
    # The face turned most to the sun is the brightest, the one turned away the darkest; all differ.
    by_sun = [shades[k] for k in sorted(shades)]
    assert by_sun == sorted(by_sun), shades
    assert np.diff(by_sun).min() > 0.02 and by_sun[-1] > 4 * by_sun[0], shades


def test_a_boid_casts_its_shadow_straight_down_onto_the_ground(rendered):
    data = rendered("shadow")
    (fx, fy), (bx, by), (ax, ay) = data["foot"]  # under the boid, the boid, a point of ground away
    assert by < fy - 20  # the boid is drawn well above its foot

    def darkening(x, y):
        window = (slice(int(y) - 1, int(y) + 2), slice(int(x) - 1, int(x) + 2))
        return float(luminance(data["without"][window]).mean() - luminance(data["with"][window]).mean())

    assert darkening(fx, fy) > 0.2 * luminance(data["without"][int(fy), int(fx)])  # a dark disc at its foot
    assert darkening(ax, ay) == 0.0  # and nowhere else


def test_a_moving_object_is_drawn_where_its_keyframes_put_it(rendered):
    data = rendered("moving")
    for name, (x, y) in zip(("t0", "t2", "t4"), data["centres"], strict=True):
        ys, xs = np.nonzero(foreground_mask(data[name]))
        assert len(xs) > 100
        assert abs(xs.mean() - x) < 2 and abs(ys.mean() - y) < 2, (name, xs.mean(), ys.mean(), x, y)


@pytest.mark.slow
def test_trails_follow_the_path_and_fade(tmp_path):
    data = probe("trails", tmp_path)
    (x0, y), (x1, _) = data["path"]  # where the boid was 2 s ago, and where it is
    row = int(round(y))
    span = slice(int(x0) + 2, int(x1) - 8)  # behind the boid, off its body

    def along_path(image):
        difference = np.abs(image.astype(int) - sky(image)).max(axis=-1)
        return difference[row - 1 : row + 2, span].max(axis=0)

    trail = along_path(data["on"])
    assert np.mean(trail > 6) > 0.9  # drawn all along the last two seconds
    assert trail[-5:].mean() > 3 * trail[:5].mean()  # bright behind the boid, faded further back
    assert not along_path(data["off"]).any()  # and nothing without trails


def wing_angle(image):
    """Angle of the boid's longest axis on screen, degrees anticlockwise from the x axis."""
    ys, xs = np.nonzero(foreground_mask(image))
    axis = np.linalg.eigh(np.cov(np.c_[xs, ys].T))[1][:, 1]
    return (np.degrees(np.arctan2(-axis[1], axis[0])) + 90.0) % 180.0 - 90.0


@pytest.mark.slow
def test_a_turning_boid_banks_into_the_turn(tmp_path):
    data = probe("banking", tmp_path)

    # Seen from behind: level wings lie flat; a turn of 15 units/s^2 rolls the boid by
    # atan(15 / 9.81) = 57 degrees, lowering the wing on the inside of the turn.
    (cx, _), (rx, _) = data["right_on_screen"]
    assert rx > cx  # the boid's right is the picture's right
    assert abs(wing_angle(data["level"])) < 5
    assert wing_angle(data["turning_right"]) == pytest.approx(-57, abs=8)  # right wing down
    assert wing_angle(data["turning_left"]) == pytest.approx(57, abs=8)


@pytest.mark.slow
def test_in_aerodynamic_flight_the_drawn_roll_is_the_orientation_s(tmp_path):
    data = probe("flown_banking", tmp_path)
    # Rolled 40 degrees by the model (its acceleration pushing the other way, which the viewer's
    # own estimate would follow): the right wing lowered by 40 degrees, or the left.
    assert abs(wing_angle(data["level"])) < 5
    assert wing_angle(data["rolled_right"]) == pytest.approx(-40, abs=6)
    assert wing_angle(data["rolled_left"]) == pytest.approx(40, abs=6)


def test_a_far_boid_keeps_a_readable_size(rendered):
    data = rendered("small")
    ys, xs = np.nonzero(foreground_mask(data["image"]))
    # 0.02 units long is a fraction of a pixel here; it is drawn MIN_BOID_PIXELS (7) long.
    assert xs.max() - xs.min() + 1 >= 5
    assert np.hypot(xs.mean() - data["centre"][0], ys.mean() - data["centre"][1]) < 3


@pytest.mark.slow
def test_boids_stand_out_from_the_sky_in_every_colour_mode(tmp_path):
    from flock3d.look.colors import contrast_ratio

    data = probe("contrast", tmp_path)
    for mode in ("heading", "speed", "neighbours", "uniform", "focus"):
        image = data[mode]
        behind = sky(image)[:, 0] / 255.0
        ratios = []
        for x, y in data["screen"]:
            xi, yi = int(round(x)), int(round(y))
            window = image[yi - 2 : yi + 3, xi - 2 : xi + 3].reshape(-1, 3) / 255.0
            ratios.append(contrast_ratio(window[np.argmax(luminance(window * 255.0))], behind[yi]))
        # WCAG contrast ratio of each boid's brightest pixel against the sky behind it: the typical
        # boid at least 4.5:1 (WCAG's level for text), nine in ten at least 3:1, far ones included.
        assert np.median(ratios) >= 4.5, (mode, np.median(ratios))
        assert np.percentile(ratios, 10) >= 3.0, (mode, np.percentile(ratios, 10))


def test_every_map_colour_keeps_its_contrast_against_the_lightest_sky():
    from flock3d.look.colors import MIN_CONTRAST, SKY_BOTTOM, contrast_ratio, map_colors

    assert contrast_ratio(map_colors(), np.asarray(SKY_BOTTOM)).min() >= MIN_CONTRAST


def test_far_boids_drawn_as_specks_look_like_the_bird(rendered):
    data = rendered("specks")
    # Boids a few pixels long are drawn with two triangles instead of the bird's eleven...
    assert data["specks_drawn_as_specks"] == 400 and data["birds_drawn_as_specks"] == 0
    # ...covering about as much of the picture, in the same colour.
    specks, birds = foreground_mask(data["specks"]), foreground_mask(data["birds"])
    assert 0.7 < specks.sum() / birds.sum() < 1.5
    assert np.abs(data["specks"][specks].mean(axis=0) - data["birds"][birds].mean(axis=0)).max() < 20


def test_the_gpu_colours_each_boid_by_heading_as_the_cpu_map_does(rendered):
    data = rendered("gpu_colors")
    drawn = foreground_mask(data["cpu"])
    assert drawn.sum() > 2000  # 300 birds
    assert np.array_equal(foreground_mask(data["gpu"]), drawn)
    assert np.abs(data["gpu"].astype(int) - data["cpu"].astype(int)).max() <= 2


def test_a_flock_straddling_the_speck_length_draws_each_boid_once_in_one_visual(rendered):
    data = rendered("straddling_specks")
    speck = data["speck"]
    assert 0 < speck.sum() < len(speck)  # the row does straddle it
    assert list(data["counts"]) == [speck.sum(), len(speck) - speck.sum()]

    def seen(image):  # each boid's 7 x 7 pixels about where it projects: drawn or not
        mask = foreground_mask(image)
        return np.array([mask[round(y) - 3 : round(y) + 4, round(x) - 3 : round(x) + 4].any()
                         for x, y in data["screen"]])  # fmt: skip

    assert seen(data["image"]).all()
    assert list(seen(data["bodies_only"])) == list(~speck)
    assert list(seen(data["specks_only"])) == list(speck)


@pytest.mark.slow
def test_each_species_is_drawn_with_its_own_mesh(tmp_path):
    data = probe("species_meshes", tmp_path)
    middle = int(round(float(data["middle"])))

    def differing(a: str, b: str, side: str) -> int:
        """Pixels of species a's side (left) or b's (right) that differ between two pictures."""
        half = slice(None, middle - 2) if side == "a" else slice(middle + 2, None)
        return int((np.abs(data[a][:, half].astype(int) - data[b][:, half]).max(axis=-1) > 12).sum())

    for s in ("", "_specks"):  # boids drawn whole, and far boids drawn as specks
        # b's own bird, a the scene's dart: each looks as if the whole flock had its mesh...
        assert differing("mixed" + s, "darts" + s, "a") == 0
        assert differing("mixed" + s, "birds" + s, "b") == 0
        # ...which is another picture than the dart's (the bird beats its wings as a speck too).
        assert differing("darts" + s, "birds" + s, "b") > 100
        # The panel's mesh changes the species without a mesh of their own only.
        assert differing("panel_cone" + s, "cones" + s, "a") == 0
        assert differing("panel_cone" + s, "birds" + s, "b") == 0
    assert differing("darts", "cones", "a") > 100
    # Bodies: the scene's mesh draws a's 8 boids and all 16 alone; as specks, all 16 are one visual.
    assert list(data["mixed_counts"]) == [0, 8] and list(data["darts_counts"]) == [0, 16]
    assert list(data["mixed_specks_counts"]) == [16, 0]


def test_the_one_camera_convention_is_the_turntables(rendered):
    """look.camera.view_direction, which exports and the axis camera use, points where the
    viewer's turntable camera stands: the target and a point towards the eye share a pixel."""
    pixels = rendered("camera_direction")["pixels"]
    np.testing.assert_allclose(pixels[:, 0], pixels[:, 1], atol=0.01)


def test_a_following_camera_keeps_a_spreading_flock_framed_at_the_zoom_chosen():
    """The follow camera of the window, the notebook and renders (FollowDistance): it backs off as
    the flock spreads, closes in as it gathers, and keeps a wheel's zoom while doing so."""
    from flock3d.look.camera import FollowDistance, frame_distance

    follow = FollowDistance()
    d = follow.next(10.0)
    assert d == frame_distance(10.0)  # the first frame frames the flock at once
    d = follow.next(40.0, d)
    assert frame_distance(10.0) < d < frame_distance(40.0)  # then eased, no jump
    for _ in range(80):  # the Couzin swarm spreading: within a few dozen frames it is framed whole
        d = follow.next(40.0, d)
    assert d == pytest.approx(frame_distance(40.0), rel=1e-4)
    d = follow.next(40.0, d / 2.0)  # a wheel turn halves the distance: a zoom of 2 ...
    for _ in range(80):
        d = follow.next(20.0, d)  # ... kept as the flock gathers
    assert d == pytest.approx(0.5 * frame_distance(20.0), rel=1e-4)
