"""Does the default scene stay alive? Ten simulated minutes, measured.

    python benchmarks/liveliness.py [SCENE] [--seconds 600] [--every 0.1] [--no-camera] [--json]
                                    [--set key=value ...]

Runs SCENE (default: the default scene, which ``flock3d view`` opens) with the fast engine,
samples it every ``--every`` simulated seconds and prints one row per property with the
bound the default scene must meet:

- **calm**: the longest stretch with polarization P > 0.98 (the whole flock flying as one
  rigid block): at most 20 s.
- **turns**: turns of the largest group (its mean heading turning through at least 90
  degrees within 10 s), counted per minute: at least one in every minute.
- **split**: the fraction of time with two or more groups: at least 10 %. A group is a
  connected component of :func:`flock3d.metrics.groups` at the scene's view distance (the
  link ``flock3d metrics`` uses) with at least 5 % of the flock, so a straggler is no group.
- **framed**: the fraction of samples in which the viewer's starting camera keeps the flock in
  frame (at least 90 % of the boids' centres inside the canvas): at least 95 %.
- **size**: the median on-screen body length of the boids over all samples, in canvas pixels
  of the default window: at least 12.

The last two use the viewer's own camera: the kind the scene names (``view.camera``) made by
:meth:`FlockVisuals.make_camera` on a headless canvas of the default window's canvas size,
moved as the window moves it (a follow camera recentred on the flock every frame), and the
projection vispy draws with. A body length is measured as the boids' shader measures it: one
boid length across the screen at the boid's depth (``u_px_per_unit * u_size / w``; the two
agree to 1e-8), and never under ``MIN_BOID_PIXELS``.
These need EGL (offscreen OpenGL); ``--no-camera`` leaves them out. ``--json`` prints the
measurements as one JSON object instead (tests/test_liveliness.py reads it: vispy binds one
backend a process, so the camera is measured in a process of its own).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time

import numpy as np

from flock3d import Flock, metrics
from flock3d.scene import Scene, resolve_scene

CALM_POLARIZATION = 0.98
CALM_LIMIT_S = 20.0
TURN_DEGREES = 90.0
TURN_WINDOW_S = 10.0
TURNS_PER_MINUTE = 1
GROUP_SHARE = 0.05
SPLIT_LIMIT = 0.10
IN_FRAME_SHARE = 0.90
FRAMED_LIMIT = 0.95
PIXELS_LIMIT = 12.0
CANVAS = (864, 778)
"""The 3D canvas of the viewer's default 1280 x 800 window (the panel takes the rest), pixels:
``python -m flock3d.viewer.measure 500 1`` prints it as ``canvas``."""


@dataclasses.dataclass
class Liveliness:
    """What :func:`measure` found over ``seconds`` of simulated time."""

    seconds: float
    calm_s: float
    """Longest stretch with P > CALM_POLARIZATION, s."""
    turns_per_minute: list[int]
    """Turns of the largest group in each whole minute (one entry if the run is shorter)."""
    split: float
    """Fraction of samples with two or more groups."""
    mean_polarization: float
    framed: float | None = None
    """Fraction of samples with the flock in frame (None: not measured)."""
    least_in_frame: float | None = None
    """The smallest share of the boids inside the canvas in any sample (None: not measured)."""
    pixels: float | None = None
    """Median on-screen body length, canvas pixels (None: not measured)."""
    failures: list[str] = dataclasses.field(default_factory=list)

    def rows(self) -> list[tuple[str, str, str]]:
        """(property, measured, bound) for printing."""
        rows = [
            ("longest stretch with P > 0.98", f"{self.calm_s:.1f} s", f"<= {CALM_LIMIT_S:.0f} s"),
            ("largest group's 90-degree turns per minute", " ".join(map(str, self.turns_per_minute)),
             f">= {TURNS_PER_MINUTE} every minute"),
            ("time with two or more groups", percent(self.split), f">= {percent(SPLIT_LIMIT)}"),
            ("mean polarization P", f"{self.mean_polarization:.2f}", "(for reference)"),
        ]  # fmt: skip
        if self.framed is not None:
            rows += [
                ("samples with the flock in frame", percent(self.framed, 1), f">= {percent(FRAMED_LIMIT)}"),
                ("least share of the boids in frame", percent(self.least_in_frame), "(for reference)"),
                ("median boid length on screen", f"{self.pixels:.1f} px", f">= {PIXELS_LIMIT:.0f} px"),
            ]  # fmt: skip
        return rows


def percent(share: float, decimals: int = 0) -> str:
    """``share`` (a fraction) as a percentage to print."""
    return f"{100 * share:.{decimals}f} %"


class ViewerCamera:
    """The viewer's starting camera for ``scene``, on a headless canvas of the default window's
    canvas size: projects boids as the window would show them."""

    def __init__(self, scene: Scene, positions: np.ndarray, size: tuple[int, int] = CANVAS):
        from flock3d.viewer.offscreen import use_offscreen

        use_offscreen()
        from flock3d.viewer.canvas import Canvas
        from flock3d.viewer.panel import CAMERA_KINDS
        from flock3d.viewer.renderer import MIN_BOID_PIXELS, FlockVisuals

        self.min_pixels = MIN_BOID_PIXELS
        self.size = np.asarray(size, float)
        self.canvas = Canvas(size=size, show=False)
        self.view = self.canvas.central_widget.add_view(border_width=0)
        self.visuals = FlockVisuals(self.view, scene.view, scene.params)
        # As SceneController.apply and ViewerWindow.set_camera choose and frame it (no boid in focus).
        self.kind = scene.view.camera if scene.view.camera in CAMERA_KINDS else "orbit"
        self.visuals.make_camera(self.kind, positions)

    def look(self, positions: np.ndarray) -> tuple[float, np.ndarray]:
        """Move the camera as the window does each frame, then (share of the boids inside the
        canvas, (N,) on-screen body lengths in pixels)."""
        camera = self.view.camera
        if self.kind == "follow":  # FrameLoop.push_state: the centre goes with the flock
            camera.center = tuple(self.visuals.flock_extent(positions)[0])
        tr = self.view.scene.node_transform(self.canvas.scene)
        eye = tr.imap(np.array([[*(self.size / 2), 0.0, 1.0], [*(self.size / 2), 0.5, 1.0]]))
        eye = eye[:, :3] / eye[:, 3:4]
        right = tr.imap(np.array([[self.size[0] / 2 + 1, self.size[1] / 2, 0.0, 1.0]]))[0]
        into = eye[1] - eye[0]
        right = right[:3] / right[3] - eye[0]
        right -= into * (right @ into) / (into @ into)
        right /= np.linalg.norm(right)
        centre = tr.map(positions)
        ahead = tr.map(positions + self.visuals.boid_size * right)
        xy, xy_ahead = centre[:, :2] / centre[:, 3:4], ahead[:, :2] / ahead[:, 3:4]
        in_front = centre[:, 3] > 0
        inside = in_front & np.all((xy >= 0) & (xy <= self.size), axis=1)
        lengths = np.maximum(np.linalg.norm(xy_ahead - xy, axis=1), self.min_pixels)
        return float(np.mean(inside)), lengths[in_front]

    def close(self) -> None:
        self.canvas.close()


def longest_run(flags: np.ndarray) -> int:
    """Length of the longest run of True in ``flags`` (1-D bool)."""
    best = run = 0
    for flag in flags:
        run = run + 1 if flag else 0
        best = max(best, run)
    return best


def turn_times(headings: np.ndarray, dt: float) -> np.ndarray:
    """Times (s) at which turns of at least TURN_DEGREES end: from each reference sample, the
    first sample within TURN_WINDOW_S whose heading is that far from it; a turn found becomes
    the next reference, so one turn is counted once.

    Args:
        headings: (T, 3) unit headings, one per sample.
        dt: time between samples, s.
    """
    window = max(1, int(round(TURN_WINDOW_S / dt)))
    cos_turn = math.cos(math.radians(TURN_DEGREES))
    found, i = [], 0
    while i < len(headings) - 1:
        ahead = headings[i + 1 : i + 1 + window] @ headings[i]
        hit = np.flatnonzero(ahead <= cos_turn)
        if len(hit):
            i += 1 + int(hit[0])
            found.append(i * dt)
        else:
            i += 1
    return np.asarray(found)


def measure(scene: Scene, seconds: float = 600.0, every: float = 0.1, camera: bool = True) -> Liveliness:
    """Run ``scene`` (fast engine) for ``seconds`` and measure its liveliness every ``every`` s.

    Args:
        scene: the scene, run from its own seed.
        seconds: simulated time, s.
        every: sampling interval, s (rounded to whole steps).
        camera: measure framing and on-screen size with the viewer's camera (needs EGL).
    """
    params = scene.params
    steps = max(1, int(round(every / params.dt)))
    dt = steps * params.dt
    samples = int(round(seconds / dt))
    flock = Flock.from_scene(scene)
    viewer = ViewerCamera(scene, flock.positions) if camera else None
    link, smallest = params.perception_distance, max(2, math.ceil(GROUP_SHARE * len(flock)))
    polar, split, headings, shares, lengths = [], [], [], [], []
    try:
        for _ in range(samples):
            flock.step(steps)
            p, v = flock.positions, flock.velocities
            polar.append(metrics.polarization(v))
            _, labels = metrics.groups(p, link)
            sizes = np.bincount(labels)
            split.append(np.count_nonzero(sizes >= smallest) >= 2)
            mean = v[labels == np.argmax(sizes)].mean(axis=0)
            headings.append(mean / np.linalg.norm(mean))
            if viewer is not None:
                share, pixels = viewer.look(p)
                shares.append(share)
                lengths.append(np.median(pixels) if len(pixels) else 0.0)
    finally:
        if viewer is not None:
            viewer.close()
    turns = turn_times(np.array(headings), dt)
    minutes = max(1, int(seconds // 60))
    per_minute = [int(np.count_nonzero((turns >= 60 * m) & (turns < 60 * (m + 1)))) for m in range(minutes)]
    result = Liveliness(
        seconds=samples * dt,
        calm_s=longest_run(np.array(polar) > CALM_POLARIZATION) * dt,
        turns_per_minute=per_minute,
        split=float(np.mean(split)),
        mean_polarization=float(np.mean(polar)),
        framed=float(np.mean(np.array(shares) >= IN_FRAME_SHARE)) if viewer is not None else None,
        least_in_frame=float(np.min(shares)) if viewer is not None else None,
        pixels=float(np.median(lengths)) if viewer is not None else None,
    )
    result.failures = failures(result)
    return result


def failures(result: Liveliness) -> list[str]:
    """The bounds ``result`` misses, one line each (empty: it is alive)."""
    r, out = result, []
    if r.calm_s > CALM_LIMIT_S:
        out.append(f"P > {CALM_POLARIZATION} for {r.calm_s:.1f} s on end (at most {CALM_LIMIT_S:.0f} s)")
    if min(r.turns_per_minute) < TURNS_PER_MINUTE:
        out.append(f"a minute without a {TURN_DEGREES:.0f}-degree turn: {r.turns_per_minute}")
    if r.split < SPLIT_LIMIT:
        out.append(f"two or more groups {percent(r.split)} of the time (at least {percent(SPLIT_LIMIT)})")
    if r.framed is not None and r.framed < FRAMED_LIMIT:
        out.append(
            f"the flock in frame {percent(r.framed, 1)} of the samples (at least {percent(FRAMED_LIMIT)})"
        )
    if r.pixels is not None and r.pixels < PIXELS_LIMIT:
        out.append(f"boids {r.pixels:.1f} px long (at least {PIXELS_LIMIT:.0f})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scene", nargs="?", default="default")
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--every", type=float, default=0.1)
    parser.add_argument("--no-camera", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    scene = resolve_scene(args.scene, overrides=args.set)
    start = time.perf_counter()
    result = measure(scene, args.seconds, args.every, camera=not args.no_camera)
    if args.json:
        print(json.dumps(dataclasses.asdict(result)))
        return
    print(f"{args.scene} {' '.join(args.set)}: {result.seconds:.0f} simulated s, every {args.every} s "
          f"({time.perf_counter() - start:.0f} s of wall time)")  # fmt: skip
    width = max(len(name) for name, _, _ in result.rows())
    for name, value, bound in result.rows():
        print(f"  {name:<{width}}  {value:>22}  {bound}")
    print("  alive" if not result.failures else "  NOT ALIVE: " + "; ".join(result.failures))


if __name__ == "__main__":
    main()
