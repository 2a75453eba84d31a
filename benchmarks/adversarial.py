"""Worlds built to break containment, and the exact geometry that judges them.

Each world is a scene the way a user could write it to hurt: walls thinner than a step, thin
rods and a thin ring, an arena with thin fins, mesh plates and rods thinner than their grid's
cells, objects moving through each other and through the flock, a spinning mesh bar, a box
sweeping a planar flock with its face along the plane, spiky ground continued past its edges,
and objects moved or grown onto the flock between steps. Each comes with its own shape written
here in closed form (boxes, cylinders, spheres, a torus, bilinear ground, with its own keyframe
and rotation maths), never with flock3d's distance functions, so that a bug shared by the
engines cannot hide itself. A mesh world's meshes are boxes, whose closed form is their exact
shape.

Used by ``world_containment.py --adversarial`` (the table) and tests/test_never_through.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from flock3d import Flock, Params
from flock3d.core.objects import Motion, Object

#: Points a move is checked at, end to end: a solid 1/SAMPLES of a move long along it is seen.
SAMPLES = 1024


def box_depth(p: np.ndarray, center, half) -> np.ndarray:
    """How deep points lie in an axis-aligned box: > 0 inside."""
    return np.min(np.asarray(half) - np.abs(p - np.asarray(center)), axis=-1)


def rod_depth(p: np.ndarray, center, radius: float, half_length: float, axis: int) -> np.ndarray:
    """How deep points lie in a round rod (a cylinder) along a world axis: > 0 inside."""
    d = p - np.asarray(center)
    across = np.delete(d, axis, axis=-1)
    return np.minimum(radius - np.linalg.norm(across, axis=-1), half_length - np.abs(d[..., axis]))


def ring_depth(p: np.ndarray, center, ring: float, tube: float) -> np.ndarray:
    """How deep points lie in a torus in the XZ plane: > 0 inside."""
    d = p - np.asarray(center)
    q = np.hypot(d[..., 0], d[..., 2]) - ring
    return tube - np.hypot(q, d[..., 1])


def yaw_local(p: np.ndarray, center, degrees: float) -> np.ndarray:
    """World points in a frame at ``center`` turned by ``degrees`` about +Y (right-handed: +Z to
    +X at 90): R_y(-yaw) (p - center)."""
    a = np.radians(degrees)
    d = p - np.asarray(center)
    return np.stack([np.cos(a) * d[..., 0] - np.sin(a) * d[..., 2], d[..., 1],
                     np.sin(a) * d[..., 0] + np.cos(a) * d[..., 2]], axis=-1)  # fmt: skip


def back_and_forth(t: float, a, b, period: float) -> np.ndarray:
    """Where a keyframed loop a -> b -> a over ``period`` seconds is at time t (linear)."""
    u = (t % period) / (0.5 * period)
    u = u if u <= 1.0 else 2.0 - u
    return np.asarray(a, dtype=float) + u * (np.asarray(b, dtype=float) - np.asarray(a, dtype=float))


@dataclass
class World:
    """One adversarial world: its scene, its solid (how deep each point is in it at time t, > 0
    inside), and the edits made between steps (step index -> a function of the flock)."""

    name: str
    params: Params
    depth: Callable[[np.ndarray, float], np.ndarray]
    edits: dict[int, Callable[[Flock], None]] = field(default_factory=dict)
    folder: Path | None = None
    vertical: bool = False
    """Whether its depth is a height (ground), which may be far more than the distance."""
    moving: float = 0.0
    """A quarter of the thickness of the thinnest part of a solid that moves (0: none moves): its
    moves are then judged in space and time (:func:`_depths`), and one that went that deep went
    through."""


def fast_boids(**overrides) -> dict:
    """Boids that move 0.6 to 1 unit a step, farther than the thinnest walls are thick."""
    base = dict(min_speed=12.0, max_speed=20.0, dt=0.05, avoidance=2.0, arena_shape="box", arena_radius=12.0,
                init_radius=5.0)  # fmt: skip
    return {**base, **overrides}


def _slab() -> World:
    slabs = [(0.05, 2.0), (0.2, -3.0), (1.0, 7.0)]  # (thickness, height)
    objects = [Object("box", size=(60.0, w, 60.0), position=(0.0, y, 0.0)) for w, y in slabs]
    params = Params(**fast_boids(), objects=objects)

    def depth(p, t):
        return np.max([box_depth(p, (0, y, 0), (30, w / 2, 30)) for w, y in slabs], axis=0)

    return World("thin slabs 0.05-1", params, depth)


def _rods() -> World:
    rods = [(0.05, -6.0), (0.1, -3.0), (0.25, 0.0), (0.5, 3.0)]  # (radius, z)
    objects = [Object("cylinder", radius=r, height=60.0, position=(0.0, 0.0, z), rotation=(0.0, 0.0, 90.0))
               for r, z in rods]  # fmt: skip
    objects.append(Object("torus", radius=5.0, tube=0.05, position=(0.0, 4.0, 0.0)))
    params = Params(**fast_boids(), objects=objects)

    def depth(p, t):
        inside = [rod_depth(p, (0, 0, z), r, 30.0, 0) for r, z in rods]
        return np.max([*inside, ring_depth(p, (0, 4, 0), 5.0, 0.05)], axis=0)

    return World("rods and ring 0.05-0.5", params, depth)


def _comb() -> World:
    # A room 24 wide whose walls carry fins 0.1 thick, 6 deep, every 3 units.
    fins = [((x, -12.0 + 3.0, 0.0), (0.05, 3.0, 12.0)) for x in np.arange(-9.0, 10.0, 3.0)]
    fins += [((0.0, 12.0 - 3.0, z), (12.0, 3.0, 0.05)) for z in np.arange(-9.0, 10.0, 3.0)]
    room = Object("box", size=(24.0, 24.0, 24.0), role="arena")
    objects = [room] + [Object("box", size=tuple(2 * np.array(h)), position=c) for c, h in fins]
    params = Params(**fast_boids(arena_shape="none"), objects=objects)

    def depth(p, t):
        outside_room = -box_depth(p, (0, 0, 0), (12, 12, 12))
        return np.max([outside_room, *(box_depth(p, c, h) for c, h in fins)], axis=0)

    return World("comb arena, fins 0.1", params, depth)


def _mesh_plates(folder: Path) -> World:
    import trimesh

    plates = [(0.05, 2.0), (0.1, -2.0), (0.7, 6.0)]  # thinner than the 0.6-unit cells of their grids
    objects = []
    for w, y in plates:
        path = folder / f"plate{w}.stl"
        trimesh.creation.box(extents=(60.0, w, 60.0)).export(path)
        objects.append(Object("mesh", file=str(path), position=(0.0, y, 0.0)))
    rods = folder / "rods.stl"  # four square rods 0.2 thick in one mesh
    trimesh.util.concatenate([trimesh.creation.box(extents=(40.0, 0.2, 0.2), transform=_moved(0, -6.0, z))
                              for z in (-6.0, -2.0, 2.0, 6.0)]).export(rods)  # fmt: skip
    objects.append(Object("mesh", file=str(rods)))
    params = Params(**fast_boids(), objects=objects)

    def depth(p, t):
        inside = [box_depth(p, (0, y, 0), (30, w / 2, 30)) for w, y in plates]
        inside += [box_depth(p, (0, -6.0, z), (20, 0.1, 0.1)) for z in (-6.0, -2.0, 2.0, 6.0)]
        return np.max(inside, axis=0)

    return World("mesh plates 0.05-0.7, rods", params, depth, folder=folder)


def _moved(x: float, y: float, z: float) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


def _overlapping() -> World:
    # Two balls and a box on loops through each other and through the flock, faster than it turns.
    paths = [((-10.0, 0.0, 0.0), (10.0, 0.0, 0.0), 4.0), ((0.0, -10.0, 1.0), (0.0, 10.0, 1.0), 5.0),
             ((-8.0, -8.0, -1.0), (8.0, 8.0, -1.0), 6.0)]  # fmt: skip
    shapes = [Object("sphere", radius=3.0), Object("sphere", radius=2.5), Object("box", size=(4.0, 4.0, 4.0))]
    objects = [
        o._replace(motion=Motion((a, b, a), (0.0, T / 2, T), True))
        for o, (a, b, T) in zip(shapes, paths, strict=True)
    ]
    params = Params(**fast_boids(min_speed=4.0, max_speed=8.0, avoidance=0.0), objects=objects)  # fmt: skip

    def depth(p, t):
        c = [back_and_forth(t, a, b, T) for a, b, T in paths]
        balls = [3.0 - np.linalg.norm(p - c[0], axis=-1), 2.5 - np.linalg.norm(p - c[1], axis=-1)]
        return np.max([*balls, box_depth(p, c[2], (2.0, 2.0, 2.0))], axis=0)

    return World("overlapping, moving", params, depth, moving=1.0)  # the box, 4 across


def _spinning(folder: Path) -> World:
    import trimesh

    path = folder / "bar.stl"
    trimesh.creation.box(extents=(18.0, 1.0, 1.0)).export(path)
    spin = Motion(((0.0, 0.0, 0.0),) * 4, (0.0, 1.0, 2.0, 3.0), True,
                  ((0.0, 0.0, 0.0), (120.0, 0.0, 0.0), (240.0, 0.0, 0.0), (360.0, 0.0, 0.0)))  # fmt: skip
    params = Params(**fast_boids(min_speed=4.0, max_speed=8.0, avoidance=0.0),
                    objects=[Object("mesh", file=str(path), motion=spin)])  # fmt: skip
    # 120 degrees a second about +Y: the bar's tips sweep at 19 units/s.
    return World("spinning mesh bar", params,
                 lambda p, t: box_depth(yaw_local(p, (0, 0, 0), 120.0 * (t % 3.0)), (0, 0, 0), (9, 0.5, 0.5)),
                 folder=folder, moving=0.25)  # fmt: skip


def _fan() -> World:
    # A blade 0.2 thick turning once a second: 0.4 of a turn's arc a step at its tips, beyond its
    # half thickness from its middle out, so that it passes over the boids it meets (boids left
    # alone, on the side they were on, until carried along: 5,767 crossings in 20 s before).
    spin = Motion(((0.0, 0.0, 0.0),) * 4, (0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0), True,
                  ((0.0, 0.0, 0.0), (120.0, 0.0, 0.0), (240.0, 0.0, 0.0), (360.0, 0.0, 0.0)))  # fmt: skip
    blade = Object("box", size=(24.0, 6.0, 0.2), motion=spin)
    params = Params(count=500, arena_radius=14.0, init_radius=6.0, objects=[blade], avoidance=0.0)
    return World("fan blade 0.2, 1 turn/s", params,
                 lambda p, t: box_depth(yaw_local(p, (0, 0, 0), 360.0 * (t % 1.0)), (0, 0, 0), (12, 3, 0.1)),
                 moving=0.05)  # fmt: skip


def _planar_face() -> World:
    # A box sweeping a planar flock, its bottom face 0.1 below the plane: where it covers a boid
    # that face is the nearest, its normal across the plane.
    a, b = (-12.0, 0.0, 2.9), (12.0, 0.0, 2.9)
    box = Object("box", size=(6.0, 6.0, 6.0), motion=Motion((a, b, a), (0.0, 3.0, 6.0), True))
    params = Params(count=300, dimensions=2, arena_radius=12.0, objects=[box], avoidance=0.0, min_speed=3.0,
                    max_speed=4.0)  # fmt: skip
    return World("planar, face along plane", params,
                 lambda p, t: box_depth(p, back_and_forth(t, a, b, 6.0), (3.0, 3.0, 3.0)),
                 moving=1.5)  # fmt: skip


def _spikes(folder: Path) -> World:
    import imageio.v3 as iio

    pixels = np.zeros((17, 17), dtype=np.uint8)
    for i, k in ((4, 4), (8, 10), (12, 6), (0, 8), (0, 0), (16, 16)):  # edge and corners continue
        pixels[k, i] = 255
    iio.imwrite(folder / "spikes.png", pixels)
    heights = pixels.T.astype(float) / 255.0 * 30.0  # column i along +x, row k along +z
    ground = Object("heightfield", size=(16.0, 16.0), height=30.0, image=str(folder / "spikes.png"),
                    position=(0.0, -3.0, 0.0))  # fmt: skip
    params = Params(**fast_boids(arena_shape="sphere"), objects=[ground])

    def depth(p, t):  # how far below the bilinear ground, which continues past its edges
        u, w = np.clip(p[..., 0] + 8.0, 0.0, 16.0), np.clip(p[..., 2] + 8.0, 0.0, 16.0)
        i, k = np.minimum(u.astype(int), 15), np.minimum(w.astype(int), 15)
        fu, fw = u - i, w - k
        h0 = heights[i, k] + fw * (heights[i, k + 1] - heights[i, k])
        h1 = heights[i + 1, k] + fw * (heights[i + 1, k + 1] - heights[i + 1, k])
        return -3.0 + h0 + fu * (h1 - h0) - p[..., 1]

    return World("spiky ground", params, depth, folder=folder, vertical=True)


def _edits(folder: Path) -> World:
    import trimesh

    cube = folder / "cube.stl"
    trimesh.creation.box(extents=(3.0, 3.0, 3.0)).export(cube)
    params = Params(count=300, arena_radius=12.0, init_radius=4.0)
    placed: list[tuple[np.ndarray, float]] = []

    def drop(scale: float, mesh: bool):
        def edit(flock: Flock) -> None:  # a cube moved (and grown) onto the flock's middle
            from flock3d.io.meshes import object_fields

            center = flock.positions.mean(axis=0)
            shape = (
                Object("mesh", file=str(cube), scale=scale)
                if mesh
                else Object("box", size=(3.0 * scale,) * 3)
            )
            edited = flock.params.replace(objects=[shape._replace(position=tuple(center))])
            flock.fields = object_fields(edited)
            flock.params = edited
            placed[:] = [(center, 1.5 * scale)]

        return edit

    kinds = [(1.0, True), (2.0, True), (1.5, False), (2.5, True)]  # (scale, mesh or box)
    edits = {k: drop(*kinds[i % len(kinds)]) for i, k in enumerate(range(50, 100_000, 400))}

    def depth(p, t):
        return box_depth(p, placed[0][0], (placed[0][1],) * 3) if placed else np.full(p.shape[:-1], -np.inf)

    return World("edits onto the flock", params, depth, edits=edits, folder=folder)


BUILDERS: dict[str, Callable[[Path], World]] = {
    "slabs": lambda folder: _slab(),
    "rods": lambda folder: _rods(),
    "comb": lambda folder: _comb(),
    "mesh-plates": _mesh_plates,
    "overlapping": lambda folder: _overlapping(),
    "spinning": _spinning,
    "fan": lambda folder: _fan(),
    "planar": lambda folder: _planar_face(),
    "spikes": _spikes,
    "edits": _edits,
}


def build(name: str, folder: Path) -> World:
    """The adversarial world ``name``, its files (meshes, scenes) written into ``folder``, which the
    caller removes once the world has run."""
    return BUILDERS[name](folder)


def run(world: World, steps: int, engine: str = "fast", count: int | None = None, seed: int = 1) -> dict:
    """Run ``world`` and check every step against its exact shape, where the step's end time has
    it: the boid-steps inside it, the deepest any boid was, and the moves that met it on the way,
    seen at :data:`SAMPLES` points of each: those that went ``through`` a solid at least
    1/MARCH of the move long along it (the engines' stated bound: counted when the run of
    points inside, less a point, reaches it), and those that only ``clipped`` a corner, an
    edge or a tip shallower than that."""
    from flock3d.core.objects import MARCH  # the bound the engines state
    from flock3d.io.meshes import object_fields

    params = world.params if count is None else world.params.replace(count=count)
    flock = Flock(params, seed=seed, engine=engine, fields=object_fields(params) or None)

    u = np.linspace(0.0, 1.0, SAMPLES)[None, :, None]
    inside = through = clipped = 0
    deepest = -np.inf
    for k in range(steps):
        if k in world.edits:
            world.edits[k](flock)
        before = flock.positions.copy()
        flock.step()
        after, t = flock.positions, flock.time
        depth = world.depth(after, t)
        inside += int(np.count_nonzero(depth > 0.0))
        deepest = max(deepest, float(depth.max()))
        # A move that starts inside an object at the step's end (the object came to it) is a push
        # out, not a crossing. Every depth here is at most a point's distance from the solid (the
        # ground's height above it aside), so a move that starts farther away than it is long
        # cannot meet it.
        length = np.linalg.norm(after - before, axis=1)
        start = world.depth(before, t)
        near = start <= 0.0
        if not world.moving:  # a move farther from a still solid than it is long cannot meet it
            near &= (start > -length) | world.vertical
        path = before[near][:, None, :] + u * (after - before)[near][:, None, :]
        depths = _depths(world, path, t - flock.params.dt, t)
        runs = _longest_runs(depths > 0.0)
        met = runs > 0
        deep = (runs - 1) * length[near] / (SAMPLES - 1) >= length[near] / MARCH
        if world.moving:
            # Judged in space and time, a move sliding along a moving solid's curved face dips a
            # chord's sagitta into it (its two ends on the face, hundredths deep): what counts is
            # going a quarter of the way through the solid's thinnest part, well on the way to
            # its other side (sampled at 64 moments a step, its middle itself may fall between).
            deep = depths.max(axis=1) >= world.moving
        through += int(np.count_nonzero(met & deep))
        clipped += int(np.count_nonzero(met & ~deep))
    return {"world": world.name, "engine": engine, "count": len(flock), "steps": steps, "inside": inside,
            "through": through, "clipped": clipped, "deepest": deepest}  # fmt: skip


#: Moments of a step a moving world's solid is placed at, along each move (SAMPLES / MOMENTS
#: points each): the solid moves 1/MOMENTS of its step between two, as finely as the bound judges.
MOMENTS = 64


def _depths(world: World, path: np.ndarray, t0: float, t1: float) -> np.ndarray:
    """(n, SAMPLES) how deep each point of the moves ``path`` (n, SAMPLES, 3) lies in the solid:
    for a still world where the step's end has it; for a moving one in space and time, the boid
    going along its move from t0 to t1 while the solid moves on, so that a solid that pushed a
    boid ahead of it is not met by the move and one that passed over it is."""
    if not world.moving:
        return world.depth(path, t1)
    depths = np.empty(path.shape[:2])
    for m in range(MOMENTS):
        cols = slice(m * SAMPLES // MOMENTS, (m + 1) * SAMPLES // MOMENTS)
        depths[:, cols] = world.depth(path[:, cols], t0 + (m + 0.5) / MOMENTS * (t1 - t0))
    return depths


def _longest_runs(inside: np.ndarray) -> np.ndarray:
    """(n,) the longest run of True in each row of an (n, m) mask."""
    best = np.zeros(inside.shape[0], dtype=int)
    run = np.zeros(inside.shape[0], dtype=int)
    for k in range(inside.shape[1]):
        run = np.where(inside[:, k], run + 1, 0)
        best = np.maximum(best, run)
    return best
