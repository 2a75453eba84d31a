"""A recorded flock as one self-contained HTML page that plays it in any browser, offline.

The page holds everything it needs: three.js (a tree-shaken, minified bundle of the release
on npm, ``vendor/three-flock3d.min.js``, inlined as a classic script with its MIT licence;
``vendor/build.sh`` says why and how it is made), the player (``player.js``), the world's
objects and every frame. It fetches nothing: it plays from ``file://`` with no network.

What it shows: the boids as one instanced mesh per boid shape (the scene's ``view.mesh``, or a
species' own), coloured by species; predators as larger red cones; the world's objects lit by
the viewer's low sun and the sky, casting and catching shadows, fading into a night-to-dusk
sky; an orbit camera starting where the viewer's does; play/pause, a time slider and the time.
Between two frames positions are interpolated (but not across a periodic wrap) and turns
blended. The URL's hash picks a moment: ``#t=2.5&paused``.

**Packing** (little-endian, per frame, in blocks of about :data:`BLOCK_BYTES` each in its own
base64 ``<script>``, in this order for the whole block):

- the frame's box: float32 lowest corner (3) and step (3), the box of its boids and predators
  divided into 65,535 steps per axis;
- each boid's orientation as a uint32, "smallest three": bits 30-31 name the largest
  component of the unit quaternion (w, x, y, z; its sign made positive), the other three in
  order as 10 bits each over [-1/sqrt(2), 1/sqrt(2)];
- each moving object's frame: float32 rotation (3 x 3, rows) and origin (3);
- each boid's position as uint16 (3): steps from the lowest corner.

Error bounds: a position is off by at most half a step, ``side / 131070`` per axis (``side``:
the frame's box along it); each stored quaternion component by at most half its step,
``sqrt(2) / 2046`` (6.9e-4), the largest one rebuilt from the unit norm, so that an orientation
is turned by at most 0.25 degree.

**Size.** Frames take ``4/3 * (24 + 10 (N + M) + 48 K)`` bytes each in the page (N boids, M
predators, K moving objects; base64), besides about 0.6 MB of player and three.js and the
world's meshes: 1,000 boids at 30 frames a second are 24 MB a minute. A page that would
exceed :data:`MAX_HTML_BYTES` is refused before anything is written.

Memory: frames are read from the recording a block at a time; what is held is the block
being packed, never the whole recording in float64.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import numpy as np

from flock3d.io.export.common import ExportError, checked_frames, world_objects
from flock3d.io.trajectory import Trajectory
from flock3d.look.boids import PREDATOR_SCALE
from flock3d.look.camera import (
    BOX_SHAPES,
    CAMERA_FOV,
    flock_extent,
    frame_distance,
    view_direction,
    world_extent,
)
from flock3d.scene.schema import STILL_START, ViewHints

__all__ = [
    "SUFFIXES",
    "MAX_HTML_BYTES",
    "BLOCK_BYTES",
    "write",
    "pack_turns",
    "frame_bytes",
]

SUFFIXES = (".html",)
MAX_HTML_BYTES = 100_000_000
"""The largest page written, bytes (100 MB: 4,000 boid-minutes at 30 frames a second, or the
murmuration's 25,000 boids for 20 s at 10): a page a browser reads and holds comfortably (it
decodes every frame into memory when it opens, about 2.8x the packed size); a longer or larger
recording is for ``--every`` or USD."""
BLOCK_BYTES = 1 << 20
"""Packed bytes of frames per ``<script>`` block (before base64)."""
MIN_BOID_PIXELS = 7.0
"""A boid is drawn at least this many pixels long, however far away (as in the viewer)."""
FOG_HORIZON = 4.0
"""Objects fade into the sky over this many world diameters beyond the world's far side."""
_QUANTA = 65535
_TURN_HALF = 511.5
_TURN_SCALE = math.sqrt(0.5) / _TURN_HALF


# -- the viewer's look ---------------------------------------------------------------------------
# The page draws what the viewer draws: boid shapes, colours, the world's meshes and the camera's
# framing come from flock3d.look (no graphics library). The few constants below live in the viewer's vispy
# renderer, which io cannot import; each names its twin there.

