"""Renders test images offscreen (EGL) in a process of its own.

vispy binds one backend per process and the window tests use Qt in the pytest
process, so the pixel tests run this script and assert on what it saves:

    python offscreen_probe.py FOLDER CASE...    # FOLDER/CASE.npz for each case
"""

from __future__ import annotations

import itertools
import math
import pathlib
import sys

import numpy as np

from flock3d import Params
from flock3d.core.quaternion import look_rotation
from flock3d.core.state import FlockState
from flock3d.scene import Scene, ViewHints
from flock3d.viewer.offscreen import OffscreenRenderer, downsample

SIZE = (320, 240)


def state_of(positions, headings) -> FlockState:
    p = np.asarray(positions, dtype=float).reshape(-1, 3)
    d = np.asarray(headings, dtype=float).reshape(-1, 3)
    return FlockState(p, d * 4.0, look_rotation(d))


def renderer(
    hints: ViewHints,
    radius: float = 10.0,
    supersample: int = 2,
    species: tuple = (),
    flight: str = "kinematic",
) -> OffscreenRenderer:
    # Azimuth 0, elevation 0 with +y up: the camera looks along the x axis, so the
    # screen shows the y-z plane (z across, y up).
    hints = ViewHints(**{**hints.__dict__, "camera_azimuth": 0.0, "camera_elevation": 0.0})
    scene = Scene(Params(arena_radius=radius, species=species, flight=flight), view=hints)
    return OffscreenRenderer(scene, size=SIZE, camera="fixed", supersample=supersample)


def project(r: OffscreenRenderer, points: np.ndarray) -> np.ndarray:
    return r.project(points)


def case_positions() -> dict:
    rng = np.random.default_rng(1)
    p = rng.uniform(-6, 6, (6, 3))
    p[:, 0] = 0.0
    r = renderer(ViewHints(show_arena=False, mesh="cone", boid_size=1.2, color_mode="uniform"))
    image = r.render(state_of(p, np.tile([0.0, 0.0, 1.0], (6, 1))))
    return {"image": image, "screen": project(r, p)}


def case_heading() -> dict:
    images, screens, arrows = [], [], []
    for heading in ([0, 0, 1], [0, 0, -1], [0, 1, 0], [0, -1, 0], [0, math.sqrt(0.5), math.sqrt(0.5)]):
        r = renderer(ViewHints(show_arena=False, mesh="dart", boid_size=8.0, color_mode="uniform"))
        h = np.asarray(heading, dtype=float)
        images.append(r.render(state_of([0, 0, 0], h)))
        screens.append(project(r, np.zeros((1, 3)))[0])
        arrows.append(project(r, h[None] * 4.0)[0] - screens[-1])
        r.close()
    return {"images": np.array(images), "screen": np.array(screens), "arrows": np.array(arrows)}


def case_arena() -> dict:
    r = renderer(ViewHints(show_arena=True), radius=10.0)
    image = r.render(state_of(np.zeros((0, 3)), np.zeros((0, 3))))
    centre = project(r, np.zeros((1, 3)))[0]
    # The silhouette of the sphere seen from the camera: project points on the rim
    # perpendicular to the view direction (approximately the outline for a distant camera).
    rim = project(r, np.array([[0, 0, 10.0], [0, 10.0, 0], [0, 0, -10.0], [0, -10.0, 0]]))
    return {"image": image, "centre": centre, "rim": rim}


