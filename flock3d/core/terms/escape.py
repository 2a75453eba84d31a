"""Escape waves: a bird near a predator zig-zags by banking, and its neighbours copy it.

After StarDisplay's agitation waves (Hemelrijk, van Zuidam and Hildenbrandt 2015, Behav Ecol
Sociobiol 69:755; the damping study, Behav Ecol Sociobiol 2019). A bird that is free (its last
escape began at least ``duration + reaction`` ago) starts an escape at the step's time ``now``
when

- a predator is within ``escape.distance`` of it: generation 0; or else
- it copies one of its topological neighbours (the k nearest it sees, ``flock.neighbours``) that
  began an escape m reaction times ago (``escape.reaction``, rounded to whole steps), for m = 1 to
  ``escape.looks``: each such neighbour j, of generation g_j, is copied when a draw of its own
  falls below ``escape.copy * escape.copy_decay^g_j``; the bird's generation is one more than the
  least g_j of those it copies. With one look a neighbour's escape is one chance; with more, a
  bird that watches it escape has a chance every reaction time while the escape lasts.

For ``escape.duration`` seconds the escaping bird of generation g pushes sideways, along the level
right of its heading, by ``sign * gravity * tan(beta)`` with ``beta = escape.bank *
escape.bank_decay^g``: the lateral acceleration of a level turn banked by beta, so that in
aerodynamic flight it rolls to beta (within ``flight.max_bank`` and its roll rate). ``sign`` is
one side (drawn at random when the escape starts) for the first half of the duration and the
other side for the second half: a zig then a zag.

Each bird's escape (:data:`ESCAPES`: its start time, its generation and its first side) is state
that it writes at the step's start and its neighbours read. Invariant (so that the order in which
boids or threads run does not matter): a neighbour's entry is read only to ask whether it began
m reaction times ago (1 <= m <= looks), and the only change a bird makes to its entry is a new
start at ``now`` when its last one began at least ``duration + reaction`` ago; both the entry
before the change and the one after answer "no", as ``reaction >= dt``, ``duration >= 2 dt`` and
``(looks - 1) reaction <= duration - dt`` (:meth:`Escape.problems`). The draws are
counter-based noise keyed by (seed, the step's index ``round(now / dt)``, bird, and the neighbour
copied), so both engines draw the same numbers.
"""

from __future__ import annotations

import math

import numpy as np

from flock3d.core import agents, noise
from flock3d.core.carried import Carried
from flock3d.core.fields import Problem, Spec, is_whole_number
from flock3d.core.kernel import image
from flock3d.core.quaternion import up_of
from flock3d.core.space import offsets
from flock3d.core.terms import Term, inlined
from flock3d.core.terms.flight import level_frame

DISTANCE = Spec("escape.distance", "birds closer than this to a predator start an escape: a banked zig-zag "
                "their topological neighbours copy (0: no escapes)", unit="units", symbol="d_e")  # fmt: skip
BANK = Spec("escape.bank", "the bank of the escape's zig and zag", unit="degrees", symbol="β_e",
            low_open=True, high=89.0)  # fmt: skip
DURATION = Spec("escape.duration", "how long one escape lasts: its zig, then its zag", unit="s", symbol="T_e",
                low_open=True)  # fmt: skip
REACTION = Spec("escape.reaction", "how long after a neighbour began its escape a bird copies it", unit="s",
                symbol="t_r", low_open=True)  # fmt: skip
COPY = Spec("escape.copy", "the probability that a bird copies a neighbour's escape", symbol="p_c", high=1.0)
BANK_DECAY = Spec("escape.bank_decay", "factor on the escape's bank at each copy along the chain "
                  "(1: copied as it was)", symbol="λ_β", high=1.0)  # fmt: skip
COPY_DECAY = Spec("escape.copy_decay", "factor on the probability of copying at each copy along the chain "
                  "(1: the same all along)", symbol="λ_p", high=1.0)  # fmt: skip
LOOKS = Spec("escape.looks", "how many chances a bird has to copy a neighbour's escape, one reaction time "
             "apart, while it lasts (1: only as it begins)", kind="integer", symbol="L", checked=False,
             allowed="1 to 1 + (T_e - dt) / t_r")  # fmt: skip

#: The values :func:`escape` takes as one tuple, in order.
LIMITS = ("esc_d2", "esc_bank", "esc_duration", "esc_reaction", "esc_copy", "esc_bank_decay",
          "esc_copy_decay", "esc_looks", "gravity")  # fmt: skip

#: A start time older than any flock's: a bird that never escaped.
NEVER = -1.0e9

ESCAPES = Carried(
    "escapes", 3, "each boid's escape (``Params.escape_distance``; unused otherwise): the time it began "
    "in seconds (-1e9: never), its generation along the copying chain (0: it saw the predator) and the "
    "side of its first bank (+1: right, -1: left)",
    initial=lambda p: np.tile([NEVER, 0.0, 1.0], (p.count, 1)),
)  # fmt: skip
"""The escape of each boid: the term's state."""

