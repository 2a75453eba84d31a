"""The HTML export: a page that plays the flock in a browser with no network.

A headless Chromium (Debian's ``chromium``; .ci/run installs it) opens the page from a
``file://`` URL with every host unresolvable, draws it with its software WebGL (SwiftShader)
and either saves a screenshot or dumps the DOM, where the page reports its state, its errors
and (``#probe=K``) the boids it decoded.

The recording is made by hand, not simulated (no numba compile): a block of boids flying
along +x at a known speed over a ground plane, so that where they must appear on screen is
known from the page's own camera.
"""

import json
import math
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from flock3d.core.quaternion import look_rotation
from flock3d.core.state import FlockState
from flock3d.io.export import html
from flock3d.io.export.common import ExportError
from flock3d.io.trajectory import Trajectory, TrajectoryWriter
from flock3d.scene import parse_scene

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs a headless Chromium: apt-get install -y chromium (.ci/run installs it)"
)

SCENE = """
name = "Export test"
[arena]
shape = "box"
center = [0.0, 10.0, 0.0]
size = [60.0, 20.0, 40.0]
[flock]
count = 40
[[objects]]
shape = "plane"
color = "#4a6b32"
[[objects]]
shape = "box"
size = [4.0, 8.0, 4.0]
position = [0.0, 4.0, -14.0]
color = "#8a8aa8"
[[objects]]
shape = "sphere"
radius = 2.0
color = "#4060d0"
motion = { points = [[-24.0, 17.0, -18.0], [24.0, 17.0, -18.0]], times = [0.0, 4.0] }
[view]
mesh = "bird"
boid_size = 1.5
"""
SPEED = 6.0  # world units per second, along +x
START = np.array([-14.0, 12.0, 0.0])  # the block's centre at t = 0
DT, FRAMES = 0.1, 41


def ball_centre(t: float) -> np.ndarray:
    """Where the scene's moving sphere is at time t (its motion: 12 units/s along +x)."""
    return np.array([-24.0 + 12.0 * t, 17.0, -18.0])


WINDOW = (800, 500)
BAR = 60  # pixels at the bottom taken by the page's controls


def block_positions(t: float) -> np.ndarray:
    """(40, 3) the boids at time t: a 5 x 2 x 4 block 1.6 units apart, moving along +x."""
    grid = np.stack(np.meshgrid(np.arange(5), np.arange(2), np.arange(4), indexing="ij"), -1).reshape(-1, 3)
    return START + 1.6 * (grid - grid.mean(axis=0)) + [SPEED * t, 0.0, 0.0]


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("html") / "block.h5"
    scene = parse_scene(SCENE, source="test")
    velocities = np.tile([SPEED, 0.0, 0.0], (40, 1))
    # Turned a little about the heading so that the orientations are not all the identity's.
    orientations = look_rotation(velocities + [0.0, 0.0, 1.5], (0.0, 1.0, 0.0))
    with TrajectoryWriter(path, 40, scene) as writer:
        for k in range(FRAMES):
            writer.append(FlockState(block_positions(k * DT), velocities, orientations, k * DT, k))
    return path


@pytest.fixture(scope="module")
def page(recording) -> Path:
    out = recording.with_suffix(".html")
    done = []
    with Trajectory(recording) as tr:
        html.write(tr, out, done.append)
    assert done[-1] == FRAMES
    return out


def chromium(page: Path, fragment: str, tmp_path: Path, screenshot: Path | None = None) -> str:
    """Open ``page#fragment`` headless with no network; the DOM it dumps, or "" with a screenshot."""
    args = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader",
        "--enable-unsafe-swiftshader", f"--user-data-dir={tmp_path / 'profile'}",
        "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
        "--disable-background-networking", "--no-first-run", "--disable-extensions",
        f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=1500",
    ]  # fmt: skip
    args.append(f"--screenshot={screenshot}" if screenshot else "--dump-dom")
    out = subprocess.run([*args, f"{page.as_uri()}#{fragment}"], capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def page_meta(page: Path) -> dict:
    text = page.read_text()
    found = re.search(r'<script type="application/json" id="flock3d-meta">(.*?)</script>', text, re.S)
    return json.loads(found.group(1).replace("<\\/", "</"))


def project(points: np.ndarray, camera: dict) -> np.ndarray:
    """(N, 2) pixel positions of world ``points`` through the page's starting camera."""
    eye, target, up = (np.asarray(camera[k], np.float64) for k in ("eye", "target", "up"))
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, up)
    right /= np.linalg.norm(right)
    above = np.cross(right, forward)
    d = np.asarray(points, np.float64) - eye
    depth = d @ forward
    half = math.tan(math.radians(camera["fov"]) / 2.0)
    w, h = WINDOW
    x = (d @ right) / (depth * half * w / h)
    y = (d @ above) / (depth * half)
    return np.c_[(x + 1.0) / 2.0 * w, (1.0 - y) / 2.0 * h]


