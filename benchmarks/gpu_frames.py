"""Frames of a large flock drawn offscreen, split into the phases of a viewer's frame.

    python benchmarks/gpu_frames.py 100000 1000000            # the GPU engine (an NVIDIA GPU)
    python benchmarks/gpu_frames.py 20000 --engine fast       # the CPU's cores
    python benchmarks/gpu_frames.py 1000000 --scene bench     # flock3d bench's scene

A scene's flock at N boids in an arena grown to keep its density: the murmuration (60 units at
25,000: over 100 boids in view once packed) or ``flock3d bench``'s (20 in view), drawn at
1280 x 800 (the viewer's window) with no supersampling, the orbit camera, one frame each 1/30
of a simulated second. Each phase is the median ms a frame over ``--frames`` frames after
``--warm`` that compile and fill the caches; they follow a window's frame
(:mod:`flock3d.viewer.session`), in one thread rather than two, without Qt:

- steps: the flock's steps to the frame's time (on the GPU: until its one read back);
- copy: the state read once into host arrays (a GPU flock's download);
- acceleration: the velocities' change since the last frame's (which banks the boids);
- instance data: the boids' buffers written (:meth:`FlockVisuals.update`);
- draw: the canvas drawn into its frame buffer and read back as an image.

Needs the viewer extra and EGL (headless OpenGL); the OpenGL renderer's name is printed last.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's flock3d

PHASES = ("steps", "copy", "acceleration", "instance data", "draw")


def frames(n: int, engine: str, count: int, warm: int, scene_name: str = "murmuration") -> dict:
    """Median ms a frame of each phase, frames/s of their sum, steps a frame and the OpenGL
    renderer, for ``n`` boids of ``scene_name`` (murmuration or bench)."""
    from flock3d import Flock
    from flock3d.bench import bench_params
    from flock3d.look.motion import FrameAcceleration
    from flock3d.scene import Scene, resolve_scene
    from flock3d.viewer.offscreen import OffscreenRenderer

    if scene_name == "bench":
        scene = Scene(params=bench_params(n))
    else:
        radius = 60.0 * (n / 25_000) ** (1.0 / 3.0)
        scene = resolve_scene("murmuration", overrides=[f"flock.count={n}", f"arena.radius={radius}"])
    flock = Flock.from_scene(scene, seed=0, engine=engine)
    per_frame = max(1, round(1.0 / 30.0 / flock.params.dt))
    times: dict[str, list[float]] = {phase: [] for phase in PHASES}
    with OffscreenRenderer(scene, size=(1280, 800), supersample=1) as renderer:
        state, change = flock.state, FrameAcceleration()
        for k in range(warm + count):
            t0 = time.perf_counter()
            flock.step(per_frame)
            t1 = time.perf_counter()
            with state.reading():  # the first read after a step downloads the device's state
                velocities = state.velocities
                t2 = time.perf_counter()
                acceleration = change.read(velocities, state.time)
                t3 = time.perf_counter()
                renderer.visuals.update(state, acceleration=acceleration)
                t4 = time.perf_counter()
                image = renderer.canvas.render(alpha=False)
                t5 = time.perf_counter()
            assert image.shape[:2] == (800, 1280)
            if k >= warm:
                for phase, (a, b) in zip(PHASES, pairwise((t0, t1, t2, t3, t4, t5)), strict=True):
                    times[phase].append((b - a) * 1e3)
        from vispy.gloo import gl

        renderer.canvas.set_current()
        renderer_name = gl.glGetParameter(gl.GL_RENDERER)
    row = {phase: statistics.median(ms) for phase, ms in times.items()}
    return {**row, "fps": 1e3 / sum(row.values()), "steps a frame": per_frame, "renderer": renderer_name}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", type=int, nargs="+", help="boids")
    parser.add_argument("--engine", default="gpu", choices=("gpu", "fast"), help="what steps the flock")
    parser.add_argument("--scene", default="murmuration", choices=("murmuration", "bench"),
                        help="whose flock (default murmuration)")  # fmt: skip
    parser.add_argument("--frames", type=int, default=30, help="timed frames (default 30)")
    parser.add_argument("--warm", type=int, default=5, help="frames before the timed ones (default 5)")
    args = parser.parse_args(argv)
    from flock3d.viewer.offscreen import use_offscreen

    use_offscreen()
    print(f"{args.scene}: ms a frame of each phase", flush=True)
    print(f"| N | engine | {' | '.join(PHASES)} | frames/s |", flush=True)
    print("|---|---|" + "---|" * len(PHASES) + "---|")
    for n in args.sizes:
        row = frames(n, args.engine, args.frames, args.warm, args.scene)
        cells = " | ".join(f"{row[phase]:.2f}" for phase in PHASES)
        engine = f"{args.engine} ({row['steps a frame']} steps a frame)"
        print(f"| {n:,} | {engine} | {cells} | {row['fps']:.3g} |", flush=True)
    print(f"renderer: {row['renderer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
