"""Renders the world-look test images offscreen (EGL), all in one process of its own:

    python looks_probe.py OUT.npz

(vispy binds one backend per process, and the window tests use Qt in the pytest process.)
Each case's arrays are saved under ``CASE.NAME``.
"""

from __future__ import annotations

import sys

import numpy as np

from flock3d import Params
from flock3d.core.objects import Object
from flock3d.core.quaternion import look_rotation
from flock3d.core.state import FlockState
from flock3d.scene import Scene, ViewHints
from flock3d.viewer.offscreen import OffscreenRenderer

SIZE = (240, 180)
NO_BOIDS = FlockState(np.zeros((0, 3)), np.zeros((0, 3)), look_rotation(np.zeros((0, 3)) + [1.0, 0.0, 0.0]))


def renderer(objects=(), azimuth=30.0, elevation=25.0, params=None, **hints) -> OffscreenRenderer:
    """A world of ``objects`` in a sphere of radius 10 about the origin (outline hidden)."""
    view = ViewHints(show_arena=False, camera_azimuth=azimuth, camera_elevation=elevation, **hints)
    p = params or Params(arena_radius=10.0, init_radius=10.0, objects=tuple(objects))
    return OffscreenRenderer(Scene(p, view=view), size=SIZE, camera="fixed", supersample=1)


def case_colors() -> dict:
    """A red, a green and a blue box on grey ground in daylight; where their tops are."""
    boxes = [
        Object("box", size=(3.0, 3.0, 3.0), position=(x, 1.5, 0.0), color=c)
        for x, c in ((-5.0, "#d02020"), (0.0, "#20b030"), (5.0, "#2040d0"))
    ]
    r = renderer([Object("plane", color="#808080"), *boxes], azimuth=0.0, elevation=60.0, sky="day")
    image = r.render(NO_BOIDS)
    return {"image": image, "tops": r.project(np.array([[b.position[0], 3.0, 0.0] for b in boxes]))}


def case_skies() -> dict:
    """An empty world under each sky, seen looking up towards its sun: where the sun should be."""
    from flock3d.look.sky import sky_look

    out = {}
    for name in ("day", "dusk", "night"):
        r = renderer(elevation=-45.0, sky=name)
        sun = sky_look(name).sun_direction((0.0, 1.0, 0.0))
        best = None
        for azimuth in range(0, 360, 15):  # turn the camera until its sun is near the picture's middle
            r.camera.azimuth = azimuth
            x, y = r.project(np.array([1e4 * sun]))[0]
            off = np.hypot(x - SIZE[0] / 2, y - SIZE[1] / 2)
            best = min(best or (off, azimuth), (off, azimuth))
        r.camera.azimuth = best[1]
        out[name] = r.render(NO_BOIDS)
        out[f"{name}_sun"] = r.project(np.array([1e4 * sun]))[0]
        r.close()
    return out


def case_shadow() -> dict:
    """A box 8 high on the ground in daylight, seen from high above, with and without it; the
    ground's points a little beyond its foot towards the sun and away from it."""
    from flock3d.look.sky import sky_look

    box = Object("box", size=(3.0, 8.0, 3.0), position=(0.0, 4.0, 0.0), color="#b0b0b0")
    sun = sky_look("day").sun_direction((0.0, 1.0, 0.0))
    away = -np.array([sun[0], 0.0, sun[2]]) / np.hypot(sun[0], sun[2])
    out = {}
    for name, objects in (("with", [Object("plane"), box]), ("without", [Object("plane")])):
        r = renderer(objects, elevation=80.0, sky="day", ground_grid=0.0)
        out[name] = r.render(NO_BOIDS)
        out["points"] = r.project(np.array([4.0 * away, -4.0 * away]))
        r.close()
    return out


def case_guides() -> dict:
    """A world with a path and an attractor, its guides shown and hidden."""
    from flock3d.core.params import Attractor, WaypointPath

    params = Params(
        arena_radius=10.0,
        init_radius=10.0,
        path=WaypointPath(((-6.0, 0.0, -6.0), (6.0, 0.0, -6.0), (6.0, 0.0, 6.0), (-6.0, 0.0, 6.0))),
        attractors=(Attractor((0.0, 2.0, 0.0)),),
    )
    out = {}
    for name, shown in (("shown", True), ("hidden", False)):
        r = renderer(params=params, show_guides=shown)
        out[name] = r.render(NO_BOIDS)
        r.close()
    return out


def case_grid() -> dict:
    """Flat ground seen from above, with no grid and with a full one."""
    out = {}
    for name, opacity in (("none", 0.0), ("full", 1.0)):
        r = renderer([Object("plane", color="#606060")], elevation=70.0, ground_grid=opacity)
        out[name] = r.render(NO_BOIDS)
        r.close()
    return out


def case_high() -> dict:
    """A small arena (radius 6) 60 above green ground, seen from its hints' elevation: where the
    ground below it, and far out along the view, lie."""
    params = Params(
        arena_radius=6.0, arena_center=(0.0, 60.0, 0.0), objects=(Object("plane", color="#40a040"),)
    )
    r = renderer(params=params, azimuth=30.0, elevation=25.0, sky="day")
    image = r.render(NO_BOIDS)
    return {"image": image, "below": r.project(np.array([[0.0, 0.0, 0.0]]))}


def case_cave() -> dict:
    """A red stalactite hanging from the roof of a green sphere that is the arena, seen level from
    outside: where its middle is, and where the roof above it and the far wall beside it are."""
    cave = Object("sphere", radius=9.0, role="arena", color="#40a040")
    stalactite = Object("capsule", radius=1.2, height=8.0, position=(0.0, 6.0, 0.0), color="#d02020")
    params = Params(arena_shape="none", init_radius=3.0, objects=(cave, stalactite))
    r = renderer(params=params, azimuth=0.0, elevation=0.0, sky="day")
    image = r.render(NO_BOIDS)
    points = np.array([[0.0, 4.0, 0.0], [0.0, 8.0, -3.5], [0.0, -4.0, -5.0]])
    return {"image": image, "points": r.project(points)}


def case_culled() -> dict:
    """Each primitive (box, sphere, cylinder, capsule, torus), turned, drawn by the visual that
    culls back faces, then with that visual drawing them all; the triangles each visual held."""
    out = {}
    shapes = [Object("box", size=(2.0, 3.0, 1.5)), Object("sphere", radius=1.5),
              Object("cylinder", radius=1.2, height=3.0), Object("capsule", radius=1.0, height=3.5),
              Object("torus", radius=1.6, tube=0.5)]  # fmt: skip
    for o in shapes:
        o = o._replace(position=(0.0, 2.0, 0.0), rotation=(20.0, 35.0, 10.0), color="#c08040")
        r = renderer([o], azimuth=40.0, elevation=30.0, sky="day")
        scenery = r.visuals.scenery
        out[f"{o.shape}_held"] = np.array([scenery.still_closed.count, scenery.still.count])
        out[f"{o.shape}_culled"] = r.render(NO_BOIDS)
        scenery.still_closed.set_gl_state("opaque", depth_test=True, cull_face=False)
        out[f"{o.shape}_whole"] = r.render(NO_BOIDS)
        r.close()
    return out


CASES = {
    "colors": case_colors,
    "culled": case_culled,
    "skies": case_skies,
    "shadow": case_shadow,
    "guides": case_guides,
    "grid": case_grid,
    "cave": case_cave,
    "high": case_high,
}

if __name__ == "__main__":
    out = {}
    for case, make in CASES.items():
        for name, value in make().items():
            out[f"{case}.{name}"] = value
    np.savez(sys.argv[1], **out)
