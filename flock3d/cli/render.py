"""The commands that draw a flock: ``view`` (the interactive window) and ``render`` (a video or
an image, offscreen)."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from pathlib import Path

from flock3d.cli.errors import signal_status
from flock3d.cli.inputs import (
    check_rules,
    is_recording,
    output_path,
    recorded_scene,
    require,
    rules_from,
    scene_from,
)
from flock3d.cli.options import (
    check_engine,
    engine_argument,
    engine_of,
    positive_int,
    refuse_scene_options,
    rules_argument,
    scene_argument,
    seed,
    set_argument,
)
from flock3d.cli.words import counted
from flock3d.errors import Flock3dError


def add_view(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "view",
        help="watch a scene in the interactive 3D viewer (the default scene if none is given)",
        description="Open the viewer: orbit the flock, tweak its parameters live, load and save "
        "scenes, take screenshots and record videos. Press h in the window for the shortcuts.",
    )
    scene_argument(p, nargs="?")
    p.add_argument("--seed", type=seed, help="seed of the initial state (default: the scene's)")
    set_argument(p)
    rules_argument(p)
    engine_argument(p)
    return p


def run_view(args: argparse.Namespace) -> int:
    require("viewer")
    from flock3d.viewer.app import check_display, run_viewer

    rules, forces = rules_from(args)
    scene = scene_from(args, args.scene, (rules, forces))
    check_rules(rules, forces)  # refused here, in one line, rather than in the window
    check_engine(engine_of(args, scene), scene.params, rules, forces)
    check_display()
    return run_viewer(scene, rules, forces, args.engine)


def image_size(text: str) -> tuple[int, int]:
    width, sep, height = text.lower().partition("x")
    try:
        w, h = int(width), int(height)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT like 800x600, got {text!r}") from None
    if not sep or w < 16 or h < 16 or w > 8192 or h > 8192:
        raise argparse.ArgumentTypeError(f"width and height must be from 16 to 8192 pixels, got {text!r}")
    return w, h


#: Bounds of `flock3d render`, so that a mistyped number cannot run for ever.
MAX_RENDER_FRAMES = 100_000
"""About 55 minutes of video at 30 frames/s."""
MAX_RENDER_STEPS = 10_000_000
"""Simulation steps a render of a scene may take (--start and the frames together)."""
RENDER_FPS_RANGE = (1.0, 240.0)


def video_fps(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    low, high = RENDER_FPS_RANGE
    if not low <= value <= high:  # one range in one sentence, 0 and nan alike
        raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g} frames per second, got {text}")
    return value


def frame_count(text: str) -> int:
    value = positive_int(text)
    if value > MAX_RENDER_FRAMES:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_RENDER_FRAMES:,} frames (about 55 minutes at 30 fps), got {value:,}"
        )
    return value


def start_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text}")
    return value


def add_render(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from flock3d.viewer.offscreen import CAMERAS

    p = sub.add_parser(
        "render",
        help="render a scene or a recorded trajectory to an MP4 video or a PNG image",
        description="Render offscreen (EGL), with the viewer's look. From a scene, the flock is "
        "simulated as it renders; from a trajectory (.h5), its recorded frames are drawn. "
        "Videos play at the simulation's pace: one second of video is one simulated second.",
    )
    p.add_argument("source", metavar="SCENE|TRAJ.h5", help="a scene (file or shipped name) or a trajectory")
    p.add_argument(
        "--out", required=True, metavar="OUT.mp4|OUT.png", help="video (.mp4) or image (.png) to write"
    )
    p.add_argument(
        "--frames",
        type=frame_count,
        help=f"frames to render, at most {MAX_RENDER_FRAMES:,} (default: 300 from a scene, the whole "
        "recording from a trajectory); a PNG shows the video's frame N alone, the flock at "
        "t = start + (N - 1) / fps, not the recording's Nth frame (default: the first frame of a scene, "
        "the last of a trajectory, or its frame at --start)",
    )
    p.add_argument(
        "--start",
        type=start_seconds,
        default=None,
        metavar="SECONDS",
        help="begin this many simulated seconds in: a scene is simulated that long without drawing "
        "(film a mill or a murmuration once formed); a trajectory skips its frames before it "
        "(default: a scene's view.start, else 5 s for a still and 0 for a video; 0 for a trajectory)",
    )
    p.add_argument(
        "--size",
        type=image_size,
        default=(800, 600),
        metavar="WxH",
        help="image size in pixels, 16 to 8192 a side; a video's sides are even and it holds at most "
        "8192x4320 (default 800x600)",
    )
    p.add_argument(
        "--camera",
        choices=CAMERAS,
        help="camera motion (default: the scene's view.camera when it is follow or fixed, else orbit)",
    )
    p.add_argument(
        "--fps",
        type=video_fps,
        help="video frames per second, 1 to 240 (default 30, or a trajectory's own rate when it is "
        "10 to 60); the video shows the flock at real speed whatever the rate",
    )
    p.add_argument("--seed", type=seed, help="seed, when rendering a scene")
    set_argument(p)
    rules_argument(p)
    engine_argument(p, scene_only="when rendering a scene: ")
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    return p


def run_render(args: argparse.Namespace) -> int:
    """Render frames at simulated times start, start + 1/fps, start + 2/fps, ... (real speed)."""
    from flock3d.flock import Flock
    from flock3d.io import Trajectory
    from flock3d.io.playback import (
        check_recording,
        check_scene,
        playback,
        recorded_frames,
        simulated_frames,
        simulated_playback,
    )
    from flock3d.io.video import check_video_size
    from flock3d.scene.schema import STILL_START

    out = output_path(args.out, (".mp4", ".png"), "--out")
    is_png = out.suffix.lower() == ".png"
    if not is_png:
        check_video_size(*args.size, "--size")
    require("viewer", ("vispy", "OpenGL", "imageio", "imageio_ffmpeg"))  # not Qt: offscreen
    with contextlib.ExitStack() as stack:
        if is_recording(args.source):
            refuse_scene_options(args, ("set", "seed", "rules", "engine"))
            traj = stack.enter_context(Trajectory(args.source))
            if traj.n_frames == 0:
                raise Flock3dError(f"{args.source}: the trajectory has no frames")
            scene = recorded_scene(traj, "render")
            check_scene(scene)
            plan = playback(traj.times, args.fps, args.start, args.frames, still=is_png,
                            max_frames=MAX_RENDER_FRAMES)  # fmt: skip
            check_recording(traj, plan.indices, args.source)  # before any frame is drawn
            frames, recorded = recorded_frames(traj, plan), traj.n_frames
        else:
            rules, forces = rules_from(args)
            scene = scene_from(args, args.source, (rules, forces))
            check_scene(scene)
            check_engine(engine_of(args, scene), scene.params, rules, forces)
            start = args.start if args.start is not None else scene.view.start
            if start is None:
                start = STILL_START if is_png else 0.0
            plan = simulated_playback(scene.params.dt, args.fps, start, args.frames, still=is_png,
                                      max_steps=MAX_RENDER_STEPS)  # fmt: skip
            frames = simulated_frames(
                Flock.from_scene(scene, rules=rules, forces=forces, engine=args.engine), plan
            )
            recorded = None
        return render_frames(args, out, is_png, scene, frames, plan, recorded)


def render_frames(args, out: Path, is_png: bool, scene, frames, plan, recorded: int | None = None) -> int:
    """Draw ``frames``, the (state, acceleration) pairs of ``plan``
    (:class:`flock3d.io.playback.Playback`): a PNG or an MP4. ``recorded``: the frames of the
    recording they are taken from (None: simulated)."""
    from flock3d.io.video import write_image, write_video
    from flock3d.runner import stop_on_signals
    from flock3d.viewer.offscreen import OffscreenRenderer

    first, start, fps = plan.first, plan.start, plan.fps
    with OffscreenRenderer(scene, size=args.size, camera=args.camera, fps=fps) as renderer:
        renderer.frames_rendered = first  # the orbit's angle at that frame
        if is_png:
            state, acceleration = next(iter(frames))
            write_image(out, renderer.render(state, acceleration))
            # Which recorded frame, not the video frame --frames counts: the recording's own numbers.
            size = f"{args.size[0]}x{args.size[1]}"
            k = int(plan.indices[0]) + 1
            which = "" if recorded is None else f": recorded frame {k:,} of {recorded:,}"
            print(f"wrote {out} ({size}, {scene.name!r} at t = {state.time:.2f} s{which})")
            return 0
        images = (renderer.render(state, acceleration) for state, acceleration in frames)
        with stop_on_signals() as stop:  # a video stopped early keeps its frames, as a run does
            count, written = write_video(out, images, fps, total=len(plan.indices),
                                         progress=False if args.no_progress else None, stop=stop)  # fmt: skip
    if stop:
        if written is None:
            kept = "before its first frame; nothing written"
        else:
            kept = f"after {counted(count, 'frame')}, kept in {written}"
            if written != out:
                kept += f" ({out}, there before, is kept as it was)"
        print(f"flock3d render: stopped by {stop.signal_name} {kept}", file=sys.stderr)
        return signal_status(stop.signal_name)
    # Frame k shows the flock at start + k / fps: the video's clock is the flock's, and its
    # frames cover [start, start + frames / fps).
    seconds = count / fps
    short = args.frames is not None and len(plan.indices) < args.frames  # a recording holds no more
    print(
        f"wrote {out}: {counted(count, 'frame')}, {args.size[0]}x{args.size[1]}, {seconds:.2f} s at "
        f"{fps:g} fps, showing simulated t = {start:.2f} to {start + seconds:.2f} s "
        f"({scene.name!r}"
        + (
            f"; the recording holds {len(plan.indices):,} of the {args.frames:,} frames asked)"
            if short
            else ")"
        )
    )
    return 0