def pixels(png: Path, colour: str) -> np.ndarray:
    """(K, 2) x, y of the pixels drawn in the boids' ``amber`` (lit or shaded: red well above
    blue) or the moving sphere's ``blue``; the sky is blue-black, the ground moss green, the box
    grey-blue and the arena's edges a faint pale blue. The control bar at the bottom is left out."""
    import imageio.v3 as iio

    rgb = iio.imread(png)[: WINDOW[1] - BAR, :, :3].astype(int)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    found = (
        (r > 90) & (r > b + 45) & (r >= g) if colour == "amber" else (b > 120) & (b > r + 60) & (b > g + 40)
    )
    ys, xs = np.nonzero(found)
    return np.c_[xs, ys]


def test_the_page_holds_everything_it_needs(page):
    class Tags(HTMLParser):
        def __init__(self):
            super().__init__()
            self.found = []

        def handle_starttag(self, tag, attrs):
            self.found.append((tag, dict(attrs)))

    tags = Tags()
    tags.feed(page.read_text())
    assert not [a for _, a in tags.found if "src" in a or "href" in a], "the page loads something"
    assert {t for t, _ in tags.found} <= {"html", "head", "meta", "title", "style", "body", "canvas", "div",
                                          "button", "input", "span", "script"}  # fmt: skip
    text = page.read_text()
    assert "Permission is hereby granted" in text  # three.js's MIT licence travels with it
    meta = page_meta(page)
    assert meta["frames"] == FRAMES and meta["boids"] == 40 and len(meta["objects"]) == 3
    assert meta["moving"] == [2] and [o["moving"] for o in meta["objects"]] == [None, None, 0]


@pytest.mark.slow  # a browser start and a software-drawn page: 3-10 s under load
@needs_chromium
def test_the_flock_and_the_moving_objects_are_drawn_where_they_are_at_each_time(page, tmp_path):
    camera = page_meta(page)["camera"]
    centres = {}
    for t in (0.0, 3.0):
        png = tmp_path / f"t{t}.png"
        chromium(page, f"t={t}&paused", tmp_path, screenshot=png)
        ball = pixels(png, "blue")
        assert (
            len(ball) > 50 and np.linalg.norm(ball.mean(axis=0) - project(ball_centre(t)[None], camera)) < 6
        )
        drawn = pixels(png, "amber")
        assert len(drawn) > 150, f"t = {t}: {len(drawn)} boid-coloured pixels"
        expected = project(block_positions(t), camera)
        # Every boid-coloured pixel lies near the block's projection, and its middle near the block's.
        low, high = expected.min(axis=0) - 25, expected.max(axis=0) + 25
        inside = np.all((drawn >= low) & (drawn <= high), axis=1)
        assert inside.mean() > 0.97, (t, drawn.min(axis=0), drawn.max(axis=0), low, high)
        centres[t] = drawn.mean(axis=0)
        assert np.linalg.norm(centres[t] - expected.mean(axis=0)) < 20, (t, centres[t], expected.mean(axis=0))
    moved = np.subtract(*(project(block_positions(t), camera).mean(axis=0) for t in (3.0, 0.0)))
    assert np.linalg.norm(centres[3.0] - centres[0.0] - moved) < 20 and np.linalg.norm(moved) > 60


