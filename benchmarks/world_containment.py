"""Do boids stay out of the world's objects? Every step of every shipped world scene, and of
worlds built to break containment, checked.

    python benchmarks/world_containment.py [--steps 20000] [SCENE ...]
    python benchmarks/world_containment.py --adversarial [--steps 5000] [--engines fast reference]
        [--count N] [--speed OLD_CHECKOUT] [WORLD ...]

For each shipped scene with [[objects]] (scenes/worlds/ and any other), runs the scene as it
is and after every step measures each boid's clearance from every object at the flock's time
(the signed distance into the free side: outside an obstacle, inside the arena object), with
the same packed objects the engines read. Prints the penetrations (boid-steps with a clearance
below 0: the issue's target is none), the least clearance seen, how often a boid was on a
surface (within 1e-4: where the constraint after the move put it), the most boids perched at
once, and the run's seconds. Needs the world extra (scenes with meshes and images).

``--adversarial`` runs instead the worlds of ``adversarial.py`` (thin slabs, rods and a ring,
a comb arena, thin mesh plates and rods, overlapping moving objects, a spinning mesh bar, a
box sweeping a planar flock, spiky ground, edits onto the flock) in each engine, each step
checked against the world's exact shape written there, independently of the engines: the
boid-steps inside, the moves that went through a solid at least 1/64 of the move long (the
engines' bound), the moves that clipped less than that, the deepest point reached (< 0:
outside). Both counts of inside and through must be 0. ``--speed OLD_CHECKOUT`` adds the cost
of the checks: steps/s at 10,000 boids of each shipped world, this checkout against another
(a git worktree of the commit before), alternating fresh processes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from flock3d import Flock
from flock3d.core.objects import clearances, pack_objects
from flock3d.scene import resolve_scene, shipped_scenes

sys.path.insert(0, str(Path(__file__).resolve().parent))  # adversarial.py and ab.py beside it

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


def adversarial(names: list[str], steps: int, engines: list[str], count: int | None) -> None:
    import adversarial as worlds

    print(f"{'world':<28} {'engine':<9} {'boids':>6} {'steps':>6} {'inside':>7} {'through':>8} "
          f"{'clipped':>8} {'deepest':>10} {'seconds':>8}")  # fmt: skip
    for name in names or list(worlds.BUILDERS):
        for engine in engines:
            start = time.perf_counter()
            with tempfile.TemporaryDirectory(prefix="flock3d-adversarial-") as folder:
                world = worlds.build(name, Path(folder))
                # The reference engine is a loop in Python over the boids: a smaller flock.
                r = worlds.run(world, steps, engine, count=count if engine == "fast" else REFERENCE_COUNT)
            counts = (
                f"{r['count']:>6,} {r['steps']:>6,} {r['inside']:>7,} {r['through']:>8,} {r['clipped']:>8,}"
            )
            print(f"{r['world']:<28} {engine:<9} {counts} {r['deepest']:>10.2e} "
                  f"{time.perf_counter() - start:>8.1f}", flush=True)  # fmt: skip


#: Boids in an adversarial world run by the reference engine.
REFERENCE_COUNT = 40

SPEED = """
import json, sys, time
sys.path.insert(0, {root!r})
import flock3d
assert flock3d.__file__.startswith({root!r}), flock3d.__file__
from flock3d import Flock, bench
from flock3d.io.meshes import object_fields
from flock3d.scene import resolve_scene
params = resolve_scene({world!r}).params.replace(count=10_000)
flock = Flock(params, seed=0, fields=object_fields(params) or None)
start = flock.state.copy()
flock.step(1)  # compile or load
per_step, runs = bench._time_steps(flock, start, 20, 1.0)
print(json.dumps({{"steps_per_s": 1.0 / per_step}}))
"""


def speed(old: Path, rounds: int = 3) -> None:
    """Steps/s at 10,000 boids of each shipped world, in the checkout ``old`` and in this one,
    alternating fresh processes round after round."""
    from ab import run_fresh

    new = Path(__file__).resolve().parents[1]
    print(f"\n{'world at 10,000 boids':<28} {'old steps/s':>12} {'new steps/s':>12} {'new/old':>8}")
    for world in [n for n in shipped_scenes() if n.startswith("worlds/")]:
        rates: dict[Path, list[float]] = {old: [], new: []}
        for _ in range(rounds):
            for root in (old, new):
                code = SPEED.format(root=str(root.resolve()), world=world)
                rates[root].append(run_fresh(code, f"{root} {world}")["steps_per_s"])
        a, b = statistics.median(rates[old]), statistics.median(rates[new])
        print(f"{world:<28} {a:>12.1f} {b:>12.1f} {b / a:>8.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenes", nargs="*")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--adversarial", action="store_true")
    parser.add_argument("--engines", nargs="+", default=["fast", "reference"], choices=["fast", "reference"])
    parser.add_argument("--speed", type=Path, metavar="OLD_CHECKOUT")
    parser.add_argument(
        "--count", type=int, help="boids of the fast engine's runs (default: each world's own)"
    )
    args = parser.parse_args()
    if args.adversarial:
        adversarial(args.scenes, args.steps or 5_000, args.engines, args.count)
        if args.speed:
            speed(args.speed)
        return
    names = args.scenes or [n for n in shipped_scenes() if has_objects(n)]
    print(f"{'scene':<18} {'boids':>6} {'objects':>7} {'steps':>7} {'inside':>7} {'least':>10} "
          f"{'on surface':>11} {'perched':>8} {'seconds':>8}")  # fmt: skip
    for name in names:
        r = check(name, args.steps or 20_000)
        counts = f"{r['count']:>6,} {r['objects']:>7} {r['steps']:>7,} {r['inside']:>7,}"
        seen = f"{r['least']:>10.2e} {r['touching']:>11,} {r['perched']:>8,} {r['seconds']:>8.1f}"
        print(f"{name:<18} {counts} {seen}", flush=True)


if __name__ == "__main__":
    main()
