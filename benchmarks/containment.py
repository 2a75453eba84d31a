"""Do the shipped scenes keep their boids inside their arenas? Every step, checked.

    python benchmarks/containment.py [--steps 20000] [--max-count N] [SCENE ...]

For each shipped scene with walls (a sphere or a box; not periodic, wrap-around or open
space, not the Couzin model; not a world of objects, which benchmarks/world_containment.py
checks against its objects) prints the largest excursion over the run: max |p - c| / R
in a sphere, max |p_k - c_k| / h_k over the axes k of a box (h: the half side), and how
many times a boid was beyond 1.02 of it. The scenes that reproduce a source write-up
literally behave as their source does, walls included, and are listed apart.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from flock3d import Flock
from flock3d.scene import resolve_scene, shipped_scenes

LITERAL = {"classics/raylib-2d", "classics/canvas-tutorial-2d", "classics/pseudocode-3d", "classics/unity-3d",
           "classics/castor-2d"}  # fmt: skip
LIMIT = 1.02


def walled(name: str) -> bool:
    p = resolve_scene(name).params
    return p.model == "boids" and p.arena_shape in ("sphere", "box") and not p.objects


def excursion(flock: Flock) -> np.ndarray:
    """(N,) how far each boid is out, as a fraction of the wall's distance from the centre."""
    p = flock.params
    r = flock.positions - np.asarray(p.arena_center)
    if p.arena_shape == "sphere":
        return np.linalg.norm(r, axis=1) / p.arena_radius
    axes = 2 if p.dimensions == 2 else 3
    return np.max(np.abs(r[:, :axes]) / np.asarray(p.half_extents)[:axes], axis=1)


def check(name: str, steps: int, max_count: int | None) -> dict:
    scene = resolve_scene(name)
    params = scene.params
    if max_count and params.count > max_count:  # the same density in a smaller sphere or box
        scale = (max_count / params.count) ** (1 / (2 if params.dimensions == 2 else 3))
        size = None if params.arena_size is None else tuple(s * scale for s in params.arena_size)
        init = None if params.init_radius is None else params.init_radius * scale
        radius = params.arena_radius * scale
        params = params.replace(count=max_count, arena_radius=radius, arena_size=size, init_radius=init)
    flock = Flock(params, scene.seed)
    worst, escapes, start = 0.0, 0, time.perf_counter()
    for _ in range(steps):
        flock.step()
        out = excursion(flock)
        worst = max(worst, float(out.max()))
        escapes += int(np.count_nonzero(out > LIMIT))
    return {"scene": name, "count": params.count, "worst": worst, "escapes": escapes,
            "seconds": time.perf_counter() - start}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenes", nargs="*")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--max-count", type=int)
    args = parser.parse_args()
    names = args.scenes or [n for n in shipped_scenes() if walled(n)]
    print(f"{'scene':<34} {'boids':>8} {'max out':>8} {'> 1.02':>8} {'seconds':>8}")
    for name in names:
        row = check(name, args.steps, args.max_count)
        escapes = "" if row["worst"] <= LIMIT else "  ESCAPES"
        mark = " (literal: as its source)" if name in LITERAL else escapes
        numbers = f"{row['count']:>8,} {row['worst']:>8.3f} {row['escapes']:>8,} {row['seconds']:>8.1f}"
        print(f"{name:<34} {numbers}{mark}", flush=True)


if __name__ == "__main__":
    main()
