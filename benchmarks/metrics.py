"""How fast flock3d.metrics measures: one frame of 100,000 boids, and a long recording of 500.

    python benchmarks/metrics.py [--frames 10000]

Prints wall-clock seconds (best of a few runs after a warm-up that compiles):
each analysis of one frame of 100,000 boids (a polarized ball at the default
density), then :func:`flock3d.metrics.table` on 10,000 frames of 500 boids next
to the per-frame path it replaced (the same measurements one function call at a
time, timed on a tenth of the frames and scaled).
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from flock3d import metrics


def best(fn, repeats: int = 3) -> float:
    fn()  # compile, warm caches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def polarized_ball(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n boids uniform in a ball at ~20 neighbours within 5 units, flying +x with some scatter."""
    rng = np.random.default_rng(seed)
    radius = 5.0 * (n / 20.0) ** (1 / 3)
    d = rng.normal(size=(n, 3))
    p = d / np.linalg.norm(d, axis=1, keepdims=True) * radius * rng.uniform(0, 1, (n, 1)) ** (1 / 3)
    v = np.array([5.0, 0, 0]) + rng.normal(0, 0.5, (n, 3))
    return p, v


class Frame:
    def __init__(self, p, v, step):
        self.positions, self.velocities, self.step_count, self.time = p, v, step, step / 60


def old_row(p, v, r):
    """The measurements as the table took them before: one call each per frame."""
    nn = metrics.nearest_neighbour_stats(p)
    return (metrics.polarization(v), metrics.milling(p, v), metrics.group_polarization(p, v, r),
            metrics.mean_pair_distance(p), nn.mean, nn.min, metrics.groups(p, r)[0])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=10_000)
    args = parser.parse_args()
    print(f"numba threads: {numba.get_num_threads()}")

    p, v = polarized_ball(100_000, 0)
    rows = [
        ("velocity_correlation (50 bins, ~1,000 centres)", lambda: metrics.velocity_correlation(p, v)),
        ("neighbour_anisotropy (n = 1..20, border corrected)", lambda: metrics.neighbour_anisotropy(p, v)),
        ("principal_axes", lambda: metrics.principal_axes(p)),
        ("flock_size (L)", lambda: metrics.flock_size(p)),
        ("summary (the table's columns)", lambda: metrics.summary(p, v, 5.0)),
    ]
    print("\none frame of 100,000 boids:")
    total = 0.0
    for name, fn in rows:
        seconds = best(fn)
        total += seconds
        print(f"  {name:<52}{seconds:8.3f} s")
    print(f"  {'all of them':<52}{total:8.3f} s")

    rng = np.random.default_rng(1)
    frames = [Frame(*polarized_ball(500, k), k) for k in range(min(args.frames, 200))]
    frames = [frames[k % len(frames)] for k in range(args.frames)]
    jitter = [Frame(f.positions + rng.normal(0, 1e-3, f.positions.shape), f.velocities, k)
              for k, f in enumerate(frames)]  # fmt: skip
    new = best(lambda: metrics.table(jitter, 5.0), repeats=2)
    sample = jitter[: max(1, args.frames // 10)]
    start = time.perf_counter()
    for f in sample:
        old_row(f.positions, f.velocities, 5.0)
    old = (time.perf_counter() - start) * args.frames / len(sample)
    print(f"\n{args.frames:,} frames of 500 boids (metrics.table):")
    print(f"  {'before: one call per measurement per frame':<52}{old:8.1f} s")
    print(f"  {'after: compiled pass, parallel over frames':<52}{new:8.1f} s   ({old / new:.0f}x)")


if __name__ == "__main__":
    main()
