"""The readable reference implementation of one step of the model.

Written the way the model is explained (``docs/model.md``): each boid looks
around, gathers the neighbours it can see, works out its steering terms and turns
towards the result. It is slow (pure Python per boid) and exists to be obviously
right: the tests use it as the oracle for the fast engine, which shares none of its
code but the counter-based noise.

It implements every variant of :class:`~flock3d.core.params.Params`: arena shapes,
planar flocks, separation falloffs, per-rule radii and cones, the world features, the
update orders (synchronous, sequential, per rule), chained rules, the mesh turn
limit, wall containment, topological neighbours and the adaptive radius, species,
and the user's rules and forces; with the default parameters all of these reduce to
the model. The other models' steps are in their modules (:mod:`flock3d.core.models`), built on
:class:`Agent` and its helpers here. Turning uses pyquaternion
rather than :mod:`flock3d.core.quaternion`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from pyquaternion import Quaternion

from flock3d.core.agents import FORWARD, UP, level_frame, turned
from flock3d.core.space import RADII, adapted_radius, neighbours, offsets, settle, unit, up_axis, visible
from flock3d.core.stages import TERMS, TERMS_BY_NAME, stage_names
from flock3d.core.state import FlockState
from flock3d.core.status import NOT_FINITE, RULE_NOT_FINITE, RULE_RAISED, RULE_SHAPE
from flock3d.core.terms.speed import clamped
from flock3d.core.user_rules import Force, PairRule, read_only_copy

if TYPE_CHECKING:
    from flock3d.core.params import Params

__all__ = [
    "step",
    "ReferenceBoid",
    "ReferencePredator",
    "StepFailure",
    "rotate_towards",
    "MAX_COORDINATE",
]

#: A coordinate or velocity component beyond this is a blown-up state (as in the fast engine).
MAX_COORDINATE = 1e12


class StepFailure(Exception):
    """A step that could not be carried out: ``code`` (:mod:`flock3d.core.status`),
    the failing ``boid`` and, for a user rule, its index ``term`` (pair rules, then forces)."""

    def __init__(self, code: int, boid: int, term: int = -1, cause: BaseException | None = None):
        super().__init__(f"step failed (code {code}) at boid {boid}, term {term}")
        self.code, self.boid, self.term, self.cause = code, boid, term, cause


def look_rotation(direction: np.ndarray, up: np.ndarray) -> Quaternion:
    """The rotation taking +Z to ``direction`` with its up axis towards ``up`` (no roll)."""
    forward = unit(direction)
    right = np.cross(up, forward)
    if np.linalg.norm(right) <= 1e-9:  # straight up or down: another hint
        right = np.cross(np.array([0.0, 0.0, 1.0]) if abs(up[2]) < 0.9 else UP, forward)
    right = unit(right)
    return Quaternion(matrix=np.column_stack([right, np.cross(forward, right), forward]))


def rotate_towards(current: Quaternion, target: Quaternion, max_angle: float) -> Quaternion:
    """Unity's ``Quaternion.RotateTowards``: ``target`` if it is within ``max_angle`` radians of
    ``current``, else the spherical interpolation from ``current`` towards it by that angle."""
    relative = current.inverse * target
    if relative.w < 0.0:  # the same rotation the short way round
        relative = -relative
    angle = 2.0 * math.acos(min(relative.w, 1.0))
    if angle <= max_angle or angle == 0.0:
        return target if np.dot(current.elements, target.elements) >= 0.0 else -target
    return (current * relative ** (max_angle / angle)).normalised


@dataclass
class ReferenceBoid:
    """One boid as the model describes it, with its terms as methods."""

    position: np.ndarray
    velocity: np.ndarray
    orientation: Quaternion
    waypoint: int = 0
    looking: np.ndarray | None = None
    """Where it looked at the start of the step, once its velocity changes mid-step (per rule)."""
    species: int = 0
    index: int = 0
    """Its place in the flock (what keys its counter-based noise)."""
    carried: dict[str, Any] = field(default_factory=dict)
    """Its entries of the per-boid state the flock carries (``FlockState.carried``), by name: a
    float, or a (width,) array. A term reads its own (``boid.carried["perches"]``) and returns a
    boid :meth:`carrying` the new one."""

    @property
    def radius(self) -> float:
        """Its adaptive radius (``Params.adaptive``)."""
        return self.carried.get(RADII.name, 0.0)

    def carrying(self, name: str, value: Any) -> ReferenceBoid:
        """This boid with ``value`` as its entry of the per-boid state ``name``."""
        return replace(self, carried={**self.carried, name: value})

    @cached_property
    def forward(self) -> np.ndarray:
        """The unit forward axis of its orientation."""
        return np.asarray(self.orientation.rotate(FORWARD))

    def heading(self, params: Params) -> np.ndarray:
        """Where it looks: its forward axis, or with the mesh turn limit its velocity's direction."""
        if self.looking is not None:
            return self.looking
        if params.turn_limit == "mesh" and np.any(self.velocity):
            return unit(self.velocity)
        return self.forward

    def seen(self, world: World, distance: float, fov: float, rule: int = 0):
        """The neighbours (:func:`neighbours`) within ``distance`` and the cone ``fov`` that rule
        ``rule`` acts on (0: any; 1, 2, 3: separation, alignment, cohesion, by the species'
        matrix), with their offsets (step 1)."""
        p = world.params
        positions = np.array([b.position for b in world.flock]).reshape(-1, 3)
        d = offsets(self.position, positions, p)
        own, heading = world.own(self), self.heading(world.own(self))
        seen = visible(self.position, heading, positions, own, distance, fov)
        if p.neighbours is not None:  # only the k nearest of those it sees
            radius = self.radius if p.adaptive else None
            seen &= neighbours(self.position, heading, positions, p, self.species, radius)
        if p.species:
            seen &= world.matrix[self.species, :, rule][p.species_of_boids]
        return [(world.flock[j], d[j]) for j in np.flatnonzero(seen)]

    # -- the user's rules and forces -------------------------------------------------------

    def user_rule(self, k: int, rule: PairRule, world: World, velocity: np.ndarray) -> np.ndarray:
        """The user's pair rule k: its contributions over the neighbours it sees, summed or averaged."""
        params = world.own(self)
        radius = params.view_distance if rule.radius is None else rule.radius
        fov = params.fov if rule.fov is None else rule.fov
        parts = []
        for other, offset in self.seen(world, radius, fov):
            try:
                out = rule.fn(
                    *map(read_only_copy, (self.position, velocity, self.position + offset, other.velocity))
                )
            except KeyboardInterrupt:
                raise
            except BaseException as error:  # a rule's GeneratorExit or SystemExit fails the rule too
                raise StepFailure(RULE_RAISED, -1, k, error) from error
            parts.append(_checked_vector(out, k))
        if not parts:
            return np.zeros(3)
        return rule.weight * (np.mean(parts, axis=0) if rule.average else np.sum(parts, axis=0))

    def user_force(self, k: int, force: Force, velocity: np.ndarray, time: float) -> np.ndarray:
        try:
            out = force.fn(read_only_copy(self.position), read_only_copy(velocity), time)
        except KeyboardInterrupt:
            raise
        except BaseException as error:
            raise StepFailure(RULE_RAISED, -1, k, error) from error
        return force.weight * _checked_vector(out, k)

    # -- one stage, and the whole update --------------------------------------------------

    def stage(self, name: str, world: World, velocity: np.ndarray) -> np.ndarray:
        """The acceleration of one stage for this boid, given its current velocity: a built-in
        term's (its module's reference computation), or one of the user's rules or forces."""
        if name.startswith("rule"):
            k = int(name[4:])
            return self.user_rule(k, world.rules[k], world, velocity)
        if name.startswith("force"):
            k = int(name[5:])
            return self.user_force(len(world.rules) + k, world.forces[k], velocity, world.time)
        return TERMS_BY_NAME[name].reference(self, world, velocity, world.own(self))

    def steering(self, world: World) -> np.ndarray:
        """Steps 2-6: the sum of the terms' accelerations."""
        total = sum((self.stage(name, world, self.velocity.copy()) for name in world.stages), np.zeros(3))
        if world.own(self).dimensions == 2:
            total[2] = 0.0
        return total

    def desired_velocity(self, world: World) -> np.ndarray:
        """Steps 2-7: u = v + dt * (sum of the terms), or each term in turn on the chained v."""
        p = world.own(self)
        velocity = self.velocity.copy()
        planar = p.dimensions == 2
        if p.combine == "sum":
            return velocity + p.dt * self.steering(world)
        for name in world.stages:
            if name in TERMS_BY_NAME and TERMS_BY_NAME[name].clamps:  # the speed limit sets v itself
                velocity = self.stage(name, world, velocity)
                continue
            a = self.stage(name, world, velocity)
            if planar:
                a[2] = 0.0
            velocity = velocity + p.dt * a
        return velocity

    def moved(self, desired: np.ndarray, params: Params) -> ReferenceBoid:
        """Steps 8-10 from the desired velocity: speed, turn (heading or mesh limit), move."""
        max_angle = math.radians(params.max_turn_rate) * params.dt
        chained = params.combine == "chain"  # the chain's speed stage has clamped it
        s_min, s_max = (0.0, math.inf) if chained else (params.min_speed, params.max_speed)
        if params.turn_limit == "heading":
            magnitude = np.linalg.norm(desired)
            speed = min(max(magnitude, s_min), s_max)  # step 8
            direction = desired / magnitude if magnitude > 0.0 else self.forward
            orientation = turned(self.orientation, direction, max_angle)  # step 9
            velocity = speed * np.asarray(orientation.rotate(FORWARD))  # step 10
        else:  # mesh: the motion turns freely, the drawn orientation follows at the limited rate
            velocity = clamped(desired, s_min, s_max)
            orientation = self.orientation
            if np.any(velocity):
                target = look_rotation(velocity, np.asarray(up_axis(params)))
                orientation = rotate_towards(self.orientation, target, max_angle)
        position, velocity = settle(self.position + params.dt * velocity, velocity, params)
        return replace(self, position=position, velocity=velocity, orientation=orientation, looking=None)

    def flown(self, steering: np.ndarray, params: Params) -> ReferenceBoid:
        """Aerodynamic flight (``flock.flight = "aerodynamic"``) in place of steps 7-10: the bird rolls
        towards the bank of a level turn with the steering's lateral part, and lift (along its
        banked wings' normal), drag, thrust and gravity, with the steering along its heading and
        its level up, change its velocity; it is drawn along the new velocity, still banked."""
        g, v0, ratio = params.flight_gravity, params.flight_cruise_speed, params.flight_lift_drag
        wings_up = np.asarray(self.orientation.rotate(UP))
        level, right = level_frame(self.forward, wings_up)
        bank = math.atan2(wings_up @ right, wings_up @ level)
        most, roll = math.radians(params.flight_max_bank), math.radians(params.flight_roll_rate) * params.dt
        bank += float(np.clip(np.clip(math.atan2(steering @ right, g), -most, most) - bank, -roll, roll))
        wings = math.cos(bank) * level + math.sin(bank) * right
        speed = np.linalg.norm(self.velocity)
        lift = g * (speed / v0) ** 2 * wings
        drag = -(g / ratio) * (speed / v0) ** 2 * self.forward
        thrust = max(0.0, g / ratio + (v0 - speed) / params.flight_speed_time) * self.forward
        own = (steering @ self.forward) * self.forward + (steering @ level) * level
        velocity = self.velocity + params.dt * (lift + drag + thrust - g * UP + own)
        if not np.any(velocity):  # nothing to turn to: it keeps its orientation and velocity, and moves
            position, velocity = settle(self.position + params.dt * self.velocity, self.velocity, params)
            return replace(self, position=position, velocity=velocity, looking=None)
        heading = velocity / np.linalg.norm(velocity)
        level, right = level_frame(heading, wings)
        orientation = look_rotation(heading, math.cos(bank) * level + math.sin(bank) * right)
        speed = min(max(np.linalg.norm(velocity), params.min_speed), params.max_speed)
        velocity = speed * np.asarray(orientation.rotate(FORWARD))
        position, velocity = settle(self.position + params.dt * velocity, velocity, params)
        return replace(self, position=position, velocity=velocity, orientation=orientation, looking=None)

    def constrained(self, before: ReferenceBoid, world: World) -> ReferenceBoid:
        """This boid, just moved from where ``before`` was, where it may be: each term that acts
        after the move (:attr:`~flock3d.core.terms.Term.constrains`), in the registry's order."""
        boid = self
        for term in TERMS:
            if term.constrains and term.name in world.stages:
                boid = term.constrained(boid, before, world, world.own(before))
        return boid

    def updated(self, world: World) -> ReferenceBoid:
        """This boid after one step, computed from ``world`` (steps 1 to 10), and its adaptive
        radius nudged from where the others were."""
        boid = replace(self)  # the path stage may advance the waypoint of the copy
        own = world.own(self)
        flying = own.flight == "aerodynamic"
        u = boid.steering(world) if flying else boid.desired_velocity(world)
        if world.params.adaptive:
            positions = np.array([b.position for b in world.flock]).reshape(-1, 3)
            boid = boid.carrying(RADII.name, adapted_radius(
                self.radius, self.position, self.heading(own), positions, world.params, self.species
            ))  # fmt: skip
        return (boid.flown(u, own) if flying else boid.moved(u, own)).constrained(self, world)