PLANE_EXTENT = 25.0
"""A plane is drawn this many world radii each way, far into the fog (renderer.PLANE_EXTENT)."""
WING_BEATS_PER_SECOND, WING_BEAT = 3.0, 0.3
"""A bird's wing beats, per second, and how far its tips move, body lengths (renderer)."""
ARENA_COLOR = (0.6, 0.72, 1.0, 0.16)
"""The arena's outline, RGBA (renderer.ARENA_COLOR)."""


def frame_bytes(boids: int, moving: int = 0) -> int:
    """Packed bytes of one frame (before base64) of ``boids`` boids and predators and
    ``moving`` moving objects."""
    return 24 + 10 * boids + 48 * moving


def pack_turns(q: np.ndarray) -> np.ndarray:
    """(P,) uint32: unit quaternions ``q`` (P, 4) w, x, y, z, as "smallest three" words."""
    q = np.asarray(q, np.float64)
    big = np.argmax(np.abs(q), axis=1)
    rows = np.arange(len(q))
    q = q * np.where(q[rows, big] < 0.0, -1.0, 1.0)[:, None]
    others = np.array([[c for c in range(4) if c != b] for b in range(4)])[big]  # (P, 3)
    small = np.take_along_axis(q, others, axis=1)
    units = np.clip(np.rint(small / _TURN_SCALE + _TURN_HALF), 0, 1023).astype(np.uint32)
    return (big.astype(np.uint32) << 30) | (units[:, 0] << 20) | (units[:, 1] << 10) | units[:, 2]


def _asset(name: str) -> str:
    return resources.files("flock3d.io.export").joinpath(name).read_text(encoding="utf-8")


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def _mesh_record(vertices, faces, normals=None) -> dict:
    """A mesh for the page: float32 vertices, int8 normals (unit times 127) and uint16 or
    uint32 indices (uint32 past 65,535 vertices), each base64."""
    vertices = np.asarray(vertices, "<f4")
    wide = len(vertices) > 65535
    record = {
        "vertices": _b64(vertices),
        "faces": _b64(np.asarray(faces, "<u4" if wide else "<u2")),
        "wide": wide,
        "normals": None,
    }
    if normals is not None:
        record["normals"] = _b64(np.rint(np.asarray(normals, np.float64) * 127.0).astype(np.int8))
    return record


def _objects(params, radius: float, times: np.ndarray) -> tuple[list[dict], list[int]]:
    """The world's objects as the page draws them (planes far into the fog), and which move."""
    from flock3d.look.world import Frames

    objects, frames = world_objects(params, PLANE_EXTENT * radius) if params is not None else ([], Frames(()))
    origins, rotations = frames.at(float(times[0]))
    records = [
        {
            "color": list(o.color),
            "arena": o.role == "arena",
            "ground": o.ground,
            "mesh": _mesh_record(o.mesh.vertices, o.mesh.faces, o.mesh.normals),
            "frame": [*rotations[o.index].ravel().tolist(), *origins[o.index].tolist()],
            "moving": frames.moving.index(o.index) if o.index in frames.moving else None,
            # The ground's own colours by height and slope, as the viewer's: sRGB bytes a vertex.
            "colors": _b64(np.rint(o.colors * 255.0).astype(np.uint8)) if o.colors is not None else None,
        }
        for o in objects
    ]
    return records, list(frames.moving)


def _boid_groups(params, hints: ViewHints, n: int, m: int) -> tuple[list[dict], list, list[int]]:
    """The instanced meshes (one per shape, each with its rows among the packed boids), the
    colour palette and each row's colour in it."""
    from flock3d.look.boids import mesh, wing_beat
    from flock3d.look.colors import PREDATOR_COLOR, species_colors

    species = params.species_of_boids if params is not None and n else np.zeros(n, np.int32)
    if len(species) != n:  # a recording whose flock differs from its scene's count
        species = np.zeros(n, np.int32)
    looks = hints.species
    colours = species_colors(species, tuple(s.color for s in looks))[:, :3] if n else np.zeros((0, 3))
    palette, index = np.unique(np.round(colours, 6), axis=0, return_inverse=True)
    palette = [*palette.tolist(), list(PREDATOR_COLOR[:3])]
    rows_colour = [*np.asarray(index).ravel().tolist(), *[len(palette) - 1] * m]
    shapes: dict[str, list[int]] = {}
    for row, k in enumerate(species.tolist()):
        shape = (looks[k].mesh if k < len(looks) else None) or hints.mesh
        shapes.setdefault(shape, []).append(row)
    groups = [
        {
            "mesh": _mesh_record(*mesh(shape)),
            "rows": rows,
            "size": hints.boid_size,
            "flap": _b64(wing_beat(shape).astype("<f4")),
            "beat": WING_BEAT if shape == "bird" else 0.0,
        }
        for shape, rows in shapes.items()
    ]
    if m:
        groups.append(
            {
                "mesh": _mesh_record(*mesh("cone")),
                "rows": list(range(n, n + m)),
                "size": hints.boid_size * PREDATOR_SCALE,
                "flap": _b64(wing_beat("cone").astype("<f4")),
                "beat": 0.0,
            }
        )
    return groups, palette, rows_colour


