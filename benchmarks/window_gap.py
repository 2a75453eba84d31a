"""Two versions of flock3d, side by side: the viewer window's longest gap between event-loop turns
while compiles run (issue 33: no freeze over 100 ms).

    python benchmarks/window_gap.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 2]

Each measurement is a fresh process under ``xvfb-run`` that imports that checkout and opens the
default scene (300 boids) in a 1280x800 window, with an empty step cache and an empty numba
cache of its own (``FLOCK3D_CACHE_DIR``, ``NUMBA_CACHE_DIR``): what a fresh install compiles.
Once the first scene steps, a 5 ms Qt timer records each turn of the event loop while every
colour mode is shown for 0.4 s (the neighbour counts compile), then ``couzin/torus``,
``worlds/canyon`` (its boids' placement compiles the objects' distances) and ``default`` are
opened, each once the one before steps. The versions alternate, round after round. Prints each
run's longest gap, its 99th percentile, the gaps over 100 ms, the longest pause of the
interpreter's garbage collector while measuring, the turns and seconds measured, and each scene's
seconds from its open to its fifth step.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MEASURE = """
import json, os, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import vispy
vispy.use(app="pyside6", gl="gl+")
from vispy import app
app.use_app().create()
import flock3d
assert flock3d.__file__.startswith({root!r}), flock3d.__file__
from PySide6 import QtCore
from flock3d.core.compiling import compiling_since
from flock3d.scene import resolve_scene
from flock3d.scene.schema import COLOR_MODES
from flock3d.viewer.app import ViewerWindow
try:
    from flock3d.viewer.event_loop import run_event_loop
except ImportError:  # a checkout from before it had its module
    from flock3d.viewer.app import run_event_loop

out = {out!r}
v = ViewerWindow(resolve_scene("default", overrides=["flock.count=300"]), output_dir=out, dialogs=False)
v.show()


def until(done, seconds):
    deadline = time.time() + seconds
    while not done() and time.time() < deadline:
        run_event_loop(0.05)
    return done()


assert until(lambda: v.session.first_step_done and v.snapshot.step_count > 0, 600), "no first step"
run_event_loop(0.5)
ticks, phase = [], ["colour modes"]
import gc
collections, collecting = [], [0.0]  # the interpreter's own pauses: (generation, seconds)
gc.callbacks.append(lambda stage, info: collecting.__setitem__(0, time.perf_counter()) if stage == "start"
                    else collections.append((info["generation"], time.perf_counter() - collecting[0])))
timer = QtCore.QTimer()
timer.timeout.connect(lambda: ticks.append((time.monotonic(), phase[0])))
timer.start(5)
began = time.monotonic()
for mode in COLOR_MODES:
    phase[0] = "colour mode " + mode
    v.panel.color_mode.setCurrentText(mode)
    run_event_loop(0.4)
opens = {{}}
for name in ("couzin/torus", "worlds/canyon", "default"):
    phase[0] = "opening " + name
    opened = time.monotonic()
    assert v.open_scene(resolve_scene(name, overrides=["flock.count=200"]).save(os.path.join(out, "s.toml")))
    generation = v.session.snapshot().generation
    phase[0] = "waiting for " + name
    until(lambda: v.session.snapshot().generation == generation and v.session.snapshot().step_count > 5, 600)
    opens[name] = time.monotonic() - opened
    run_event_loop(0.3)
phase[0] = "neighbours again"
v.panel.color_mode.setCurrentText("neighbours")
until(lambda: v.visuals.last.neighbour_counts is not None and compiling_since() is None, 600)
run_event_loop(0.3)
timer.stop()
gaps = np.diff([t for t, _ in ticks])
worst = [f"{{1000 * gaps[k]:.0f}} ms {{ticks[k + 1][1]}}" for k in np.argsort(gaps)[::-1][:4]]
print(json.dumps({{"longest": float(gaps.max()), "worst": worst, "p99": float(np.percentile(gaps, 99)),
                  "over_100ms": int((gaps > 0.1).sum()), "turns": len(ticks),
                  "collection": max((seconds for _, seconds in collections), default=0.0),
                  "seconds": time.monotonic() - began, "opens": opens, "error": str(v.session.error or "")}}))
v.close()
run_event_loop(0.2)
"""


def measure(root: Path) -> dict:
    """One fresh process's gaps for the checkout ``root``."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        code = MEASURE.format(root=str(root.resolve()), out=out)
        env = {**os.environ, "FLOCK3D_CACHE_DIR": cache, "NUMBA_CACHE_DIR": os.path.join(cache, "numba")}
        result = subprocess.run(
            ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", sys.executable, "-P", "-c", code],
            capture_output=True, text=True, env=env, timeout=1800,
        )  # fmt: skip
        lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
        if result.returncode != 0 or not lines:
            raise SystemExit(f"{root}: status {result.returncode}\n{result.stderr[-3000:]}")
        return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for r in range(args.rounds):
        for version in ("old", "new") if r % 2 == 0 else ("new", "old"):
            root = args.old if version == "old" else args.new
            load = os.getloadavg()[0]
            m = measure(root)
            failed = f" {m['error']}" if m["error"] else ""
            worst = "; ".join(m["worst"])
            opens = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in m["opens"].items())
            print(f"{version} {root}: longest gap {1000 * m['longest']:.0f} ms, 99th percentile "
                  f"{1000 * m['p99']:.0f} ms, {m['over_100ms']} gaps over 100 ms, longest garbage "
                  f"collection {1000 * m['collection']:.0f} ms, {m['turns']} turns in "
                  f"{m['seconds']:.1f} s (load {load:.1f} at the start); worst: {worst}; open to 5th step: "
                  f"{opens}{failed}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
