"""Measure the viewer in a real window:
``python -m flock3d.viewer.measure N SECONDS [MESH [SCENE [ENGINE]]]``.

Opens the viewer on the default scene with N boids (arena radius scaled to keep
the default density), or on another shipped SCENE as it is (N is then its own count),
in its default window (1280 x 800), its flock stepped by ENGINE (``fast`` unless told; ``gpu``:
an NVIDIA GPU's), lets it run, and prints one JSON line: frames per
second, ms a frame of each phase (:mod:`flock3d.viewer.phases`), simulation steps per second,
the real-time factor (simulated / wall-clock time), the time to the first frame and the
OpenGL renderer. ``flock3d bench --viewer`` runs it for several sizes.
"""

from __future__ import annotations

import json
import sys
import time


def measure(
    n: int, seconds: float, mesh: str = "bird", scene_name: str = "default", engine: str = "fast"
) -> dict:
    from flock3d.scene import resolve_scene
    from flock3d.viewer.app import _use_qt, check_display

    check_display()
    _use_qt()
    from vispy import app

    from flock3d.viewer.app import ViewerWindow, opengl_renderer
    from flock3d.viewer.event_loop import run_event_loop

    application = app.use_app()
    application.create()
    from flock3d.viewer.renderer import frame_distance

    if scene_name == "default":
        radius = 30.0 * (n / 500.0) ** (1.0 / 3.0)  # the default scene's density
        # The whole arena framed at every size (as the default scene was before it framed its
        # flock), with the rules alone and boids one unit long (as it was before its hawk and
        # wander), so that measurements of one size compare across versions.
        overrides = [
            f"flock.count={n}",
            f"arena.radius={radius}",
            f"view.camera_distance={frame_distance(radius)}",
            "view.boid_size=1",
            "rules.wander=0",
            "predators.count=0",
        ]
    else:  # a world as it is shipped, framed as it frames itself
        overrides = []
    scene = resolve_scene(scene_name, overrides=[*overrides, f"view.mesh={mesh}", f"sim.engine={engine}"])
    n = scene.params.count
    viewer = ViewerWindow(scene, dialogs=False)  # times the first frame from the process start
    viewer.show()
    while viewer.first_frame_seconds is None:
        run_event_loop(0.01)
    while not viewer.session.first_step_done:  # the kernel's first compile is not what is measured
        run_event_loop(0.05)
    run_event_loop(min(2.0, seconds / 3))  # warm up
    times = viewer.session.times
    start, frames0, t0 = viewer.session.snapshot(), viewer.frames_drawn, time.perf_counter()
    since = dict(times.seconds)
    run_event_loop(seconds)
    elapsed = time.perf_counter() - t0
    end, frames = viewer.session.snapshot(), viewer.frames_drawn - frames0
    result = {
        "scene": scene_name,
        "n": n,
        "mesh": mesh,
        "engine": engine,
        "fps": frames / elapsed,
        "frame_ms": times.per_frame_ms(since, frames),
        "steps_per_s": (end.step_count - start.step_count) / elapsed,
        "real_time_factor": (end.time - start.time) / elapsed,
        "first_frame_s": viewer.first_frame_seconds,
        "canvas": list(viewer.canvas.size),
        "window": [viewer.window.width(), viewer.window.height()],
        "samples": viewer.samples,
        "renderer": opengl_renderer(),
    }
    viewer.close()
    return result


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]), float(sys.argv[2]), *(sys.argv[3:6] or ["bird"]))))
