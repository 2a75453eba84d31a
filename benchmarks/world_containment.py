"""Do boids stay out of the world's objects? Every step of every shipped world scene, checked.

    python benchmarks/world_containment.py [--steps 20000] [SCENE ...]

For each shipped scene with [[objects]] (scenes/worlds/ and any other), runs the scene as it
is and after every step measures each boid's clearance from every object at the flock's time
(the signed distance into the free side: outside an obstacle, inside the arena object), with
the same packed objects the engines read. Prints the penetrations (boid-steps with a clearance
below 0: the issue's target is none), the least clearance seen, how often a boid was on a
surface (within 1e-4: where the constraint after the move put it), the most boids perched at
once, and the run's seconds. Needs the world extra (scenes with meshes and images).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from flock3d import Flock
from flock3d.core.terms.objects import clearances, pack_objects
from flock3d.scene import resolve_scene, shipped_scenes

#: Within this of a surface a boid counts as on it (the constraint leaves it 1e-6 out).
ON_SURFACE = 1e-4


def has_objects(name: str) -> bool:
    return bool(resolve_scene(name).params.objects)


def check(name: str, steps: int) -> dict:
    scene = resolve_scene(name)
    flock = Flock.from_scene(scene)
    data, offsets = pack_objects(scene.params.objects, scene.fields)
    inside, least, touching, perched, start = 0, np.inf, 0, 0, time.perf_counter()
    for _ in range(steps):
        flock.step()
        c = clearances(data, offsets, flock.positions, flock.time)
        inside += int(np.count_nonzero(c < 0.0))
        least = min(least, float(c.min()))
        touching += int(np.count_nonzero(c < ON_SURFACE))
        perched = max(perched, int(np.count_nonzero(flock.state.perches > 0.0)))
    return {"scene": name, "count": len(flock), "objects": len(scene.params.objects), "steps": steps,
            "inside": inside, "least": least, "touching": touching, "perched": perched,
            "seconds": time.perf_counter() - start}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenes", nargs="*")
    parser.add_argument("--steps", type=int, default=20_000)
    args = parser.parse_args()
    names = args.scenes or [n for n in shipped_scenes() if has_objects(n)]
    print(f"{'scene':<18} {'boids':>6} {'objects':>7} {'steps':>7} {'inside':>7} {'least':>10} "
          f"{'on surface':>11} {'perched':>8} {'seconds':>8}")  # fmt: skip
    for name in names:
        r = check(name, args.steps)
        counts = f"{r['count']:>6,} {r['objects']:>7} {r['steps']:>7,} {r['inside']:>7,}"
        seen = f"{r['least']:>10.2e} {r['touching']:>11,} {r['perched']:>8,} {r['seconds']:>8.1f}"
        print(f"{name:<18} {counts} {seen}", flush=True)


if __name__ == "__main__":
    main()