def _checked_vector(out, k: int) -> np.ndarray:
    try:
        vector = np.asarray(out, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as error:
        raise StepFailure(RULE_SHAPE, -1, k, error) from error
    if vector.shape != (3,):
        raise StepFailure(RULE_SHAPE, -1, k)
    if not np.all(np.isfinite(vector)):
        raise StepFailure(RULE_NOT_FINITE, -1, k)
    return vector


@dataclass
class World:
    """What a boid sees and obeys during its update."""

    flock: list[ReferenceBoid]
    predators: list
    params: Params
    rules: Sequence[PairRule]
    forces: Sequence[Force]
    stages: list[str]
    time: float
    seed: int = 0
    """What keys the counter-based noise (the flock's seed)."""
    step_count: int = 0
    fields: object = None
    """What the objects read from files became (``Flock.fields``)."""

    def own(self, boid: ReferenceBoid) -> Params:
        """The parameters ``boid`` lives by: those of its species."""
        return self.params.of_species(boid.species)

    @cached_property
    def matrix(self) -> np.ndarray:
        """(S, S, 4) bool: whether species a sees, separates from, aligns with, coheres with b."""
        count = len(self.params.species)
        return np.array([[self.params.interacts(a, b) for b in range(count)] for a in range(count)])


def _sound(boid: ReferenceBoid) -> bool:
    values = np.concatenate([boid.position, boid.velocity])
    return bool(np.all(np.abs(values) < MAX_COORDINATE)) and np.all(np.isfinite(boid.orientation.elements))


@dataclass
class ReferencePredator:
    """A predator: flies at constant speed and turns, at its own limited rate, towards the nearest boid."""

    position: np.ndarray
    velocity: np.ndarray
    orientation: Quaternion

    def updated(self, flock: list[ReferenceBoid], params: Params) -> ReferencePredator:
        direction = np.asarray(self.orientation.rotate(FORWARD))
        if flock:
            d = offsets(self.position, np.array([b.position for b in flock]), params)
            nearest = d[int(np.argmin(np.linalg.norm(d, axis=1)))]
            if params.dimensions == 2:
                nearest[2] = 0.0
            if np.any(nearest):
                direction = unit(nearest)
        max_angle = math.radians(params.predator_turn_rate) * params.dt
        orientation = turned(self.orientation, direction, max_angle)
        velocity = params.predator_speed * np.asarray(orientation.rotate(FORWARD))
        position, velocity = settle(self.position + params.dt * velocity, velocity, params)
        return ReferencePredator(position, velocity, orientation)


def carried_entries(state: FlockState, i: int) -> dict[str, Any]:
    """Boid ``i``'s entries of the per-boid state ``state`` carries, by name: a float from an
    (N,) array, a (width,) copy from an (N, width) one (:attr:`ReferenceBoid.carried`)."""
    return {name: float(a[i]) if a.ndim == 1 else a[i].copy() for name, a in state.carried.items()}


def step(
    state: FlockState,
    params: Params,
    rules: Sequence[PairRule] = (),
    forces: Sequence[Force] = (),
    seed: int = 0,
    fields=None,
) -> FlockState:
    """One update of the whole world (boids and predators), in ``params.update``'s order;
    ``fields``: what the objects read from files became (``Flock.fields``).

    Returns a new state. Raises :class:`StepFailure` when a user rule fails or a boid's
    new state is not sound (the other boids' results are in ``failure.state``).
    """
    flock = [
        ReferenceBoid(p.copy(), v.copy(), Quaternion(q), int(k), species=int(s), index=i,
                      carried=carried_entries(state, i))
        for i, (p, v, q, k, s) in enumerate(zip(
            state.positions, state.velocities, state.orientations, state.waypoints,
            params.species_of_boids, strict=True,
        ))
    ]  # fmt: skip
    predators = [
        ReferencePredator(p.copy(), v.copy(), Quaternion(q))
        for p, v, q in zip(
            state.predator_positions, state.predator_velocities, state.predator_orientations, strict=True
        )
    ]
    world = World(
        list(flock),
        predators,
        params,
        rules,
        forces,
        stage_names(params, [r.name for r in rules], [f.name for f in forces]),
        state.time,
        seed,
        state.step_count,
        fields,
    )
    failed: list[tuple[int, StepFailure]] = []

    def attempt(i: int, update) -> ReferenceBoid:
        try:
            new = update()
        except StepFailure as failure:
            failed.append((i, failure))
            return world.flock[i]
        if not _sound(new):
            failed.append((i, StepFailure(NOT_FINITE, i)))
            return world.flock[i]
        return new

    if params.update == "synchronous":  # everyone from the world as it was
        moved = [attempt(i, lambda b=b: b.updated(world)) for i, b in enumerate(flock)]
    elif params.update == "sequential":  # one after another, each seeing those before it moved
        for i in range(len(flock)):
            world.flock[i] = attempt(i, lambda i=i: world.flock[i].updated(world))
        moved = world.flock
    else:  # per rule: each stage changes every velocity in place, in order; then all move
        moved = _per_rule(world, attempt, failed)
    hunted = [predator.updated(flock, params) for predator in predators]
    for term in TERMS:  # the world holds the predators as it holds the boids
        if term.keeps_predators is not None and term.name in world.stages:
            hunted = [term.constrained(h, p, world, params) for h, p in zip(hunted, predators, strict=True)]
    n, m = len(moved), len(hunted)
    new = FlockState(
        np.array([b.position for b in moved]).reshape(n, 3),
        np.array([b.velocity for b in moved]).reshape(n, 3),
        np.array([b.orientation.elements for b in moved]).reshape(n, 4),
        state.time + params.dt,
        state.step_count + 1,
        np.array([b.waypoint for b in moved], dtype=np.int64).reshape(n),
        np.array([p.position for p in hunted]).reshape(m, 3),
        np.array([p.velocity for p in hunted]).reshape(m, 3),
        np.array([p.orientation.elements for p in hunted]).reshape(m, 4),
        {name: np.array([b.carried[name] for b in moved], dtype=np.float64).reshape(a.shape)
         for name, a in state.carried.items()},
    )  # fmt: skip
    if failed:
        i, failure = min(failed, key=lambda item: item[0])
        failure.boid, failure.state = i, new
        raise failure
    return new


def _per_rule(world: World, attempt, failed: list) -> list[ReferenceBoid]:
    params = world.params
    start = list(world.flock)
    velocities = [b.velocity.copy() for b in start]
    broken: set[int] = set()
    for name in world.stages:
        for i, boid in enumerate(world.flock):
            if i in broken:
                continue
            if name in TERMS_BY_NAME and TERMS_BY_NAME[name].clamps:
                velocities[i] = boid.stage(name, world, velocities[i])
            else:
                try:
                    a = boid.stage(name, world, velocities[i])
                except StepFailure as failure:
                    failure.boid = i
                    failed.append((i, failure))
                    broken.add(i)
                    continue
                if params.dimensions == 2:
                    a[2] = 0.0
                velocities[i] = velocities[i] + params.dt * a
            # Later boids see this boid's new velocity; it still looks where it looked.
            world.flock[i] = replace(boid, velocity=velocities[i], looking=start[i].heading(world.own(boid)))
    return [
        start[i]
        if i in broken
        else attempt(
            i,
            lambda i=i: (
                replace(start[i], waypoint=world.flock[i].waypoint)
                .moved(velocities[i], world.own(start[i]))
                .constrained(start[i], world)
            ),
        )
        for i in range(len(start))
    ]