#: The noise stream of the side's draw (apart from the other terms' streams), and the first of the
#: copies' streams: one for each neighbour j, ``_COPIES + j``.
_STREAM = 24
_COPIES = 1 << 32


@inlined
def began_at(now, dt):
    """The step's index, what keys its draws: ``now / dt`` rounded (a non-negative integer)."""
    return np.int64(max(math.floor(now / dt + 0.5), 0.0))


@inlined
def watched(since, reaction, dt, looks):
    """Whether a neighbour that began its escape ``since`` seconds ago may be copied now: it began m
    reaction times ago (to within half a step), for m = 1 to ``looks``."""
    for m in range(1, int(looks) + 1):
        if m * reaction - 0.5 * dt <= since < m * reaction + 0.5 * dt:
            return True
    return False


@inlined
def started(pv, at, boid, px, py, pz, ids, n, hunters, box, periodic, planar, now, seed, dt, trigger2,
            reaction, copy, copy_decay, looks):  # fmt: skip
    """Whether a free boid starts an escape now, and its generation: a predator within the
    trigger distance (generation 0), or else the neighbours (``ids[:n]``, the k nearest it sees)
    that began 1 to ``looks`` reaction times ago, each copied with its own draw and probability:
    one more than the least generation of those copied. Returns ``(start, generation)``."""
    for k in range(hunters.shape[0]):
        dx = image(hunters[k, 0] - px, 2.0 * box[3], periodic)
        dy = image(hunters[k, 1] - py, 2.0 * box[4], periodic)
        dz = image(hunters[k, 2] - pz, 2.0 * box[5], periodic and not planar)
        if dx * dx + dy * dy + dz * dz < trigger2:
            return True, 0.0
    least = np.inf
    for jj in range(n):
        j = int(ids[jj])
        if watched(now - pv[at + 3 * j], reaction, dt, looks):
            generation = pv[at + 3 * j + 1]
            if noise.uniform(seed, began_at(now, dt), boid, _COPIES + j) < copy * copy_decay**generation:
                least = min(least, generation)
    return least < np.inf, least + 1.0


@inlined
def escape(pv, at, boid, px, py, pz, fx, fy, fz, qw, qx, qy, qz, ids, n, hunters, box, periodic, planar, now,
           seed, dt, limits):  # fmt: skip
    """The boid's escape acceleration at ``now``; a free boid that starts one writes its entry of the
    escapes (at ``pv[at + 3 * boid]``) first. ``limits`` is the term's values in :data:`LIMITS`'
    order, one tuple (a call of over 30 arguments would not inline)."""
    trigger2, bank, duration, reaction, copy, bank_decay, copy_decay, looks, gravity = limits
    own = at + 3 * boid
    if now - pv[own] >= duration + reaction - 0.5 * dt:  # free to start another
        start, generation = started(pv, at, boid, px, py, pz, ids, n, hunters, box, periodic, planar, now,
                                    seed, dt, trigger2, reaction, copy, copy_decay, looks)  # fmt: skip
        if start:
            side = 1.0 if noise.uniform(seed, began_at(now, dt), boid, _STREAM) < 0.5 else -1.0
            pv[own], pv[own + 1], pv[own + 2] = now, generation, side
    since = now - pv[own]
    if since >= duration - 0.5 * dt:
        return 0.0, 0.0, 0.0
    side = pv[own + 2] if since < 0.5 * duration - 0.5 * dt else -pv[own + 2]
    push = side * gravity * math.tan(bank * bank_decay ** pv[own + 1])
    bx, by, bz = up_of(qw, qx, qy, qz)
    _, _, _, rx, ry, rz = level_frame(fx, fy, fz, bx, by, bz)
    return push * rx, push * ry, push * rz