def _framing(recording: Trajectory, params, hints: ViewHints) -> tuple[np.ndarray, float]:
    """Centre and radius the camera frames: the world's, or in open space the flock's at the
    moment a still of the scene shows (its ``view.start``, else :data:`STILL_START` s in)."""
    if params is not None and (
        params.arena_shape != "none" or any(o.role == "arena" for o in params.objects)
    ):
        return world_extent(params)
    times = recording.times
    when = hints.start if hints.start is not None else STILL_START
    state = recording.frame(min(int(np.searchsorted(times, when)), len(times) - 1))
    points = (
        np.vstack([state.positions, state.predator_positions]) if recording.n_predators else state.positions
    )
    points = points[np.all(np.isfinite(points), axis=1)]
    if not len(points):
        return np.zeros(3), 4.0 * hints.boid_size
    return flock_extent(points, hints.boid_size)


def _camera(params, hints: ViewHints, centre: np.ndarray, radius: float) -> dict:
    """Where the page's orbit camera starts: the viewer's turntable at the scene's angles."""
    distance = hints.camera_distance or frame_distance(radius)
    planar = params is not None and params.dimensions == 2  # watched from +z
    offset = view_direction(hints.camera_azimuth, hints.camera_elevation, planar)
    return {
        "fov": CAMERA_FOV,
        "up": [0.0, 1.0, 0.0],
        "eye": (centre + distance * offset).tolist(),
        "target": centre.tolist(),
        "near": 0.002 * distance,
        "far": distance + 60.0 * radius,
    }


def _meta(recording: Trajectory, times: np.ndarray) -> tuple[dict, list[int]]:
    """Everything the page needs but the frames, and which objects move."""
    from flock3d.core.space import up_axis
    from flock3d.look.sky import sky_look
    from flock3d.look.world import GROUND_FILL

    scene = recording.scene
    params = scene.params if scene is not None else None
    hints = scene.view if scene is not None else ViewHints()
    look = sky_look(hints.sky)  # the viewer's sky, sun and fog for the scene's view.sky
    n, m = recording.n_boids, recording.n_predators
    centre, radius = _framing(recording, params, hints)
    camera = _camera(params, hints, np.asarray(centre, np.float64), radius)
    objects, moving = _objects(params, radius, times)
    groups, palette, colours = _boid_groups(params, hints, n, m)
    distance = float(np.linalg.norm(np.subtract(camera["eye"], camera["target"])))
    period = recording.period
    wraps = period is not None and np.any(np.asarray(period) > 0)
    max_jump = 0.5 * float(np.min(np.asarray(period)[np.asarray(period) > 0])) if wraps else 1e30
    meta = {
        "title": scene.name if scene is not None and scene.name else recording.path.stem,
        "frames": len(times),
        "boids": n,
        "predators": m,
        "times": times.tolist(),
        "moving": moving,
        "objects": objects,
        "groups": groups,
        "palette": palette,
        "colours": colours,
        "boidSize": hints.boid_size,
        "minPixels": MIN_BOID_PIXELS,
        "beatsPerSecond": WING_BEATS_PER_SECOND,
        "maxJump": max_jump,
        "camera": camera,
        "arena": _arena(params, hints),
        "world": {"centre": list(map(float, centre)), "radius": float(radius)},
        "sun": look.sun_direction(up_axis(params) if params is not None else (0.0, 1.0, 0.0)).tolist(),
        "sky": {
            "top": list(look.top),
            "bottom": list(look.bottom),
            "light": [0.62, 0.7, 0.92],
            "ground": list(GROUND_FILL),
        },
        "fog": {
            "color": [0.5 * (a + b) for a, b in zip(look.top, look.bottom, strict=True)],  # the viewer's fog
            "near": distance + radius,
            "far": distance + radius + FOG_HORIZON * 2.0 * radius,
        },
    }
    return meta, moving


