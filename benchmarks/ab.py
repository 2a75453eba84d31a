"""Two versions of flock3d, side by side in one run: steps/s of the benchmark scenes.

    python benchmarks/ab.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 3] [--steps 20] [--sizes ...]

Each checkout is a folder holding a ``flock3d`` package (a git worktree of the commit
to compare). Every measurement runs in a fresh process that imports that checkout
first; the two versions alternate, round after round, so that a machine that gets
busier or quieter affects both alike. The scenes are each version's own
``bench_params(n)`` (the fixed density of ``flock3d bench``) and, at N = 10,000, the
``variant_params`` rows both versions know. Prints the median steps/s of each version and
their ratio, the ratio of their best rounds, and each version's spread over the rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

MEASURE = """
import json, sys, time
sys.path.insert(0, {root!r})
import flock3d
assert flock3d.__file__.startswith({root!r}), flock3d.__file__
from flock3d import bench
from flock3d.flock import Flock
n, name, steps = {n}, {name!r}, {steps}
params = bench.variant_params(n)[name] if name else bench.bench_params(n)
# a variant with mesh objects needs their grids (variant_flock, where the checkout has it)
flock = getattr(bench, "variant_flock", lambda p: Flock(p, seed=0))(params) if name else Flock(params, seed=0)
start = flock.state.copy()
flock.step(1)  # compile or load
per_step, runs = bench._time_steps(flock, start, steps, 1.0)
print(json.dumps({{"steps_per_s": 1.0 / per_step, "names": list(bench.variant_params(300))}}))
"""


def run_fresh(code: str, what: str, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh Python process (with ``env``) and return the JSON of its last line
    of output; a failure raises RuntimeError naming ``what`` and the child's last error line."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{what}: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(root: Path, n: int, name: str | None, steps: int) -> dict:
    code = MEASURE.format(root=str(root.resolve()), n=n, name=name, steps=steps)
    return run_fresh(code, f"{root} N={n} {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    parser.add_argument("--no-variants", action="store_true")
    parser.add_argument("--only", nargs="*", default=None, metavar="VARIANT", help="these variant rows alone")
    args = parser.parse_args()

    names = set(measure(args.old, 300, None, 2)["names"]) & set(measure(args.new, 300, None, 2)["names"])
    cases = [(n, None) for n in args.sizes]
    if not args.no_variants:
        wanted = names if args.only is None else names & set(args.only)
        cases += [(10_000, name) for name in measure(args.new, 300, None, 2)["names"] if name in wanted]
    results: dict[tuple, dict[str, list[float]]] = {case: {"old": [], "new": []} for case in cases}
    for r in range(args.rounds):
        for case in cases:
            order = ("old", "new") if r % 2 == 0 else ("new", "old")
            for version in order:
                root = args.old if version == "old" else args.new
                results[case][version].append(measure(root, *case, args.steps)["steps_per_s"])
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    # Medians, and the best of the rounds (the least disturbed by other work on the machine);
    # "spread": (best - worst) / best of each version's rounds, a measure of the noise.
    print(f"{'case':<40} {'old steps/s':>12} {'new steps/s':>12} {'new/old':>8} {'best new/old':>13} "
          f"{'spread old':>11} {'spread new':>11}")  # fmt: skip
    for (n, name), runs in results.items():
        old, new = statistics.median(runs["old"]), statistics.median(runs["new"])
        best_old, best_new = max(runs["old"]), max(runs["new"])
        spread_old = (best_old - min(runs["old"])) / best_old
        spread_new = (best_new - min(runs["new"])) / best_new
        label = f"N = {n:,}" if name is None else f"{name} (N = {n:,})"
        print(f"{label:<40} {old:>12,.1f} {new:>12,.1f} {new / old:>7.2f}x {best_new / best_old:>12.2f}x "
              f"{spread_old:>10.0%} {spread_new:>10.0%}")  # fmt: skip


if __name__ == "__main__":
    main()