class Escape(Term):
    name = "escape"
    module = __name__
    fields = ("escape_distance", "escape_bank", "escape_duration", "escape_reaction", "escape_copy",
              "escape_bank_decay", "escape_copy_decay", "escape_looks")  # fmt: skip
    switches = ("escape_distance",)
    needs = "it needs escape.distance > 0"
    # The reference engine keeps the decision after the move (constrained); the fast step keeps it as
    # it is made, in escape(), where the neighbours are at hand: it has no lines after the move.
    constrains = True
    carries = (ESCAPES,)
    reads_chosen = True  # its neighbours' carried escapes, by their public indices

    def present(self, params):
        return params.escape_distance > 0.0

    def values(self, params):
        return {"esc_d2": params.escape_distance**2, "esc_bank": math.radians(params.escape_bank),
                "esc_duration": params.escape_duration, "esc_reaction": params.escape_reaction,
                "esc_copy": params.escape_copy, "esc_bank_decay": params.escape_bank_decay,
                "esc_copy_decay": params.escape_copy_decay,
                "esc_looks": float(params.escape_looks)}  # fmt: skip

    def line(self, g):
        v = g.v
        limits = ", ".join(v(name) for name in LIMITS)
        # The k nearest the boid sees: the columns the topological choice compacted (kid, n_sel).
        return [f"tx, ty, tz = {g.term(self)}.escape(pv, escapes_at, boid, px, py, pz, fx, fy, fz, qw, qx, "
                f"qy, qz, kid, n_sel, hunters, box, periodic, planar, now, seed, {v('dt')}, "
                f"({limits}))"]  # fmt: skip

    def reference(self, boid, world, velocity, params):
        began, generation, side = escape_of(boid, world, params)
        since = world.time - began
        if since >= params.escape_duration - 0.5 * params.dt:
            return np.zeros(3)
        if since >= 0.5 * params.escape_duration - 0.5 * params.dt:
            side = -side  # the zag
        beta = math.radians(params.escape_bank) * params.escape_bank_decay**generation
        _, right = agents.level_frame(boid.heading(params), np.asarray(boid.orientation.rotate(agents.UP)))
        return side * params.flight_gravity * math.tan(beta) * right

    def constrained(self, boid, before, world, params):
        return boid.carrying(ESCAPES.name, np.array(escape_of(before, world, params)))

    def problems(self, values, reported):
        if "escape_distance" in reported or not values["escape_distance"] > 0.0:
            return []
        out = []
        if values["neighbours"] is None:
            out.append(Problem("escape_distance", "needs topological neighbours to copy escapes from: "
                               "flock.neighbours = k (got escape.distance "
                               f"{values['escape_distance']:g} and metric neighbours)"))  # fmt: skip
        if values["update"] == "per_rule":  # each stage over all boids: none holds a boid's neighbours
            why = "where each boid's stages see its neighbours together (got update 'per_rule')"
            out.append(Problem("escape_distance", f"needs update = 'synchronous' or 'sequential', {why}"))
        dt = values["dt"]
        if "dt" in reported:
            return out
        if "escape_reaction" not in reported and values["escape_reaction"] < dt:
            out.append(Problem("escape_reaction", f"must be at least one step, dt = {dt:g} s "
                               f"(got {values['escape_reaction']:g})"))  # fmt: skip
        if "escape_duration" not in reported and values["escape_duration"] < 2.0 * dt:
            out.append(Problem("escape_duration", f"must be at least two steps, 2 dt = {2.0 * dt:g} s, a zig "
                               f"and a zag (got {values['escape_duration']:g})"))  # fmt: skip
        looks = values["escape_looks"]
        if not is_whole_number(looks) or looks < 1:
            out.append(Problem("escape_looks", f"must be a whole number, 1 or more (got {looks!r})"))
        elif (
            not {"escape_reaction", "escape_duration"} & set(reported)
            and looks > 1
            and ((looks - 1) * values["escape_reaction"] > values["escape_duration"] - dt + 1e-12 * dt)
        ):  # the last look sees the neighbour still escaping
            most = 1 + math.floor((values["escape_duration"] - dt) / values["escape_reaction"] + 1e-9)
            out.append(Problem("escape_looks", f"must be at most {most}: the last look, (looks - 1) reaction "
                               "times after the first, sees the neighbour before its escape's last step, "
                               f"escape.duration - dt = {values['escape_duration'] - dt:g} s "
                               f"(got {looks})"))  # fmt: skip
        return out

    def example(self, base):
        return base.replace(neighbours=7, predator_count=1, escape_distance=5.0)


def escape_of(boid, world, params) -> tuple[float, float, float]:
    """The readable :func:`escape`'s decision: ``boid``'s escape (start time, generation, side) after
    the start of the step at ``world.time``, from the predators and the others' escapes as they were."""
    began, generation, side = (float(x) for x in boid.carried[ESCAPES.name])
    now, dt = world.time, params.dt
    if now - began < params.escape_duration + params.escape_reaction - 0.5 * dt:
        return began, generation, side  # still escaping, or too soon after
    key = max(math.floor(now / dt + 0.5), 0)
    hunters = np.array([p.position for p in world.predators]).reshape(-1, 3)
    d = offsets(boid.position, hunters, params)
    if np.any(np.einsum("ij,ij->i", d, d) < params.escape_distance**2):  # a predator is near
        new = 0.0
    else:
        reaction = params.escape_reaction
        copied = []
        for other, _ in boid.seen(world, params.view_distance, params.fov):
            began_j, generation_j, _ = (float(x) for x in other.carried[ESCAPES.name])
            if not any(
                m * reaction - 0.5 * dt <= now - began_j < m * reaction + 0.5 * dt
                for m in range(1, params.escape_looks + 1)
            ):
                continue  # it did not begin a whole number of reaction times ago, up to escape.looks
            chance = params.escape_copy * params.escape_copy_decay**generation_j
            if noise.uniform(world.seed, key, boid.index, _COPIES + other.index) < chance:
                copied.append(generation_j)
        if not copied:
            return began, generation, side
        new = min(copied) + 1.0
    side = 1.0 if noise.uniform(world.seed, key, boid.index, _STREAM) < 0.5 else -1.0
    return now, new, side


TERM = Escape()