def _arena(params, hints: ViewHints) -> dict | None:
    """The arena's outline as the viewer draws it (a box's edges; a sphere's equator and its rim
    as seen from the camera), or None: open space, or ``view.show_arena`` off."""
    if params is None or not hints.show_arena or params.arena_shape not in ("sphere", *BOX_SHAPES):
        return None
    return {
        "shape": "sphere" if params.arena_shape == "sphere" else "box",
        "centre": list(map(float, params.arena_center)),
        "radius": float(params.arena_radius),
        "half": list(map(float, params.half_extents)),
        "planar": params.dimensions == 2,
        "color": list(ARENA_COLOR),
    }


def _script_safe(text: str) -> str:
    """Text that cannot close the ``<script>`` element holding it."""
    return text.replace("</", "<\\/")


_STYLE = """
html, body { margin: 0; height: 100%; background: #04070f; color: #dfe6f5;
  font: 14px system-ui, sans-serif; overflow: hidden; }
#flock3d-canvas { display: block; width: 100vw; height: 100vh; }
#flock3d-bar { position: fixed; left: 0; right: 0; bottom: 0; display: flex; gap: 12px;
  align-items: center; padding: 8px 14px; background: rgba(4, 7, 15, 0.6); }
#flock3d-play { width: 2.4em; height: 2em; border: 1px solid #5a6786; border-radius: 4px;
  background: #1a2236; color: inherit; cursor: pointer; }
#flock3d-time { flex: 1; }
#flock3d-clock { font-variant-numeric: tabular-nums; white-space: pre; }
#flock3d-title { position: fixed; left: 14px; top: 10px; opacity: 0.8; }
#flock3d-status[data-state="error"] { position: fixed; top: 40px; left: 14px; right: 14px;
  color: #ffb4a8; white-space: pre-wrap; }
#flock3d-status:not([data-state="error"]), #flock3d-probe { display: none; }
"""


