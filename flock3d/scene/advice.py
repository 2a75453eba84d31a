"""What a scene allows but probably does not mean: the warnings ``flock3d check`` prints beside its
verdict. A warning never refuses a scene (a run takes it as it is); each names the object, what
is odd about it, and what to change."""

from __future__ import annotations

import math

import numpy as np

from flock3d.core.models import model_of
from flock3d.core.objects import MARCH
from flock3d.core.objects.checks import start_samples
from flock3d.core.objects.oracle import Body, bodies
from flock3d.core.objects.records import scales
from flock3d.core.objects.shapes import shape_of
from flock3d.core.params import Params
from flock3d.scene.scene import Scene

__all__ = ["advice"]


def advice(scene: Scene) -> list[str]:
    """The scene's warnings, one line each (none for a scene that means what it says)."""
    return (
        _thinner_than_a_move(scene.params)
        + _beyond_the_arena(scene)
        + _start_beyond_the_walls(scene.params)
        + _crowded_start(scene)
    )


def _fastest(params: Params) -> tuple[float, str]:
    """The fastest anything in the world moves [units/s], and the key that sets it."""
    if model_of(params).constant_speed:
        fastest = (params.speed, "speed")
    else:
        fastest = (
            max(params.of_species(k).max_speed for k in range(max(1, len(params.species)))),
            "max_speed",
        )
    if params.predator_count and params.predator_speed > fastest[0]:
        fastest = (params.predator_speed, "predators.speed")
    return fastest


def _thinner_than_a_move(params: Params) -> list[str]:
    """Obstacles thinner than the keep-out stops for sure: the march along a move steps
    1/MARCH of it, so a solid thinner than that along the move may be stepped over."""
    speed, key = _fastest(params)
    least = speed * params.dt / MARCH
    out = []
    for k, o in enumerate(params.objects):
        thickness = shape_of(o).thinnest(o, *scales(o))
        if o.role != "arena" and thickness < least:
            out.append(
                f"objects[{k}] ({o.shape}) is {thickness:.3g} thick at its thinnest, less than 1/{MARCH} of "
                f"the longest move a step makes ({key} {speed:g} x dt {params.dt:g}, so {least:.3g}): "
                f"{'the predators' if key.startswith('predators') else 'boids'} may pass through it; "
                "make it thicker, or dt smaller"
            )
    return out


def _beyond_the_arena(scene: Scene) -> list[str]:
    """Obstacles that lie wholly outside the arena's walls, wherever they move: no boid meets them."""
    params = scene.params
    if params.arena_shape == "none" or not params.objects:
        return []
    try:
        measured = bodies(params.objects, scene.fields)
    except ValueError:  # a mesh or an image not read (no world extra): judged where it is
        return []
    return [
        f"objects[{k}] ({o.shape}) lies wholly outside the arena ({_arena_words(params)}): no boid "
        "reaches it; move it inside, or make the arena larger"
        for k, (o, body) in enumerate(zip(params.objects, measured, strict=True))
        if o.role != "arena" and math.isfinite(body.bound) and _outside(body, params)
    ]


def _start_beyond_the_walls(params: Params) -> list[str]:
    """An initial ball that reaches beyond a sphere's or a box's walls: boids start outside the
    arena, and its walls only steer them back in."""
    if params.arena_shape not in ("sphere", "box") or not params.count or model_of(params).fills_box:
        return []
    r0, walls = params.initial_radius, np.asarray(params.half_extents)
    if params.arena_shape == "sphere":
        beyond = r0 > params.arena_radius
    else:
        beyond = bool(np.any(r0 > walls[: params.dimensions]))
    if not beyond:
        return []
    return [
        f"the initial ball of radius {r0:g} (init_radius) reaches beyond the arena ({_arena_words(params)}): "
        "boids start outside its walls, which only steer them back; make init_radius smaller"
    ]


#: A start is crowded where each boid has less than this share of the separation distance to itself.
CROWDED = 0.25


def _crowded_start(scene: Scene) -> list[str]:
    """A start so crowded that boids begin nearly on top of each other (or, where the objects leave
    fewer free points than boids, on the same points): the initial ball's free room, less the
    objects and their margin, shared by the boids, leaves each less than :data:`CROWDED` of the
    separation distance. Models of their own update (Vicsek's fills its box densely) have none."""
    params = scene.params
    kinds = [params.of_species(k) for k in range(max(1, len(params.species)))]  # each species' own values
    distances = [p.separation_distance for p in kinds if p.separation > 0.0]
    if not params.count or model_of(params).update_kind == "own" or not distances:
        return []
    distance = min(distances)  # the species that keeps the shortest distance
    r0, d = params.initial_radius, params.dimensions
    try:
        free = _free_share(scene, r0)
    except ValueError:  # a mesh or an image not read (no world extra): judged where it is
        return []
    volume = math.pi * r0**2 if d == 2 else 4.0 / 3.0 * math.pi * r0**3
    spacing = (free * volume / params.count) ** (1.0 / d)
    if spacing >= CROWDED * distance:
        return []
    room = f" (the objects and their margin leave {100.0 * free:.2g} % of it free)" if free < 0.995 else ""
    return [
        f"{params.count:,} boids start crowded in the initial ball of radius {r0:g}{room}: about "
        f"{spacing:.2g} apart, against a separation distance of {distance:g}; make "
        "init_radius larger, the flock smaller, or move the objects"
    ]


def _free_share(scene: Scene, r0: float) -> float:
    """The share of the initial ball of radius ``r0`` where a boid may start: the start's fixed
    draw of points (:func:`start_samples`, as the spawn's last resort and the start's check take)
    outside every obstacle and object with the margin, measured by the readable distances (a
    check compiles nothing); an object's bound skips the points it cannot reach."""
    params = scene.params
    samples = start_samples(params.arena_center, r0, params.dimensions)
    margin = params.avoidance_margin
    blocked = np.zeros(len(samples), dtype=bool)
    for o in params.obstacles:
        blocked |= np.linalg.norm(samples - np.asarray(o.center), axis=1) < o.radius + margin
    for body in bodies(params.objects, scene.fields) if params.objects else ():
        origin, _ = body.placed(0.0)
        near = ~blocked
        if body.side > 0.0 and math.isfinite(body.bound):  # clearance >= |p - origin| - bound
            near &= np.linalg.norm(samples - origin, axis=1) - body.bound < margin
        for k in np.flatnonzero(near):
            blocked[k] = body.clearance(0.0, samples[k])[0] < margin
    return 1.0 - float(np.mean(blocked))


def _outside(body: Body, params: Params) -> bool:
    """Whether the body's bounding ball lies beyond the arena's walls at every keyframe."""
    points = np.array(body.motion.points if body.motion is not None else [body.position], dtype=np.float64)
    offsets = np.abs(points - np.asarray(params.arena_center))
    if params.arena_shape == "sphere":
        gap = np.linalg.norm(offsets, axis=1) - params.arena_radius
    else:  # a box, periodic or wrapping: the distance to it, 0 inside
        gap = np.linalg.norm(np.maximum(offsets - np.asarray(params.half_extents), 0.0), axis=1)
    return bool(np.all(gap > body.bound))


def _arena_words(params: Params) -> str:
    centre = ", ".join(f"{c:g}" for c in params.arena_center)
    if params.arena_shape == "sphere":
        return f"radius {params.arena_radius:g} around ({centre})"
    sides = " x ".join(f"{2.0 * h:g}" for h in params.half_extents)
    return f"{params.arena_shape} {sides} around ({centre})"
