"""Offscreen renders (EGL) asserted on pixels: where boids appear, which way they point,
the arena's outline, and that the colour modes differ."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest
from helpers import foreground_mask

pytestmark = pytest.mark.gui
PROBE = pathlib.Path(__file__).with_name("offscreen_probe.py")


def probe(case: str, tmp_path) -> dict:
    out = tmp_path / f"{case}.npz"
    run = subprocess.run(
        [sys.executable, str(PROBE), case, str(out)], capture_output=True, text=True, timeout=300
    )
    if run.returncode != 0 and "needs EGL" in run.stderr:
        pytest.skip("no EGL/OpenGL for offscreen rendering here")
    assert run.returncode == 0, run.stderr
    return dict(np.load(out))


def test_boids_appear_where_their_positions_project(tmp_path):
    data = probe("positions", tmp_path)
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


def test_a_boid_points_along_its_heading(tmp_path):
    data = probe("heading", tmp_path)
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


def test_the_arena_outline_appears(tmp_path):
    data = probe("arena", tmp_path)
    lit = foreground_mask(data["image"], tolerance=6)
    ys, xs = np.nonzero(lit)
    assert len(xs) > 500
    radius = np.mean(np.linalg.norm(data["rim"] - data["centre"], axis=1))
    r = np.hypot(xs - data["centre"][0], ys - data["centre"][1])
    assert r.max() < radius * 1.08  # nothing outside the sphere
    assert np.mean(r > 0.9 * radius) > 0.15  # a visible outline near its silhouette


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
