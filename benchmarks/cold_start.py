"""Two versions of flock3d, side by side: how long a scene's first step takes cold;
or, for one checkout, how long every shipped scene takes to open cold and warm.

    python benchmarks/cold_start.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 3] [--scene NAME] [--fresh-install]
    python benchmarks/cold_start.py --scenes CHECKOUT [NAME ...]
    python benchmarks/cold_start.py --after-background CHECKOUT [NAME ...]

With ``--scenes``, one empty cache (numba's and flock3d's) serves a process per scene in turn,
as a user opening one shipped scene after another on a fresh install: the first row pays for the
compiled parts every scene shares, each later row for its own step (nothing when a scene before
it had the same layout). A second pass opens each again from the warm cache. Prints a table:
scene, seconds to open (load the scene, build the flock, take its first step) cold and warm.

With ``--after-background``, one process from empty caches, as the viewer does it: the default
scene's session starts (its first step compiled by a child), the other scenes' steps compile in
a background child (:meth:`~flock3d.viewer.session.Session.precompile_shipped`, at once here
rather than after a minute), and then each scene is opened in that session in turn: seconds from
``Session.load`` to its first step. Prints those and the background compile's wall time.

Each checkout is a folder holding a ``flock3d`` package (a git worktree of the commit to
compare). Each measurement is a fresh process with an empty step cache (its own
``FLOCK3D_CACHE_DIR``) that imports that checkout, builds the flock of the default scene (or
``--scene NAME``) and takes one step: the step is generated and compiled then. With
``--fresh-install`` numba's cache is empty too (its own ``NUMBA_CACHE_DIR``): everything the step
shares with other scenes (the driver, the turn and move, a world's distances) compiles as well, as
on a new machine. The versions alternate, round after round. Prints each version's first-step
seconds, their median, and the median of import + build.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
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
from flock3d.scene import resolve_scene
flock = Flock.from_scene(resolve_scene({name!r}))
t1 = time.perf_counter()
flock.step(1)
print(json.dumps({{"build": t1 - t0, "first": time.perf_counter() - t1}}))
"""


OPEN = """
import json, sys, time
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
import flock3d
assert flock3d.__file__.startswith({root!r}), flock3d.__file__
from flock3d.flock import Flock
from flock3d.scene import resolve_scene
flock = Flock.from_scene(resolve_scene({name!r}))
flock.step(1)
print(json.dumps({{"open": time.perf_counter() - t0}}))
"""


AFTER_BACKGROUND = """
import json, sys, time
sys.path.insert(0, {root!r})
import flock3d
assert flock3d.__file__.startswith({root!r}), flock3d.__file__
from flock3d.scene import resolve_scene, shipped_scenes
from flock3d.viewer.session import Session, shipped_mark
names = tuple({names!r}) or tuple(shipped_scenes())
t0 = time.perf_counter()
session = Session(resolve_scene("default"))
session.start()
while not session.first_step_done:
    time.sleep(0.05)
first = time.perf_counter() - t0
session.precompile_shipped(after=0.0, names=names)
while not shipped_mark(names).exists():
    time.sleep(0.2)
background = time.perf_counter() - t0 - first
opened = {{}}
for name in names:
    scene = resolve_scene(name)
    t = time.perf_counter()
    session.load(scene)
    generation = session.snapshot().generation
    while not (session.snapshot().generation == generation and session.snapshot().step_count > 0):
        assert session.error is None, session.error
        time.sleep(0.01)
    opened[name] = time.perf_counter() - t
session.stop()
print(json.dumps({{"first": first, "background": background, "open": opened}}))
"""


def after_background(root: Path, names: list[str]) -> None:
    """Print each scene's seconds to open in a viewer's session once the background compile is done."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as numba_cache:
        env = {**os.environ, "FLOCK3D_CACHE_DIR": cache, "NUMBA_CACHE_DIR": numba_cache}
        code = AFTER_BACKGROUND.format(root=str(root.resolve()), names=names)
        result = run_fresh(code, str(root), env)
    first, background = result["first"], result["background"]
    print(f"default scene's first step {first:.1f} s; background compile {background:.1f} s")
    print(f"{'scene':36} {'open s':>7}")
    for name, seconds in result["open"].items():
        print(f"{name:36} {seconds:7.2f}")
    print(f"{'(largest; median)':36} {max(result['open'].values()):7.2f}   "
          f"({statistics.median(result['open'].values()):.2f})")  # fmt: skip


def scene_table(root: Path, names: list[str]) -> None:
    """Print each scene's seconds to open from a cache warmed only by the scenes before it, then warm."""
    root = root.resolve()
    if not names:
        sys.path.insert(0, str(root))
        from flock3d.scene import shipped_scenes

        names = shipped_scenes()
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as numba_cache:
        env = {**os.environ, "FLOCK3D_CACHE_DIR": cache, "NUMBA_CACHE_DIR": numba_cache}
        rows = {}
        for pass_ in ("cold", "warm"):
            for name in names:
                seconds = run_fresh(OPEN.format(root=str(root), name=name), name, env)["open"]
                rows.setdefault(name, {})[pass_] = seconds
                print(f"  {pass_:4} {name:36} {seconds:6.1f} s", file=sys.stderr, flush=True)
    print(f"{'scene':36} {'cold s':>7} {'warm s':>7}")
    for name, row in rows.items():
        print(f"{name:36} {row['cold']:7.1f} {row['warm']:7.1f}")
    cold = [row["cold"] for row in rows.values()]
    warm = [row["warm"] for row in rows.values()]
    print(f"{'(largest; median)':36} {max(cold):7.1f} {max(warm):7.1f}   ({statistics.median(cold):.1f}; "
          f"{statistics.median(warm):.1f})")  # fmt: skip


def measure(root: Path, name: str, fresh_install: bool) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "FLOCK3D_CACHE_DIR": cache}
        if fresh_install:
            env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")
        return run_fresh(MEASURE.format(root=str(root.resolve()), name=name), str(root), env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="a checkout (with --scenes: the one to measure)")
    parser.add_argument("new", nargs="*", help="a checkout (with --scenes: scene names; default all)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scene", default="default", help="the scene of the side-by-side runs")
    parser.add_argument(
        "--fresh-install", action="store_true", help="side by side, with numba's cache empty too"
    )
    parser.add_argument("--scenes", action="store_true", help="every shipped scene's open, cold and warm")
    parser.add_argument(
        "--after-background", action="store_true", help="every shipped scene's open in a viewer's session"
    )
    args = parser.parse_args()
    if args.after_background:
        after_background(args.old, args.new)
        return
    if args.scenes:
        scene_table(args.old, args.new)
        return
    if len(args.new) != 1:
        parser.error("give OLD_CHECKOUT NEW_CHECKOUT (or --scenes CHECKOUT)")
    args.new = Path(args.new[0])
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for r in range(args.rounds):
        for version in ("old", "new") if r % 2 == 0 else ("new", "old"):
            root = args.old if version == "old" else args.new
            runs[version].append(measure(root, args.scene, args.fresh_install))
    for version, root in (("old", args.old), ("new", args.new)):
        firsts = [x["first"] for x in runs[version]]
        build = statistics.median(x["build"] for x in runs[version])
        print(f"{version} {root}: first step {', '.join(f'{x:.1f}' for x in firsts)} s, "
              f"median {statistics.median(firsts):.1f} s; import + build {build:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
