"""Editing the world in the viewer: select, move, turn and scale objects, add primitives,
attractors and predators where the user clicked, delete, undo. No window needed.

:class:`WorldEditor` holds no simulation state: every edit reads the session's
:class:`~flock3d.viewer.session.World` (objects, attractors, predators), builds the changed one
and hands it back (:meth:`Session.set_world`), which applies it between steps, so the boids go
on flying and react at once. A world the model refuses (an object covering every spawn point,
say) raises ValueError and changes nothing. Each edit pushes the world as it was onto the undo
stack; a drag pushes one entry however many moves it makes. Only edits of predators read and
set the predators' state: the others, and their undoing, leave the predators flying.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from flock3d.core.objects import PRIMITIVES, SHAPES, Object, shape_of
from flock3d.core.params import Params
from flock3d.core.quaternion import look_rotation
from flock3d.core.space import up_axis
from flock3d.core.terms.attractors import Attractor
from flock3d.viewer.session import Session, World

__all__ = ["WorldEditor", "Selection", "PRIMITIVES", "primitive", "ray_plane", "outside_arena", "UNDO_DEPTH"]

UNDO_DEPTH = 100
"""Edits that can be undone."""


class Selection(NamedTuple):
    """What is selected: ``kind`` ``"object"``, ``"attractor"`` or ``"predator"``, and its index."""

    kind: str
    index: int


def primitive(shape: str, size: float) -> Object:
    """A new ``shape`` about ``size`` world units across, standing upright at the origin."""
    if shape not in PRIMITIVES:
        raise ValueError(f"unknown primitive {shape!r}; choose one of {', '.join(PRIMITIVES)}")
    return Object(shape, **SHAPES[shape].upright(size))


class WorldEditor:
    """The edits of a session's world, with an undo stack (see the module docstring).

    Args:
        session: the session whose flock is edited.

    Attributes:
        selection: what is selected, or None.
        undo_stack: the worlds before each edit, the latest last.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self.selection: Selection | None = None
        self.undo_stack: list[World] = []
        self._dragging: tuple[World, np.ndarray] | None = None
        """While dragging: the world before, and the grabbed point's offset from the selection."""

    # -- what there is ------------------------------------------------------------------------

    def origin(self, k: int, t: float | None = None) -> np.ndarray:
        """(3,) where object ``k``'s origin is (for a moving object, at simulated time ``t``)."""
        o = self.session.params.objects[k]
        if o.motion is None:
            return np.asarray(o.position or (0.0, 0.0, 0.0), np.float64)
        from flock3d.look.world import Frames

        return Frames([o]).at(self.session.snapshot().time if t is None else t)[0][0]

    def position_of(self, selection: Selection) -> np.ndarray:
        """(3,) where the selected thing is now."""
        kind, k = selection
        if kind == "object":
            return self.origin(k)
        if kind == "attractor":
            return np.asarray(self.session.params.attractors[k].position, np.float64)
        return self.session.snapshot().state.predator_positions[k].copy()

    def valid(self, selection: Selection | None) -> Selection | None:
        """``selection`` if it still names something in the world, else None."""
        if selection is None:
            return None
        p = self.session.params
        counts = {"object": len(p.objects), "attractor": len(p.attractors), "predator": p.predator_count}
        return selection if 0 <= selection.index < counts[selection.kind] else None

    # -- applying -----------------------------------------------------------------------------

    def _apply(self, world: World, record: bool = True) -> None:
        """Make ``world`` the session's, remembering the world before it for undo. A world whose
        predators are None leaves them flying (and its undo entry does not set them back)."""
        before = self.session.world(predators=world.predators is not None)
        self.session.set_world(world)  # raises ValueError, changing nothing
        if record:
            self.undo_stack.append(before)
            del self.undo_stack[:-UNDO_DEPTH]

    def _with_object(self, k: int, o: Object, record: bool = True) -> None:
        world = self.session.world(predators=False)
        objects = list(world.objects)
        objects[k] = o
        self._apply(world._replace(objects=tuple(objects)), record)

    def move(self, selection: Selection, position, record: bool = True) -> None:
        """Put the selected thing at ``position`` (3,): an object's origin (a moving object's
        whole path shifts with it), an attractor, a predator."""
        kind, k = selection
        p = np.asarray(position, np.float64)
        world = self.session.world(predators=kind == "predator")
        if kind == "object":
            o = world.objects[k]
            if o.motion is None:
                self._with_object(k, o._replace(position=tuple(float(x) for x in p)), record)
            else:
                shift = p - self.origin(k)
                points = tuple(tuple(float(x) for x in np.add(q, shift)) for q in o.motion.points)
                self._with_object(k, o._replace(motion=o.motion._replace(points=points)), record)
        elif kind == "attractor":
            attractors = list(world.attractors)
            attractors[k] = attractors[k]._replace(position=tuple(float(x) for x in p))
            self._apply(world._replace(attractors=tuple(attractors)), record)
        else:
            positions = world.predators[0].copy()
            positions[k] = p
            self._apply(world._replace(predators=(positions, *world.predators[1:])), record)

    def set_rotation(self, k: int, rotation) -> None:
        """Turn object ``k`` to ``rotation`` = [yaw, pitch, roll], degrees.

        Raises:
            ValueError: its rotation follows keyframes of its motion.
        """
        o = self.session.params.objects[k]
        if o.motion is not None and o.motion.rotations is not None:
            raise ValueError(f"objects[{k}] turns by its motion's keyframes; edit them in the scene file")
        self._with_object(k, o._replace(rotation=tuple(float(x) for x in rotation)))

    def rescaled(self, k: int, factor: float) -> Object:
        """Object ``k`` scaled by ``factor`` along its x axis, its other axes in proportion (a
        scale given per axis keeps its ratios)."""
        o = self.session.params.objects[k]
        if isinstance(o.scale, tuple):
            sx = o.scale[0]
            return o._replace(scale=tuple(float(factor) * s / sx for s in o.scale))
        return o._replace(scale=float(factor))

    def set_scale(self, k: int, factor: float) -> None:
        """Scale object ``k`` as :meth:`rescaled` says."""
        self._with_object(k, self.rescaled(k, factor))

    def add_object(self, shape: str, point, size: float, resting: bool = True) -> Selection:
        """Add a ``shape`` about ``size`` across at ``point`` (3,), standing on it when
        ``resting`` (a clicked surface), else centred there; it becomes the selection."""
        up = np.asarray(up_axis(self.session.params), np.float64)
        o = primitive(shape, size)
        position = np.asarray(point, np.float64) + (shape_of(o).lift(o, up) * up if resting else 0.0)
        world = self.session.world(predators=False)
        self._apply(
            world._replace(objects=(*world.objects, o._replace(position=tuple(map(float, position)))))
        )
        self.selection = Selection("object", len(world.objects))
        return self.selection

    def add_attractor(self, point) -> Selection:
        """Add an attractor at ``point`` (3,), of the weight the others have (else 1)."""
        world = self.session.world(predators=False)
        weight = world.attractors[0].weight if world.attractors else 1.0
        added = Attractor(tuple(float(x) for x in point), weight)
        self._apply(world._replace(attractors=(*world.attractors, added)))
        self.selection = Selection("attractor", len(world.attractors))
        return self.selection

    def add_predator(self, point) -> Selection:
        """Add a predator at ``point`` (3,), flying level at its cruising speed towards the
        flock's centre (or along +x)."""
        world = self.session.world()
        p = np.asarray(point, np.float64)
        heading = (
            self.session.snapshot().state.positions.mean(axis=0) - p if len(self.session.flock) else None
        )
        up = np.asarray(up_axis(self.session.params), np.float64)
        if heading is not None:
            heading = heading - (heading @ up) * up
        if heading is None or not np.linalg.norm(heading) > 1e-9:
            heading = np.array([1.0, 0.0, 0.0])
        heading /= np.linalg.norm(heading)
        velocity = self.session.params.predator_speed * heading
        positions, velocities, orientations = world.predators
        predators = (
            np.vstack([positions, p]),
            np.vstack([velocities, velocity]),
            np.vstack([orientations, look_rotation(heading[None], up=up)]),
        )
        self._apply(world._replace(predators=predators))
        self.selection = Selection("predator", len(positions))
        return self.selection

    def delete(self, selection: Selection | None = None) -> bool:
        """Remove ``selection`` (default: the selected thing); False when there is nothing to remove."""
        selection = self.valid(selection or self.selection)
        if selection is None:
            return False
        kind, k = selection
        world = self.session.world(predators=kind == "predator")
        if kind == "object":
            world = world._replace(objects=world.objects[:k] + world.objects[k + 1 :])
        elif kind == "attractor":
            world = world._replace(attractors=world.attractors[:k] + world.attractors[k + 1 :])
        else:
            world = world._replace(predators=tuple(np.delete(a, k, axis=0) for a in world.predators))
        self._apply(world)
        self.selection = None
        return True

    def undo(self) -> bool:
        """Put the world back as it was before the last edit; False when there is none. An entry
        the model now refuses stays on the stack (ValueError)."""
        self.end_drag()
        if not self.undo_stack:
            return False
        self.session.set_world(self.undo_stack[-1])
        self.undo_stack.pop()
        self.selection = self.valid(self.selection)
        return True

    # -- dragging -----------------------------------------------------------------------------

    def begin_drag(self, selection: Selection, grabbed) -> None:
        """Start moving ``selection``, grabbed at world point ``grabbed`` (3,)."""
        self.end_drag()
        self.selection = selection
        grabbed = np.asarray(grabbed, np.float64)
        before = self.session.world(predators=selection.kind == "predator")
        self._dragging = (before, grabbed - self.position_of(selection))

    @property
    def dragging(self) -> bool:
        return self._dragging is not None

    def drag_to(self, origin, direction, into, vertical: bool = False) -> bool:
        """The mouse's ray is now ``origin + s * direction`` (the camera looking along ``into``):
        the grabbed point moves on the horizontal plane through where it is, or with ``vertical``
        (the height modifier) straight up or down, to where the ray meets the upright plane
        facing the camera through it. False when the ray misses the plane (nothing moves)."""
        if self._dragging is None or self.selection is None:
            return False
        position = self.position_of(self.selection)
        grabbed = position + self._dragging[1]  # where the grabbed point is now
        up = np.asarray(up_axis(self.session.params), np.float64)
        normal = up
        if vertical:
            facing = np.asarray(into, np.float64) - (np.asarray(into, np.float64) @ up) * up
            if not np.linalg.norm(facing) > 1e-9:
                return False  # looking straight down: no upright plane faces the camera
            normal = facing / np.linalg.norm(facing)
        hit = ray_plane(origin, direction, grabbed, normal)
        if hit is None:
            return False
        # Only along the plane, or only up (exactly: a level drag leaves the height as it was).
        shift = hit - grabbed
        shift = (shift @ up) * up if vertical else shift - (shift @ up) * up
        self.move(self.selection, position + shift, record=False)
        return True

    def end_drag(self) -> None:
        """Finish the drag: one undo entry, if anything moved."""
        if self._dragging is None:
            return
        before = self._dragging[0]
        self._dragging = None
        if before != self.session.world(predators=before.predators is not None):
            self.undo_stack.append(before)
            del self.undo_stack[:-UNDO_DEPTH]


def ray_plane(origin, direction, point, normal) -> np.ndarray | None:
    """Where the ray ``origin + s * direction`` (s > 0) meets the plane through ``point`` with
    ``normal``, or None (parallel, or behind)."""
    d = float(np.dot(direction, normal))
    if abs(d) < 1e-12:
        return None
    s = float(np.dot(np.subtract(point, origin), normal)) / d
    if not (s > 0.0 and math.isfinite(s)):
        return None
    return np.asarray(origin, np.float64) + s * np.asarray(direction, np.float64)


def outside_arena(params: Params, point) -> bool:
    """Whether ``point`` (3,) lies outside a sphere or box arena (open space has no outside):
    what is put there, the boids never reach."""
    offset = np.asarray(point, np.float64) - np.asarray(params.arena_center, np.float64)
    if params.arena_shape == "sphere":
        return float(np.linalg.norm(offset)) > params.arena_radius
    if params.arena_shape in ("box", "periodic", "wrap"):
        d = 2 if params.dimensions == 2 else 3
        return bool(np.any(np.abs(offset[:d]) > np.asarray(params.half_extents, np.float64)[:d]))
    return False