@pytest.mark.slow  # a browser start and a software-drawn page: 3-10 s under load
@needs_chromium
def test_the_page_decodes_the_recording_within_the_packing_bounds_without_errors(page, recording, tmp_path):
    dom = chromium(page, "t=2.5&paused&probe=40", tmp_path)
    status = re.search(r'<div id="flock3d-status" data-state="(\w+)"[^>]*>(.*?)</div>', dom, re.S)
    assert status and status.group(1) == "ready", status.group(0) if status else dom[-2000:]
    # three.js's warnings too: a material's side given as an undefined name drew the cave's arena
    # from outside, hiding the flock; a shadow type three.js no longer has.
    assert "data-warnings" not in status.group(0), status.group(0)
    probe = json.loads(re.search(r'<div id="flock3d-probe">(.*?)</div>', dom, re.S).group(1))
    with Trajectory(recording) as tr:
        state = tr.frame(probe["frame"])
    assert abs(state.time - 2.5) < DT
    rows = np.array(probe["rows"])
    side = state.positions.max(axis=0) - state.positions.min(axis=0)
    # half a step of the frame's box, plus float32 rounding of the page's arithmetic
    assert np.all(
        np.abs(rows[:, :3] - state.positions) <= side / 131070 + 1e-5 * (1 + np.abs(state.positions))
    )
    q = state.orientations
    q = q * np.sign(np.sum(q * rows[:, 3:], axis=1))[:, None]
    assert np.max(np.abs(rows[:, 3:] - q)) < 2e-3
    angle = 2.0 * np.degrees(np.arccos(np.clip(np.abs(np.sum(rows[:, 3:] * q, axis=1)), 0.0, 1.0)))
    assert angle.max() < 0.25


def test_a_page_over_the_limit_is_refused_in_one_line_before_writing(page, recording, tmp_path, monkeypatch):
    # The frames take about 26 kB of the page, three.js, the player and the world the rest.
    monkeypatch.setattr(html, "MAX_HTML_BYTES", page.stat().st_size - 10_000)
    out = tmp_path / "big.html"
    with Trajectory(recording) as tr, pytest.raises(ExportError) as caught:
        html.write(tr, out, None)
    message = str(caught.value)
    assert "\n" not in message and "record 2 times fewer frames (--every)" in message and ".usd" in message
    assert not out.exists()


def test_a_scene_whose_page_would_be_over_the_limit_is_refused_before_it_runs(tmp_path, capsys):
    # It ran for 15 s (minutes at the README's murmuration) and then named its temporary
    # recording (the artist's walk): the frames and boids are known before the run.
    from flock3d.cli import main

    out = tmp_path / "big.html"
    status = main(["export", "default", "--set", "flock.count=5000", "--steps", "2200", "--every", "1",
                   "--out", str(out)])  # fmt: skip
    captured = capsys.readouterr()
    assert status == 2 and captured.out == "" and captured.err.count("\n") == 1, captured
    assert captured.err.startswith(f"flock3d export: {out}: the page would be about 14")
    assert "(2,201 frames of 5,001 boids)" in captured.err and "record 2 times fewer frames" in captured.err
    assert list(tmp_path.iterdir()) == []


def test_the_size_checked_is_the_page_size_within_a_few_kilobytes(page, recording, tmp_path, monkeypatch):
    size = page.stat().st_size
    with Trajectory(recording) as tr:
        monkeypatch.setattr(html, "MAX_HTML_BYTES", size - 1)  # the estimate never falls short
        with pytest.raises(ExportError):
            html.write(tr, tmp_path / "a.html", None)
        monkeypatch.setattr(html, "MAX_HTML_BYTES", size + 4096)
        html.write(tr, tmp_path / "b.html", None)
    assert (tmp_path / "b.html").stat().st_size == size


def test_a_frame_that_cannot_be_drawn_is_refused(tmp_path):
    path = tmp_path / "blown.h5"
    scene = parse_scene(SCENE, source="test")
    velocities = np.tile([SPEED, 0.0, 0.0], (40, 1))
    orientations = look_rotation(velocities, (0.0, 1.0, 0.0))
    with TrajectoryWriter(path, 40, scene) as writer:
        for k in range(3):
            positions = block_positions(k * DT)
            if k == 2:
                positions[3] = np.nan
            writer.append(FlockState(positions, velocities, orientations, k * DT, k))
    with Trajectory(path) as tr, pytest.raises(ExportError, match="recorded frame 3 of 3 "):
        html.write(tr, tmp_path / "blown.html", None)