def refusal(rows: int, moving: int, frames: int, fixed: int | None = None) -> str | None:
    """Why a page of ``frames`` frames of ``rows`` boids (and predators) and ``moving`` moving
    objects would exceed :data:`MAX_HTML_BYTES`, in words; None where it fits. ``fixed``: the
    bytes of everything but the frames (the player, three.js, the world's meshes); None: the
    player's and three.js's alone, as known before a run (a world adds its meshes after)."""
    if fixed is None:
        fixed = sum(len(_asset(name).encode()) for name in ("player.js", "vendor/three-flock3d.min.js"))
    per_frame = frame_bytes(rows, moving)
    block = max(1, BLOCK_BYTES // per_frame)
    frames_bytes = sum(
        4 * math.ceil(min(block, frames - s) * per_frame / 3) + 120 for s in range(0, frames, block)
    )
    if fixed + frames_bytes <= MAX_HTML_BYTES:
        return None
    limit = f"over the {MAX_HTML_BYTES / 1e6:.0f} MB an HTML export may be"
    if fixed >= MAX_HTML_BYTES:
        return f"the world's meshes alone take {fixed / 1e6:.0f} MB, {limit}"
    fewer = math.ceil(frames_bytes / (MAX_HTML_BYTES - fixed))
    return (
        f"the page would be about {(fixed + frames_bytes) / 1e6:.0f} MB ({frames:,} frames of {rows:,} "
        f"boids), {limit}: record {fewer} times fewer frames (--every), or export to .usd"
    )


def write(recording: Trajectory, path: Path, progress: Callable[[int], None] | None) -> None:
    """Write ``recording`` as a self-contained HTML page at ``path``.

    Args:
        recording: the recorded flock.
        path: the file to fill (the caller puts it in place).
        progress: None, or called with the number of frames written so far.

    Raises:
        ExportError: a recording without frames, one whose page would exceed
            :data:`MAX_HTML_BYTES` (checked before anything is written), or a frame holding
            positions or orientations that are not finite.
    """
    times = np.asarray(recording.times, np.float64)
    total = len(times)
    if not total:
        raise ExportError(f"{recording.path}: holds no frames; nothing to export")
    meta, moving = _meta(recording, times)
    rows = recording.n_boids + recording.n_predators
    per_frame = frame_bytes(rows, len(moving))
    block = max(1, BLOCK_BYTES // per_frame)
    head = _page_head(meta)
    player, three, licence = (
        _asset("player.js"),
        _asset("vendor/three-flock3d.min.js"),
        _asset("vendor/LICENSE"),
    )
    fixed = sum(len(text.encode()) for text in (head, player, three, licence)) + 1024
    if too_large := refusal(rows, len(moving), total, fixed):
        raise ExportError(f"{recording.path}: {too_large}")
    from flock3d.look.world import Frames

    objects = recording.scene.params.objects if recording.scene is not None else ()
    placed = Frames([objects[k] for k in moving]) if moving else None
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write(head)
        states = checked_frames(recording)  # each refused as flock3d render refuses a frame
        for first in range(0, total, block):
            count = min(block, total - first)
            boxes = np.empty((count, 6), "<f4")
            turns = np.empty((count, rows), "<u4")
            frames_of = np.empty((count, len(moving), 12), "<f4")
            spots = np.empty((count, rows, 3), "<u2")
            for i in range(count):
                state = next(states)
                k = first + i
                _pack(recording, state, boxes[i], turns[i], spots[i])
                if placed is not None:
                    origins, rotations = placed.at(float(times[k]))
                    frames_of[i] = np.concatenate([rotations.reshape(-1, 9), origins], axis=1)
            data = b"".join(a.tobytes() for a in (boxes, turns, frames_of, spots))
            out.write(
                f'<script type="application/octet-stream" class="flock3d-frames" data-first="{first}" '
                f'data-count="{count}">{base64.b64encode(data).decode("ascii")}</script>\n'
            )
            if progress is not None:
                progress(first + count)
        out.write(f"<script>/*\n{licence}*/\n{_script_safe(three)}</script>\n")
        out.write(f"<script>{_script_safe(player)}</script>\n</body>\n</html>\n")


def _pack(recording: Trajectory, state, box: np.ndarray, turns: np.ndarray, spots: np.ndarray) -> None:
    """Pack a frame (``state``, checked: :func:`~flock3d.io.export.common.checked_frames`) into
    its box, orientations and positions (see the module's notes)."""
    if recording.n_predators:
        positions = np.vstack([state.positions, state.predator_positions])
        orientations = np.vstack([state.orientations, state.predator_orientations])
    else:
        positions, orientations = state.positions, state.orientations
    if not len(positions):
        box[:] = 0.0
        return
    low = positions.min(axis=0)
    step = np.maximum(positions.max(axis=0) - low, 1e-9) / _QUANTA
    box[:3], box[3:] = low, step
    # The box in float32, as the page reads it: quantise against what is decoded.
    low32, step32 = box[:3].astype(np.float64), box[3:].astype(np.float64)
    spots[:] = np.clip(np.rint((positions - low32) / step32), 0, _QUANTA)
    norms = np.linalg.norm(orientations, axis=1, keepdims=True)
    turns[:] = pack_turns(orientations / np.where(norms > 0.0, norms, 1.0))


def _page_head(meta: dict) -> str:
    title = meta["title"].replace("&", "&amp;").replace("<", "&lt;")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title} - flock3d</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        '<canvas id="flock3d-canvas"></canvas>\n'
        f'<div id="flock3d-title">{title}</div>\n'
        '<div id="flock3d-bar"><button id="flock3d-play" type="button"></button>'
        '<input id="flock3d-time" type="range" aria-label="time"><span id="flock3d-clock"></span></div>\n'
        '<div id="flock3d-status" data-state="loading"></div>\n<div id="flock3d-probe"></div>\n'
        f'<script type="application/json" id="flock3d-meta">{_script_safe(json.dumps(meta))}</script>\n'
    )
