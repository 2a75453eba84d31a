"""Two versions of flock3d, side by side: how long the default scene's first step takes cold.

    python benchmarks/cold_start.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 3]

Each checkout is a folder holding a ``flock3d`` package (a git worktree of the commit to
compare). Each measurement is a fresh process with an empty step cache (its own
``FLOCK3D_CACHE_DIR``) that imports that checkout, builds the default scene's flock and takes
one step: the step is generated and compiled then. The versions alternate, round after round.
Prints each version's first-step seconds, their median, and the median of import + build.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from ab import run_fresh  # beside this script

MEASURE = """
import json, sys, time
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
import flock3d
assert flock3d.__file__.startswith({root!r}), flock3d.__file__
from flock3d.flock import Flock
from flock3d.scene import default_scene
flock = Flock(default_scene().params, seed=0)
t1 = time.perf_counter()
flock.step(1)
print(json.dumps({{"build": t1 - t0, "first": time.perf_counter() - t1}}))
"""


def measure(root: Path) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "FLOCK3D_CACHE_DIR": cache}
        return run_fresh(MEASURE.format(root=str(root.resolve())), str(root), env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for r in range(args.rounds):
        for version in ("old", "new") if r % 2 == 0 else ("new", "old"):
            runs[version].append(measure(args.old if version == "old" else args.new))
    for version, root in (("old", args.old), ("new", args.new)):
        firsts = [x["first"] for x in runs[version]]
        build = statistics.median(x["build"] for x in runs[version])
        print(f"{version} {root}: first step {', '.join(f'{x:.1f}' for x in firsts)} s, "
              f"median {statistics.median(firsts):.1f} s; import + build {build:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