def test_the_turns_packing_keeps_every_quaternion_within_its_bound():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(20_000, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    words = html.pack_turns(q)
    # Decoded as the page does (player.js turnOf)
    big = words >> 30
    scale = math.sqrt(0.5) / 511.5
    out = np.zeros_like(q)
    for k, shift in enumerate((20, 10, 0)):
        cols = np.array([[c for c in range(4) if c != b][k] for b in big])
        out[np.arange(len(q)), cols] = (((words >> shift) & 1023).astype(float) - 511.5) * scale
    out[np.arange(len(q)), big] = np.sqrt(np.maximum(0.0, 1.0 - np.sum(out**2, axis=1)))
    q = q * np.sign(np.sum(q * out, axis=1))[:, None]
    assert np.max(np.abs(out - q)) < 2e-3
    angle = 2.0 * np.degrees(np.arccos(np.clip(np.abs(np.sum(out * q, axis=1)), 0.0, 1.0)))
    assert angle.max() < 0.25


def test_a_recording_from_another_program_plays_with_the_default_look(tmp_path):
    import h5py

    path = tmp_path / "fish.h5"
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:  # H5MD with no flock3d scene: positions and velocities only
        for name in ("position", "velocity"):
            element = f.create_group(f"particles/fish/{name}")
            element["value"] = rng.normal(size=(5, 30, 3))
            element["step"], element["time"] = np.arange(5), 0.5 * np.arange(5)
    with Trajectory(path) as tr:
        html.write(tr, tmp_path / "fish.html", None)
    meta = page_meta(tmp_path / "fish.html")
    assert meta["boids"] == 30 and meta["objects"] == [] and meta["arena"] is None
    assert [len(g["rows"]) for g in meta["groups"]] == [30]


TERRAIN = SCENE.replace(
    'shape = "plane"\ncolor = "#4a6b32"',
    'shape = "heightfield"\nsize = [60.0, 40.0]\nheight = 14.0\nseed = 3',
)


@pytest.mark.slow  # a browser start and a software-drawn page: 3-10 s under load
@needs_chromium
def test_a_ground_without_a_colour_is_grass_rock_and_snow_as_in_the_viewer(tmp_path):
    # The page drew such a heightfield in one dark olive-grey (the game-developer walk), where the
    # viewer and flock3d render shade it by height and slope.
    import imageio.v3 as iio

    from flock3d.look.world import GROUND_FILL, ground_colors, object_mesh

    path = tmp_path / "terrain.h5"
    scene = parse_scene(TERRAIN, source="test")
    velocities = np.tile([SPEED, 0.0, 0.0], (40, 1))
    with TrajectoryWriter(path, 40, scene) as writer:
        for k in range(3):
            writer.append(
                FlockState(
                    block_positions(k * DT), velocities, look_rotation(velocities, (0, 1, 0)), k * DT, k
                )
            )
    with Trajectory(path) as tr:
        html.write(tr, path.with_suffix(".html"), lambda done: None)
    meta = page_meta(path.with_suffix(".html"))
    ground = meta["objects"][0]
    import base64

    colors = np.frombuffer(base64.b64decode(ground["colors"]), np.uint8).reshape(-1, 3)
    drawn = object_mesh(scene.params.objects[0], html.PLANE_EXTENT * 40.0)
    np.testing.assert_array_equal(colors, np.rint(ground_colors(drawn, GROUND_FILL) * 255.0))
    assert all(o["colors"] is None for o in meta["objects"][1:])  # the box and the ball keep theirs
    png = tmp_path / "terrain.png"
    chromium(path.with_suffix(".html"), "t=0&paused", tmp_path, screenshot=png)
    rgb = iio.imread(png)[60 : WINDOW[1] - BAR, :, :3].astype(int)  # below the title, above the controls
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    grass = (g > r + 20) & (g > b + 20)  # green well above red and blue: 15,652 pixels, 0 before
    snow = (r > 170) & (g > 170) & (b > 170) & (np.abs(r - b) < 40)  # near white: 43 on the peaks, 0 before
    assert grass.sum() > 2000 and snow.sum() > 10, (grass.sum(), snow.sum())