def random_flock(seed: int, half_width: float, n: int = 300) -> FlockState:
    """n boids uniform in a cube, with random headings and speeds from 3 to 6."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(-half_width, half_width, (n, 3))
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return FlockState(p, d * rng.uniform(3, 6, (n, 1)), look_rotation(d))


def case_colors() -> dict:
    state = random_flock(2, 7.0)
    images = {}
    for mode in ("heading", "speed", "neighbours", "uniform"):
        r = renderer(ViewHints(show_arena=False, mesh="cone", boid_size=1.0, color_mode=mode))
        images[mode] = r.render(state)
        r.close()
    return images


def case_antialias() -> dict:
    """One large boid drawn with and without supersampling, and with FXAA (the window's)."""
    images = {}
    for name, factor, fxaa in (("on", 2, False), ("off", 1, False), ("fxaa", 1, True)):
        r = renderer(
            ViewHints(show_arena=False, mesh="dart", boid_size=9.0, color_mode="uniform"), supersample=factor
        )
        r.canvas.fxaa = fxaa
        images[name] = r.render(state_of([0, 0, 0], [0, math.sqrt(0.5), math.sqrt(0.5)]))
        r.close()
    return images


def world_renderer(objects, azimuth: float = 30.0, elevation: float = 25.0, **hints) -> OffscreenRenderer:
    """A renderer of a world of ``objects`` in a sphere of radius 10 about the origin (outline
    hidden), which the camera frames whatever the flock does."""
    view = ViewHints(show_arena=False, camera_azimuth=azimuth, camera_elevation=elevation, **hints)
    params = Params(arena_radius=10.0, init_radius=10.0, objects=tuple(objects))
    return OffscreenRenderer(Scene(params, view=view), size=SIZE, camera="fixed")


def case_lit_box() -> dict:
    """A box turned 30 degrees about the vertical, standing on the ground, lit by the sun: each
    of its faces' centre and normal in the world, and where those centres are on the picture."""
    from flock3d.core.geometry import euler_quaternion
    from flock3d.core.objects import Object
    from flock3d.core.quaternion import to_matrices
    from flock3d.viewer.renderer import sun_direction

    box = Object("box", size=(8.0, 8.0, 8.0), rotation=(30.0, 0.0, 0.0), color="#b0b0b0")
    # Seen from between the face turned to the (low) sun and the face turned away from it.
    r = world_renderer([box, Object("plane", position=(0.0, -4.0, 0.0))], azimuth=75.0)
    image = r.render(state_of(np.zeros((0, 3)), np.zeros((0, 3))))
    rotation = to_matrices(np.array([euler_quaternion(30.0, 0.0, 0.0)]))[0]
    normals = np.vstack([rotation.T, -rotation.T])  # the faces' outward normals: +-x, +-y, +-z turned
    centres = 4.0 * normals
    return {"image": image, "centres": centres, "normals": normals, "screen": project(r, centres),
            "eye": r.visuals.camera_frame.eye, "sun": sun_direction((0.0, 1.0, 0.0))}  # fmt: skip


def case_shadow() -> dict:
    """The ground with and without a boid flying 8 units above it; where its foot is on the picture."""
    from flock3d.core.objects import Object

    out = {}
    for name, n in (("with", 1), ("without", 0)):
        r = world_renderer([Object("plane")], mesh="dart", boid_size=3.0, color_mode="uniform")
        out[name] = r.render(state_of(np.array([[0.0, 8.0, 0.0]])[:n], np.array([[1.0, 0.0, 0.0]])[:n]))
        out["foot"] = project(r, np.array([[0.0, 0.0, 0.0], [0.0, 8.0, 0.0], [6.0, 0.0, 6.0]]))
        r.close()
    return out


def case_moving() -> dict:
    """A sphere keyframed from z = -6 (t = 0) to z = 6 (t = 4), drawn at t = 0, 2 and 4 (the
    picture's z runs left to right)."""
    from flock3d.core.objects import Motion, Object

    sphere = Object("sphere", radius=2.0, motion=Motion(((0.0, 0.0, -6.0), (0.0, 0.0, 6.0)), (0.0, 4.0)))
    r = world_renderer([sphere], azimuth=0.0, elevation=0.0)
    out = {}
    for t in (0.0, 2.0, 4.0):
        state = state_of(np.zeros((0, 3)), np.zeros((0, 3)))
        state.time = t
        out[f"t{t:g}"] = r.render(state)
    out["centres"] = project(r, np.array([[0.0, 0.0, -6.0], [0.0, 0.0, 0.0], [0.0, 0.0, 6.0]]))
    return out


def case_trails() -> dict:
    """A boid flying straight across the picture for 2 s, with and without trails."""
    out = {}
    start, velocity = np.array([0.0, 0.0, -6.0]), np.array([0.0, 0.0, 4.0])
    for name, seconds in (("on", 3.0), ("off", 0.0)):
        r = renderer(
            ViewHints(show_arena=False, mesh="cone", boid_size=0.8, color_mode="uniform", trails=seconds)
        )
        for k in range(41):  # 20 frames a second
            t = k * 0.05
            state = state_of(start + velocity * t, [0, 0, 1])
            state.time = t
            image = r.render(state)
        out[name] = image
        out["path"] = project(r, np.array([start, start + velocity * 2.0]))
        r.close()
    return out


def case_banking() -> dict:
    """A boid seen from behind, flying level and turning to either side."""
    out = {}
    # Acceleration across the heading, towards the boid's right (+) or left (-), units/s^2.
    for name, lateral in (("level", 0.0), ("turning_right", 15.0), ("turning_left", -15.0)):
        r = renderer(ViewHints(show_arena=False, mesh="dart", boid_size=7.0, color_mode="uniform"))
        heading = np.array([-1.0, 0.0, 0.0])  # away from the camera
        right = np.cross([0.0, 1.0, 0.0], heading)  # the boid's +x side
        for k in range(20):  # long enough for the smoothed bank to settle
            state = state_of([0, 0, 0], heading)
            state.time = 0.05 * k
            image = r.render(state, acceleration=(lateral * right)[None])
        out[name] = image
        out["right_on_screen"] = project(r, np.array([[0, 0, 0], right]))
        r.close()
    return out


def case_flown_banking() -> dict:
    """A bird in aerodynamic flight seen from behind, its orientation rolled by 40 degrees to either
    side and its acceleration pushing the other way: the roll drawn is its orientation's."""
    out = {}
    heading = np.array([-1.0, 0.0, 0.0])  # away from the camera
    right = np.cross([0.0, 1.0, 0.0], heading)
    for name, roll in (("level", 0.0), ("rolled_right", 40.0), ("rolled_left", -40.0)):
        r = renderer(ViewHints(show_arena=False, mesh="dart", boid_size=7.0, color_mode="uniform"),
                     flight="aerodynamic")  # fmt: skip
        beta = np.radians(roll)
        state = state_of([0, 0, 0], heading)
        state.orientations = look_rotation(
            heading[None], np.cos(beta) * np.array([0.0, 1.0, 0.0]) + np.sin(beta) * right
        )
        out[name] = r.render(state, acceleration=(-np.sign(roll) * 15.0 * right)[None])
        r.close()
    return out


def case_small() -> dict:
    """A boid far too small to see at its true size."""
    r = renderer(ViewHints(show_arena=False, mesh="dart", boid_size=0.02, color_mode="uniform"))
    image = r.render(state_of([0, 0, 0], [0, 0, 1]))
    return {"image": image, "centre": project(r, np.zeros((1, 3)))[0]}


def case_contrast() -> dict:
    """300 boids in every colour mode, and the focus view, with each boid's place on the picture."""
    from flock3d.viewer.picking import focus_colors

    state = random_flock(5, 8.0)
    p = state.positions
    out = {}
    for mode in ("heading", "speed", "neighbours", "uniform", "focus"):
        r = renderer(
            ViewHints(show_arena=False, mesh="bird", color_mode="heading" if mode == "focus" else mode)
        )
        colors = None
        if mode == "focus":
            colors = focus_colors(r.visuals.colors_for(state).colors, 0, np.arange(1, 20))
        r.visuals.update(state, colors)
        out[mode] = downsample(r.canvas.render(alpha=False), r.supersample)
        out["screen"] = project(r, p)
        r.close()
    return out


def case_specks() -> dict:
    """A flock far enough away to be drawn as specks, and the same drawn with the bird itself."""
    import flock3d.viewer.renderer as renderer_module

    state = random_flock(9, 7.0, n=400)
    out = {}
    kept = renderer_module.SPECK_PIXELS  # put back: the cases after this one in its process draw specks
    try:
        for name, speck_pixels in (("specks", kept), ("birds", 0.0)):
            renderer_module.SPECK_PIXELS = speck_pixels
            r = renderer(ViewHints(show_arena=False, mesh="bird", boid_size=0.3, color_mode="uniform"))
            r.render(state)  # the first frame lays the view out: sizes on screen are known from the second
            out[name] = r.render(state)
            out[f"{name}_drawn_as_specks"] = np.array(r.visuals.specks.count)
            r.close()
    finally:
        renderer_module.SPECK_PIXELS = kept
    return out


def case_gpu_colors() -> dict:
    """300 boids in random headings coloured by heading on the GPU (the colour mode), and the same
    with the CPU's heading map passed as each boid's colour."""
    from flock3d.core.quaternion import forward
    from flock3d.look.colors import heading_colors

    state = random_flock(4, 7.0)
    out = {}
    for name, colors in (("gpu", None), ("cpu", heading_colors(forward(state.orientations)))):
        r = renderer(ViewHints(show_arena=False, mesh="bird", boid_size=1.2, color_mode="heading"))
        r.visuals.update(state, colors)
        out[name] = downsample(r.canvas.render(alpha=False), r.supersample)
        r.close()
    return out


def case_straddling_specks() -> dict:
    """A row of boids from near the camera to far beyond the speck length, each in a column of its
    own: drawn split between the bird and the speck, each visual's boids alone, and which boids are
    shorter on screen than the speck length."""
    import flock3d.viewer.renderer as renderer_module

    n = 12
    w = np.geomspace(5.0, 90.0, n)  # depths: the camera is 29.3 units from the centre, along -x
    p = np.c_[w - 29.267, np.zeros(n), 0.045 * (np.arange(n) - 5.5) * w]  # 26 pixels apart
    state = state_of(p, np.tile([0.0, 1.0, 0.0], (n, 1)))
    r = renderer(ViewHints(show_arena=False, mesh="bird", boid_size=0.6, color_mode="uniform"), radius=10.0)
    r.render(state)  # the first frame lays the view out: sizes on screen are known from the second
    image = r.render(state)
    bodies = r.visuals.bodies
    alone = {}
    for name, hidden in (("bodies_only", bodies.specks), ("specks_only", bodies.boids)):
        hidden.visible = False  # what the other visual draws, alone
        alone[name] = downsample(r.canvas.render(alpha=False), r.supersample)
        hidden.visible = True
    length = bodies.boids.pixels_per_unit(bodies.boids.clip_matrix()) * 0.6
    w = p @ bodies.boids.clip_matrix()[:3, 3] + bodies.boids.clip_matrix()[3, 3]
    return {"image": image, **alone, "screen": project(r, p),
            "counts": np.array([bodies.specks.count, bodies.boids.count]),
            "speck": (length / w < renderer_module.SPECK_PIXELS * r.supersample)}  # fmt: skip


def case_species_meshes() -> dict:
    """Species a (left) and b (right) drawn with the meshes named (panel, a's, b's), as bodies
    and, with every boid shorter than SPECK_PIXELS, as specks."""
    import flock3d.viewer.renderer as renderer_module
    from flock3d.core.params import Species
    from flock3d.scene.schema import SpeciesLook

    state = random_flock(6, 2.5, n=16)
    state.positions[:, 0] = 0.0
    state.positions[:8, 2] -= 5.0  # a on the left (the picture's z runs left to right)
    state.positions[8:, 2] += 5.0
    species = (Species("a", 8), Species("b", 8))
    out = {}
    looks = {"darts": ("dart", None, None), "mixed": ("dart", None, "bird"), "birds": ("bird", None, None),
             "cones": ("cone", None, None), "panel_cone": ("dart", None, "bird")}  # fmt: skip
    kept = renderer_module.SPECK_PIXELS
    try:
        for speck_pixels, suffix in ((0.0, ""), (1e6, "_specks")):
            renderer_module.SPECK_PIXELS = speck_pixels
            for name, (panel, a, b) in looks.items():
                hints = ViewHints(show_arena=False, mesh=panel, boid_size=1.5, color_mode="uniform",
                                  species=(SpeciesLook("a", mesh=a), SpeciesLook("b", mesh=b)))  # fmt: skip
                r = renderer(hints, species=species)
                if name == "panel_cone":
                    r.render(state)
                    r.visuals.set_mesh("cone")  # the panel's choice: for a, which has no mesh of its own
                r.render(state)  # the first frame lays the view out: sizes are known from the second
                out[name + suffix] = r.render(state)
                out[f"{name}{suffix}_counts"] = np.array([r.visuals.specks.count, r.visuals.boids.count])
                out["middle"] = project(r, np.zeros((1, 3)))[0, 0]  # the column between the species
                r.close()
    finally:
        renderer_module.SPECK_PIXELS = kept
    return out


def case_periodic_box() -> dict:
    """vicsek/3d's periodic box, empty, framed as the viewer and `flock3d render` frame it, seen
    from all round its orbit; with its corners' places on each picture."""
    from flock3d.scene import resolve_scene

    params = resolve_scene("vicsek/3d").params
    scene = Scene(params=params, view=resolve_scene("vicsek/3d").view)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
    corners = np.asarray(params.arena_center) + signs * np.asarray(params.half_extents)
    r = OffscreenRenderer(scene, size=SIZE, camera="fixed")
    empty = state_of(np.zeros((0, 3)), np.zeros((0, 3)))
    images, screens = [], []
    for elevation in (-60.0, scene.view.camera_elevation, 60.0):
        for azimuth in range(0, 360, 30):
            r.camera.elevation, r.camera.azimuth = elevation, float(azimuth)
            images.append(r.render(empty))
            screens.append(project(r, corners))
    r.close()
    return {"images": np.array(images), "corners": np.array(screens)}


def case_notebook() -> dict:
    """flock3d.show() driven as a notebook's front end would: sized, drawn, played, paused."""
    import time

    import flock3d

    viewer = flock3d.show("default", size=(320, 240))
    try:
        first = viewer.frame()
        # The worker thread steps the flock meanwhile, once its step is compiled (a child's compile:
        # seconds on a loaded machine), so wait for its steps rather than for a fixed time.
        deadline = time.monotonic() + 240.0
        while viewer.session.snapshot().step_count <= 30 and time.monotonic() < deadline:
            time.sleep(0.1)
        playing = viewer.frame()
        stepped = viewer.session.snapshot().step_count
        viewer.controls["play"].value = False  # the play/pause button
        time.sleep(0.3)
        paused_at = viewer.session.snapshot().step_count
        time.sleep(0.5)
        still = viewer.session.snapshot().step_count
        viewer.controls["colors"].value = "uniform"
        uniform = viewer.frame()
        viewer.controls["camera"].value = "follow"
        followed = viewer.frame()
        widgets = [type(w).__name__ for w in viewer.widget.children]
    finally:
        viewer.close()
    return {
        "first": first, "playing": playing, "uniform": uniform, "followed": followed,
        "steps": np.array([stepped, paused_at, still]), "widgets": np.array(widgets),
    }  # fmt: skip


def case_repr_png() -> dict:
    import imageio.v3 as iio

    from flock3d import Flock

    flock = Flock(Params(count=300), seed=3)
    flock.step(30)
    return {"image": iio.imread(flock._repr_png_(), extension=".png")}


def case_camera_direction() -> dict:
    """Where the target and a point 5 units from it along look.camera.view_direction fall on the
    picture, for several turntable angles: the same pixel when the two conventions agree."""
    from flock3d.look.camera import view_direction

    r = renderer(ViewHints(show_arena=False))
    r.render(state_of(np.zeros((1, 3)), [[0.0, 0.0, 1.0]]))
    pixels = []
    for azimuth, elevation in ((0.0, 0.0), (90.0, 0.0), (30.0, 20.0), (-120.0, -35.0), (200.0, 70.0)):
        r.camera.azimuth, r.camera.elevation = azimuth, elevation
        r.render(state_of(np.zeros((1, 3)), [[0.0, 0.0, 1.0]]))
        target = np.asarray(r.camera.center, dtype=float)
        pixels.append(project(r, np.array([target, target + 5.0 * view_direction(azimuth, elevation)])))
    return {"pixels": np.array(pixels)}


CASES = {
    "camera_direction": case_camera_direction,
    "antialias": case_antialias,
    "lit_box": case_lit_box,
    "shadow": case_shadow,
    "moving": case_moving,
    "trails": case_trails,
    "banking": case_banking,
    "small": case_small,
    "flown_banking": case_flown_banking,
    "contrast": case_contrast,
    "specks": case_specks,
    "gpu_colors": case_gpu_colors,
    "straddling_specks": case_straddling_specks,
    "species_meshes": case_species_meshes,
    "positions": case_positions,
    "heading": case_heading,
    "arena": case_arena,
    "colors": case_colors,
    "periodic_box": case_periodic_box,
    "notebook": case_notebook,
    "repr_png": case_repr_png,
}

if __name__ == "__main__":
    folder = pathlib.Path(sys.argv[1])
    for case in sys.argv[2:]:
        np.savez(folder / f"{case}.npz", **CASES[case]())
