"""Assembling a flock's fast step from the terms its parameters use.

The fast step is not one kernel with a flag for every option: for each combination of
choices (the model, the update and combine modes, the turn limit, the arena, the
separation falloff, which world features are present, the user's rules and forces)
this module writes the numba source of a step that contains exactly those terms
(:mod:`flock3d.core.components`) around the shared runtime (:mod:`flock3d.core.kernel`),
compiles it and caches it, on disk, under a name made from a hash of that source. So:

- only what a scene uses is compiled, and a scene compiles once per machine;
- parameter values (weights, radii, the field of view, dt...) are not baked in: they
  travel in one float64 array, so re-tuning a live flock never recompiles; only a
  change of structure (a new shape, the first attractor) assembles another step;
- your rules and forces (:func:`flock3d.pair_rule`, :func:`flock3d.force`) are compiled
  into the same loop as the built-in terms.

A step, for the model's synchronous update, as generated::

    for each of n steps:
        wrap positions into a periodic box; grid <- cells at least `reach` wide
        predators hunt from the start-of-step state
        in parallel, for each chunk of cells: gather the start-of-step state in cell order
        in parallel, for each chunk of cells:
            buffer <- candidates around each cell
            for each boid i of the cell:
                pair sums over the buffer: one branch-free loop for the built-in terms,
                    one more for the user's pair rules
                acceleration <- finished pair terms + per-boid terms  (sum), or
                velocity <- each term in turn, in the chain's order   (chain)
                stage i's desired velocity in the chunk's batch
            the batch turns (heading or mesh limit) as SIMD vectors; move, settle;
                check; write each boid's row

``sequential`` and ``per_rule`` updates run single-threaded over the live arrays in
index order, as their sources do.
"""

from __future__ import annotations

import hashlib
import inspect
import marshal
import math
import os
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numba
import numpy as np

from flock3d.core.kernel import (
    BOIDS_PER_CHUNK,
    F_X,
    LIMIT,
    OK,
    P_X,
    Q_W,
    S_MAX,
    S_MIN,
    U_X,
    Pointer,
    Workspace,
    chunk_pointer,
    cone_threshold,
    driver_is_cached,
    synchronous_driver,
)
from flock3d.core.params import Params
from flock3d.core.params import stage_names as params_stage_names
from flock3d.core.quaternion import turn_limit
from flock3d.core.state import FlockState

__all__ = [
    "Force",
    "PairRule",
    "Layout",
    "Stepper",
    "StepStatus",
    "layout_of",
    "stepper_for",
    "cache_dir",
    "RuleCompileError",
]


# -- the user's rules and forces, as the core sees them -------------------------------------


@dataclass(frozen=True, eq=False)
class Force:
    """A per-boid force: ``fn(position, velocity, time) -> acceleration`` (each (3,) float64).

    Made by :func:`flock3d.force`. ``weight`` multiplies what ``fn`` returns.
    """

    fn: Callable
    name: str
    weight: float = 1.0

    def replace(self, **changes: Any) -> Force:
        return replace(self, **changes)


@dataclass(frozen=True, eq=False)
class PairRule:
    """A neighbour rule: ``fn(p_i, v_i, p_j, v_j) -> contribution`` (each (3,) float64),
    summed over the neighbours j that boid i sees within ``radius`` and the cone ``fov``
    (None: the view's), averaged when ``average``, times ``weight``: an acceleration.

    Made by :func:`flock3d.pair_rule`. In a periodic arena p_j is the nearest image.
    """

    fn: Callable
    name: str
    radius: float | None = None
    fov: float | None = None
    average: bool = True
    weight: float = 1.0

    def replace(self, **changes: Any) -> PairRule:
        return replace(self, **changes)


class RuleCompileError(Exception):
    """A user rule that numba cannot compile; the message names the rule."""


# -- the structure of a step -----------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """The choices that shape a compiled step (everything else is a value in ``pv``)."""

    model: str
    update: str
    combine: str
    stages: tuple[str, ...]
    """Stage names in the order they act (chain), or the order they are summed."""
    turn: str
    shape: str
    planar: bool
    falloff: str
    alignment_form: str
    own_neighbourhoods: tuple[bool, bool, bool]
    """Separation, alignment, cohesion: whether each has its own radius/cone (else the view's)."""
    rules: tuple[tuple[str, bool], ...] = ()
    """User pair rules: (fingerprint, has its own cone)."""
    forces: tuple[str, ...] = ()
    """User forces: fingerprints."""
    neighbours: str = "metric"
    """``metric`` (every boid seen), ``topological`` (the k nearest seen) or ``adaptive`` (the k
    nearest within each boid's own radius, which the step adapts)."""
    species: int = 0
    """Number of species (0: one kind of boid); their values and matrix travel in pv."""

    @property
    def periodic(self) -> bool:
        return self.shape == "periodic"

    @property
    def indexed(self) -> bool:
        """Whether the candidate buffer carries the boids' indices (ties, species)."""
        return self.neighbours != "metric" or self.species > 0

    @property
    def wraps(self) -> bool:
        return self.shape in ("periodic", "wrap")


def stage_names(params: Params, rules: Sequence[PairRule] = (), forces: Sequence[Force] = ()) -> list[str]:
    """The stages a flock with ``rules`` and ``forces`` runs, in order (:func:`params.stage_names`)."""
    return params_stage_names(params, [r.name for r in rules], [f.name for f in forces])


def layout_of(params: Params, rules: Sequence[PairRule] = (), forces: Sequence[Force] = ()) -> Layout:
    """The structure of the step ``params`` (and the user's rules and forces) need."""
    neighbours = "adaptive" if params.adaptive else "metric" if params.neighbours is None else "topological"
    if params.model != "boids":
        return Layout(params.model, "synchronous", "sum", (), "heading", params.arena_shape,
                      params.dimensions == 2, "inverse", "difference", (False, False, False),
                      neighbours=neighbours)  # fmt: skip
    return Layout(
        model="boids",
        update=params.update,
        combine=params.combine,
        stages=tuple(stage_names(params, rules, forces)),
        turn=params.turn_limit,
        shape=params.arena_shape,
        planar=params.dimensions == 2,
        falloff=params.separation_falloff,
        alignment_form=params.alignment_form,
        own_neighbourhoods=(
            params.separation_fov is not None,
            params.alignment_distance is not None or params.alignment_fov is not None,
            params.cohesion_distance is not None or params.cohesion_fov is not None,
        ),
        rules=tuple((fingerprint(r.fn), r.fov is not None) for r in rules),
        forces=tuple(fingerprint(f.fn) for f in forces),
        neighbours=neighbours,
        species=len(params.species),
    )


# -- the values a step reads (pv) --------------------------------------------------------------


def _reach(params: Params, rules: Sequence[PairRule]) -> float:
    """The farthest any pair term looks (of any species): the cell size of the step's grid."""
    if params.model == "couzin":
        return params.zone_radii[2]
    if params.species:
        return max(_reach(params.of_species(k), rules) for k in range(len(params.species)))
    return max(
        [params.view_distance, *(params.view_distance if r.radius is None else r.radius for r in rules)]
    )


def _values(params: Params, rules: Sequence[PairRule], forces: Sequence[Force]) -> dict[str, float]:
    """Every number an assembled step may read, by name (the generated code picks its own)."""
    p = params
    omega = math.radians(p.max_turn_rate)
    out = {
        "dt": p.dt,
        "s_min": p.min_speed,
        "s_max": p.max_speed,
        "max_angle": min(omega * p.dt, math.inf),
        "reach": _reach(p, rules),
    }
    out["cos_max"], out["cos_half"], out["sin_half"] = turn_limit(omega * p.dt)
    out.update(k=float(p.neighbours or 0), adaptation=p.adaptation)
    if p.model == "couzin":
        r_r, r_o, r_a = p.zone_radii
        out.update(rr2=r_r * r_r, ro2=r_o * r_o, ra2=r_a * r_a, cone=cone_threshold(p.fov),
                   speed=p.speed, sigma=p.noise_sigma)  # fmt: skip
        return out
    if p.model == "vicsek":
        out.update(view2=p.view_distance**2, cone=cone_threshold(p.fov), speed=p.speed, eta=p.noise_eta)
        return out
    (rs, ra, rc), (fs, fa, fc) = p.rule_distances, p.rule_fovs
    out.update(
        view2=p.view_distance * p.view_distance,
        cone=cone_threshold(p.fov),
        rs=rs, sep2=rs * rs, sep_cone=cone_threshold(fs),
        ali2=ra * ra, ali_cone=cone_threshold(fa),
        coh2=rc * rc, coh_cone=cone_threshold(fc),
        k_s=p.separation, k_a=p.alignment, k_c=p.cohesion,
        average=1.0 if p.separation_average else 0.0,
        zero_mean=1.0 if p.empty_mean == "zero" else 0.0,
        conf_start=p.confinement_start * p.arena_radius,
        conf_fraction=p.confinement_start,
        k_b=p.confinement,
        containment=p.containment,
        omega=omega,
        path_weight=p.path.weight if p.path else 0.0,
        path_reach2=p.path.reach**2 if p.path else 0.0,
        avoidance=p.avoidance,
        ahead=p.max_speed * p.avoidance_lookahead,
        margin=p.avoidance_margin,
        flee2=p.flee_distance * p.flee_distance,
        flee=p.flee,
        predator_speed=p.predator_speed,
    )  # fmt: skip
    (out["predator_cos_max"], out["predator_cos_half"],
     out["predator_sin_half"]) = turn_limit(math.radians(p.predator_turn_rate) * p.dt)  # fmt: skip
    for k, r in enumerate(rules):
        radius = p.view_distance if r.radius is None else r.radius
        out[f"rule{k}_r2"] = radius * radius
        out[f"rule{k}_cone"] = cone_threshold(p.fov if r.fov is None else r.fov)
        out[f"rule{k}_w"] = r.weight
        out[f"rule{k}_avg"] = 1.0 if r.average else 0.0
    for k, f in enumerate(forces):
        out[f"force{k}_w"] = f.weight
    return out


#: Values each species has its own of (one slot per species in pv); the rest are the flock's.
SPECIES_VALUES = frozenset({
    "view2", "cone", "rs", "sep2", "sep_cone", "ali2", "ali_cone", "coh2", "coh_cone", "k_s", "k_a", "k_c",
    "s_min", "s_max", "max_angle", "cos_max", "cos_half", "sin_half", "omega", "ahead",
})  # fmt: skip
#: The interaction matrix of the species, one (S * S,) array per rule (> 0: acts), and where
#: each species' boids end (S - 1 cumulative counts).
_MATRICES = {"sees": "sees_m", "separation": "separates_m", "alignment": "aligns_m", "cohesion": "coheres_m"}


def value_slots(layout: Layout, name: str) -> int:
    """How many numbers value ``name`` takes in pv: one, one per species, or an array's length."""
    if name == "ends":
        return max(layout.species - 1, 0)
    if name in _MATRICES.values():
        return layout.species * layout.species
    return layout.species if layout.species and name in SPECIES_VALUES else 1


def _offsets(layout: Layout, names: Sequence[str]) -> dict[str, int]:
    """Where each value starts in pv."""
    out, at = {}, 0
    for name in names:
        out[name] = at
        at += value_slots(layout, name)
    return out


def _packed(layout: Layout, names: Sequence[str], params: Params, rules, forces) -> list[float]:
    """pv's numbers: each value of ``names`` in its slots (per species, arrays flattened)."""
    values = _values(params, rules, forces)
    kinds = [_values(params.of_species(k), rules, forces) for k in range(layout.species)]
    matrix = np.array(
        [[params.interacts(a, b) for b in range(layout.species)] for a in range(layout.species)]
    )
    out: list[float] = []
    for name in names:
        if name == "slack":  # in-place updates: how far a boid may move before the grid is rebuilt
            fastest = max([values["s_max"], *(kind["s_max"] for kind in kinds)])
            out.append(values["dt"] * fastest * (1.0 + 1e-9) + 1e-12)
        elif name == "ends":
            out += list(np.cumsum([sp.count for sp in params.species])[:-1].astype(float))
        elif name in _MATRICES.values():
            rule = list(_MATRICES.values()).index(name)
            out += list(matrix[:, :, rule].reshape(-1).astype(float))
        elif value_slots(layout, name) > 1 or (layout.species and name in SPECIES_VALUES):
            out += [kind[name] for kind in kinds]
        else:
            out.append(values[name])
    return out


# -- code generation ------------------------------------------------------------------------------


class _Code:
    """Lines of Python source with an indentation level."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0

    def __call__(self, *lines: str) -> None:
        for line in lines:
            self.lines.append("    " * self.level + line if line else "")

    def indent(self, by: int = 1) -> _Code:
        self.level += by
        return self

    def dedent(self, by: int = 1) -> None:
        self.level -= by

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


_BUILTIN_PAIR = ("separation", "alignment", "cohesion")
#: The columns of the candidate buffer and their count, by role; and of the chosen (the k
#: nearest, compacted) when a layout has topological neighbours.
_CANDIDATES = {"x": "bx", "y": "by", "z": "bz", "vx": "bvx", "vy": "bvy", "vz": "bvz", "id": "bid", "m": "m"}
_CHOSEN = {"x": "kx", "y": "ky", "z": "kz", "vx": "kvx", "vy": "kvy", "vz": "kvz", "id": "kid", "m": "n_sel"}


class _Generator:
    """Writes the module of one layout. The names it uses for values are recorded in ``used``."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.used: list[str] = []
        self.b = _CANDIDATES

    def v(self, name: str) -> str:
        """The local variable holding value ``name`` of pv (unpacked at the top of a function)."""
        if name not in self.used:
            self.used.append(name)
        return f"v_{name}"

    # neighbourhoods ------------------------------------------------------------------------

    def neighbourhood(self, term: str) -> tuple[str, str]:
        """(radius^2, cone) value names of a pair term."""
        L = self.layout
        if term == "separation":
            return "sep2", ("sep_cone" if L.own_neighbourhoods[0] else "cone")
        if term == "alignment":
            return ("ali2", "ali_cone") if L.own_neighbourhoods[1] else ("view2", "cone")
        if term == "cohesion":
            return ("coh2", "coh_cone") if L.own_neighbourhoods[2] else ("view2", "cone")
        k = int(term[len("rule") :])
        return f"rule{k}_r2", (f"rule{k}_cone" if L.rules[k][1] else "cone")

    def offset_to_candidate(self, c: _Code, rel: bool = True) -> None:
        """dx, dy, dz, d2, dot: candidate j seen from the boid; with species and ``rel``, ``rel``
        indexes the matrix entry of the boid's species and the candidate's."""
        b = self.b
        c("j = numba.uint64(jj)",
          f"dx = {b['x']}[j] - px", f"dy = {b['y']}[j] - py", f"dz = {b['z']}[j] - pz",
          "d2 = dx * dx + dy * dy + dz * dz",
          "dot = fx * dx + fy * dy + fz * dz")  # fmt: skip
        if self.layout.species and rel:
            c(f"rel = row + C.species_index({b['id']}[j], {self.v('ends')})")

    def species_rows(self, c: _Code, matrices: Sequence[str]) -> None:
        """Before a vectorised pair loop, with species: where each species' boids end
        (``end_k``), and the boid's row of each interaction matrix as flags (``<matrix>_k``:
        it acts on species k)."""
        n = self.layout.species
        c(*(f"end_{k} = {self.v('ends')}[{k}]" for k in range(n - 1)))
        for name in matrices:
            c(*(f"{name}_{k} = {self.v(name)}[row + {k}] > 0.0" for k in range(n)))

    def species_entry(self, c: _Code, name: str) -> str:
        """In that loop: the entry of matrix ``name`` for candidate j's species, as a chain of
        selects over the ``after_k`` flags (j's species is k or later). Looking it up by index
        (:func:`~flock3d.core.components.species_index`, then an indexed load) kept the loop
        from vectorising: 4x slower than one species."""
        c(f"{name}_j = {name}_0")
        c(*(f"{name}_j = {name}_{k} if after_{k} else {name}_j" for k in range(1, self.layout.species)))
        return f"{name}_j"

    def pair_loop(self, c: _Code, terms: Sequence[str]) -> None:
        """The branch-free loop summing the built-in pair ``terms`` over the candidates (the
        chosen k nearest, with topological neighbours)."""
        masks: dict[tuple[str, str], str] = {}
        species = self.layout.species
        cones: dict[str, str] = {}
        counted: dict[str, str] = {}  # a mask -> the term that counts it (terms sharing it share the count)
        mask_of: dict[str, str] = {}
        for term in terms:
            c(f"n_{term} = 0.0", f"s_{term}_x = s_{term}_y = s_{term}_z = 0.0")
        if species:
            self.species_rows(c, [_MATRICES[term] for term in ("sees", *terms)])
        if self.b is _CANDIDATES:  # padded to a multiple of 8 with entries no test accepts (see
            # kernel.fill_row): the loop runs whole SIMD vectors, without a scalar remainder
            c("for jj in range((m + 7) & -8):")
        else:
            c(f"for jj in range({self.b['m']}):")
        c.indent()
        self.offset_to_candidate(c, rel=False)
        c("cdot = dot * abs(dot)")
        if species:
            c(*(f"after_{k} = {self.b['id']}[j] >= end_{k - 1}" for k in range(1, species)))
            c(f"near = (d2 > 0.0) & {self.species_entry(c, _MATRICES['sees'])}")
        else:
            c("near = d2 > 0.0")
        for term in terms:
            hood = self.neighbourhood(term)
            if hood not in masks:
                masks[hood] = f"seen{len(masks)}"
                r2, cone = hood
                if cone not in cones:  # each cone tested once per candidate
                    cones[cone] = f"in_cone{len(cones)}"
                    c(f"{cones[cone]} = cdot >= {self.v(cone)} * d2")
                c(f"{masks[hood]} = near & (d2 < {self.v(r2)}) & {cones[cone]}")
            seen = masks[hood]
            if species:  # the rule acts on this species? (its own mask: the matrix differs by rule)
                c(f"acts_{term} = {seen} & {self.species_entry(c, _MATRICES[term])}")
                seen = f"acts_{term}"
            mask_of[term] = seen
            if term == "separation":
                fn = _FALLOFF_FUNCTION[self.layout.falloff]
                c(f"tx, ty, tz = C.{fn}(dx, dy, dz, d2, {self.v('rs')})")
            elif term == "alignment":
                b = self.b
                c(f"tx, ty, tz = C.neighbour_velocity({b['vx']}[j], {b['vy']}[j], {b['vz']}[j])")
            else:
                c("tx, ty, tz = C.neighbour_offset(dx, dy, dz)")
            if seen not in counted:
                counted[seen] = term
                c(f"n_{term} += 1.0 if {seen} else 0.0")
            c(f"s_{term}_x += tx if {seen} else 0.0",
              f"s_{term}_y += ty if {seen} else 0.0",
              f"s_{term}_z += tz if {seen} else 0.0")  # fmt: skip
        c.dedent()
        for term in terms:
            first = counted[mask_of[term]]
            if first != term:
                c(f"n_{term} = n_{first}")

    def user_pair_loop(self, c: _Code, k: int) -> None:
        """The loop of user pair rule k: called for the candidates it sees, with the boid's current v."""
        r2, cone = self.neighbourhood(f"rule{k}")
        b = self.b
        c(f"n_rule{k} = 0.0", f"s_rule{k}_x = s_rule{k}_y = s_rule{k}_z = 0.0",
          "p_i[0], p_i[1], p_i[2] = px, py, pz", "v_i[0], v_i[1], v_i[2] = vx, vy, vz",
          f"for jj in range({b['m']}):")  # fmt: skip
        c.indent()
        self.offset_to_candidate(c)
        sees = f" & ({self.v('sees_m')}[rel] > 0.0)" if self.layout.species else ""
        c(f"if not ((d2 > 0.0) & (d2 < {self.v(r2)}) & (dot * abs(dot) >= {self.v(cone)} * d2){sees}):",
          "    continue",
          f"p_j[0], p_j[1], p_j[2] = {b['x']}[j], {b['y']}[j], {b['z']}[j]",
          f"v_j[0], v_j[1], v_j[2] = {b['vx']}[j], {b['vy']}[j], {b['vz']}[j]",
          "try:",
          f"    r = U_rule{k}(p_i, v_i, p_j, v_j)",
          "except Exception:",
          f"    record(status, t, RULE_RAISED, boid, {k})",
          "    failed = True",
          "    break",
          "if len(r) != 3:",
          f"    record(status, t, RULE_SHAPE, boid, {k})",
          "    failed = True",
          "    break",
          "tx, ty, tz = float(r[0]), float(r[1]), float(r[2])",
          "if not (abs(tx) < np.inf and abs(ty) < np.inf and abs(tz) < np.inf):",
          f"    record(status, t, RULE_NOT_FINITE, boid, {k})",
          "    failed = True",
          "    break",
          f"n_rule{k} += 1.0",
          f"s_rule{k}_x += tx", f"s_rule{k}_y += ty", f"s_rule{k}_z += tz")  # fmt: skip
        c.dedent()

    def finish(self, c: _Code, stage: str) -> None:
        """``tx, ty, tz`` <- the acceleration of one stage, for the boid's current v."""
        L, v = self.layout, self.v
        if stage == "separation":
            c(f"tx, ty, tz = C.weighted({v('k_s')}, n_separation, s_separation_x, s_separation_y, "
              f"s_separation_z, {v('average')} > 0.0)")  # fmt: skip
        elif stage == "alignment":
            if L.alignment_form == "difference":
                c(f"tx, ty, tz = C.velocity_matching({v('k_a')}, n_alignment, s_alignment_x, s_alignment_y, "
                  f"s_alignment_z, vx, vy, vz, {v('zero_mean')} > 0.0)")  # fmt: skip
            else:
                c(f"tx, ty, tz = C.weighted({v('k_a')}, n_alignment, s_alignment_x, s_alignment_y, "
                  "s_alignment_z, True)")  # fmt: skip
        elif stage == "cohesion":
            c(f"tx, ty, tz = C.centering({v('k_c')}, n_cohesion, s_cohesion_x, s_cohesion_y, s_cohesion_z, "
              f"px, py, pz, {v('zero_mean')} > 0.0)")  # fmt: skip
        elif stage.startswith("rule"):
            k = int(stage[len("rule") :])
            c(f"tx, ty, tz = C.weighted({v(f'rule{k}_w')}, n_rule{k}, s_rule{k}_x, s_rule{k}_y, s_rule{k}_z, "
              f"{v(f'rule{k}_avg')} > 0.0)")  # fmt: skip
        elif stage == "confinement":
            if L.shape == "sphere":
                c(f"tx, ty, tz = C.sphere_confinement(px, py, pz, box, {v('conf_start')}, {v('k_b')})")
            else:
                c(
                    f"tx, ty, tz = C.box_confinement(px, py, pz, box, {v('conf_fraction')}, {v('k_b')}, planar)"
                )
        elif stage == "containment":
            c("speed = math.sqrt(vx * vx + vy * vy + vz * vz)",
              f"look = speed / {v('omega')}")  # fmt: skip
            if L.shape == "sphere":
                c(f"tx, ty, tz = C.sphere_containment(px, py, pz, fx, fy, fz, qw, qx, qy, qz, look, box, "
                  f"{v('conf_start')}, {v('containment')})")  # fmt: skip
            else:
                c(f"tx, ty, tz = C.box_containment(px, py, pz, fx, fy, fz, qw, qx, qy, qz, look, box, "
                  f"{v('conf_fraction')}, {v('containment')}, planar)")  # fmt: skip
        elif stage == "attractors":
            c(
                f"tx, ty, tz = C.attraction(px, py, pz, vx, vy, vz, attractors, {v('s_max')}, box, periodic, planar)"
            )
        elif stage == "path":
            c(f"tx, ty, tz, wp = C.path_following(px, py, pz, vx, vy, vz, path, waypoints[i], {v('path_weight')}, "
              f"{v('path_reach2')}, {v('s_max')}, box, periodic, planar)",
              "waypoints[i] = wp")  # fmt: skip
        elif stage == "obstacles":
            c(f"tx, ty, tz = C.obstacle_avoidance(px, py, pz, fx, fy, fz, qw, qx, qy, qz, obstacles, "
              f"{v('avoidance')}, {v('ahead')}, {v('margin')}, box, periodic, planar)")  # fmt: skip
        elif stage == "flee":
            c(f"tx, ty, tz = C.flight(px, py, pz, fx, fy, fz, hunters, {v('flee2')}, {v('flee')}, {v('cone')}, "
              "box, periodic, planar)")  # fmt: skip
        elif stage == "wind":
            c("tx, ty, tz = C.wind(px, py, pz, box, wind_u, gradient)")
        elif stage.startswith("force"):
            k = int(stage[len("force") :])
            c("p_i[0], p_i[1], p_i[2] = px, py, pz", "v_i[0], v_i[1], v_i[2] = vx, vy, vz",
              "try:",
              f"    r = U_force{k}(p_i, v_i, now)",
              "except Exception:",
              f"    record(status, t, RULE_RAISED, boid, {len(L.rules) + k})",
              "    failed = True",
              "    r = p_i",
              "if len(r) != 3:",
              f"    record(status, t, RULE_SHAPE, boid, {len(L.rules) + k})",
              "    failed = True",
              "    r = p_i",
              f"w = {v(f'force{k}_w')}",
              "tx, ty, tz = w * float(r[0]), w * float(r[1]), w * float(r[2])",
              "if not (abs(tx) < np.inf and abs(ty) < np.inf and abs(tz) < np.inf):",
              f"    record(status, t, RULE_NOT_FINITE, boid, {len(L.rules) + k})",
              "    failed = True")  # fmt: skip
        else:  # pragma: no cover - stage_names only yields the stages above
            raise AssertionError(stage)

    def chosen_buffers(self, c: _Code, capacity: str) -> None:
        """With topological neighbours, the arrays the k nearest are chosen into (at most
        ``capacity``, the candidate buffer's size); with the adaptive radius, where the boids'
        radii are in pv (after the values: boid i reads and writes only its own)."""
        L = self.layout
        if L.neighbours == "metric":
            return
        c(f"n_pick = max(1, min(int({self.v('k')}), {capacity}))",
          "sel, sel_d2, kb = np.empty(n_pick, dtype=np.int64), np.empty(n_pick), np.empty((7, n_pick))",
          f"seen, seen_d2 = np.empty({capacity}, dtype=np.int64), np.empty({capacity})",
          "kbuf = (kb[0], kb[1], kb[2], kb[3], kb[4], kb[5], kb[6])",
          "kx, ky, kz, kvx, kvy, kvz, kid = kbuf",
          "none = pv[:0]")  # fmt: skip
        if L.neighbours == "adaptive":
            c("radius_at = pv.shape[0] - pos.shape[0]")

    def choose(self, c: _Code, r2: str, cone: str) -> None:
        """With topological neighbours: the k nearest candidates the boid sees within sqrt(r2)
        and ``cone`` (ties to the lower index), copied into the chosen buffer, which the pair
        sums then run over (``self.b``); with the adaptive radius only those within the boid's
        radius, and its radius for the next step (``r_new``)."""
        L, v = self.layout, self.v
        self.b = _CANDIDATES
        if L.neighbours == "metric":
            return
        ends, sees = (v("ends"), f"{v('sees_m')}[row:row + {L.species}]") if L.species else ("none", "none")
        c(f"n_sel = C.nearest_seen(bx, by, bz, bid, m, px, py, pz, fx, fy, fz, {v(r2)}, {v(cone)}, n_pick, "
          f"{ends}, {sees}, sel, sel_d2, seen, seen_d2)")  # fmt: skip
        if L.neighbours == "adaptive":
            c("r_i = pv[radius_at + boid]",
              f"r_new = C.adapted_radius(r_i, n_sel, int({v('k')}), sel_d2, {v(r2)}, {v('adaptation')})",
              "n_sel = C.within(sel_d2, n_sel, r_i * r_i)")  # fmt: skip
        c("C.compact((bx, by, bz, bvx, bvy, bvz, bid), sel, n_sel, kbuf)  # this cell's candidates")
        self.b = _CHOSEN

    def boid_update(self, c: _Code, n_rules: int) -> None:
        """Everything after the candidates are in the buffer: sums, forces, the desired velocity.

        Expects px..pz, vx..vz, fx..fz (heading), qw..qz, i, t, m, slot and the buffer; stages
        boid i in column ``slot`` of the batch (:meth:`turn_batch` turns, moves and writes it)."""
        L, v = self.layout, self.v
        c("failed = False")
        self.choose(c, "view2", "cone")
        builtin = [s for s in L.stages if s in _BUILTIN_PAIR]
        self.pair_loop(c, builtin)
        if L.combine == "sum":
            for k in range(n_rules):
                self.user_pair_loop(c, k)
            c("ax = ay = az = 0.0")
            for stage in L.stages:
                self.finish(c, stage)
                c("ax += tx", "ay += ty", "az += tz")
            if L.planar:
                c("az = 0.0")
            c(f"ux, uy, uz = vx + {v('dt')} * ax, vy + {v('dt')} * ay, vz + {v('dt')} * az")
            s_min, s_max = v("s_min"), v("s_max")
        else:
            c("ux, uy, uz = vx, vy, vz")
            c("vx0, vy0, vz0 = vx, vy, vz")
            for stage in L.stages:
                c(f"# stage: {stage}")
                if stage == "speed":
                    c(f"vx, vy, vz = clamp_speed(vx, vy, vz, {v('s_min')}, {v('s_max')})")
                    continue
                if stage.startswith("rule"):
                    self.user_pair_loop(c, int(stage[len("rule") :]))
                self.finish(c, stage)
                if L.planar:
                    c("tz = 0.0")
                c(f"vx += {v('dt')} * tx", f"vy += {v('dt')} * ty", f"vz += {v('dt')} * tz")
            c("ux, uy, uz = vx, vy, vz", "vx, vy, vz = vx0, vy0, vz0")
            s_min, s_max = "0.0", "np.inf"  # the chain's speed stage has clamped it
        self.stage(c, s_min, s_max)

    # modules ------------------------------------------------------------------------------------

    def header(self, c: _Code) -> None:
        L = self.layout
        c('"""A flock3d step assembled by flock3d.core.assemble (generated; do not edit)."""',
          "import math",
          "import numba",
          "import numpy as np",
          "from flock3d.core import components as C",
          "from flock3d.core.kernel import (CHUNK_SIGNATURE, FAST, OK, RULE_NOT_FINITE, RULE_RAISED, RULE_SHAPE, STAGED,",
          "    candidate_buffer, clamp_speed, fill_around, fill_candidates, fill_row, heading, hunt, image, move_rows,",
          "    record, row_span, turn_rows, wrap_into_box)",
          "from flock3d.core.neighbors import CellGrid, build_grid, build_periodic_grid",
          "",
          f"# user rules: {', '.join(fp for fp, _ in L.rules) or 'none'}; forces: {', '.join(L.forces) or 'none'}",
          f"UP = {tuple(float(x) for x in up_axis_of(L.planar))}",
          "_compiled = numba.njit(fastmath=FAST, error_model='numpy', cache=True, nogil=True)",
          "# The driver calls chunk through a pointer: it needs no entry point from Python.",
          "_chunk = numba.njit(CHUNK_SIGNATURE, fastmath=FAST, error_model='numpy', cache=True, nogil=True,",
          "                    no_cpython_wrapper=True)",
          "")  # fmt: skip

    def chunk_head(self, c: _Code) -> None:
        """The chunk function's signature and set-up (the same for every synchronous layout, but
        for the candidates' indices, which topological neighbours and species need)."""
        n_cols = 7 if self.layout.indexed else 6
        buffer = ", ".join(f"b[{k}]" for k in range(n_cols))
        runs = ["rbx", "rby", "rbz", "rbvx", "rbvy", "rbvz", "rbid"][:n_cols]
        cut = ", ".join(f"{name}[run0:]" for name in runs)
        c("@_chunk",
          "def chunk(t, bounds, gf, gi, ids, start, cols, heads, pos, vel, quat, waypoints, pv, flags, box, sides,",
          "          attractors, path, obstacles, wind_u, gradient, hunters, status, now, seed, step_count):",
          _UNPACK,
          "    grid = CellGrid(gf[0], gf[1], gf[2], gf[3], gi[0], gi[1], gi[2], ids, start, gf[4], gf[5])",
          "    fxs, fys, fzs = heads[0], heads[1], heads[2]",
          "    c_lo, c_hi = bounds[t], bounds[t + 1]",
          "    cells_x, cells_y = gi[0], gi[1]",
          "    crowded = gi[3] != 0  # candidates cell by cell (fill_candidates), else row by row (fill_row)",
          f"    b, xoff = candidate_buffer(c_lo, c_hi, grid, {n_cols}, periodic, crowded)",
          f"    buf = ({buffer})",
          f"    {', '.join(runs)} = buf",
          "    p_i, v_i, p_j, v_j = np.empty(3), np.empty(3), np.empty(3), np.empty(3)",
          f"    reach2 = {self.v('reach')} * {self.v('reach')}",
          "    rows0 = start[c_lo]  # the chunk's boids turn and move as one batch (turn_rows)")  # fmt: skip
        c.indent()
        self.batch_arrays(c, "start[c_hi] - rows0")
        self.chosen_buffers(c, "b.shape[1]")
        c.dedent()
        c("    c_next = c_lo",
          "    while c_next < c_hi:  # row segment after row segment: cells seg_first .. seg_last of a row",
          "        seg_row = c_next // cells_x",
          "        seg_first, seg_last = c_next, min(c_hi, (seg_row + 1) * cells_x) - 1",
          "        c_next = seg_last + 1",
          "        while seg_first <= seg_last and start[seg_first + 1] == start[seg_first]:",
          "            seg_first += 1",
          "        while seg_last >= seg_first and start[seg_last + 1] == start[seg_last]:",
          "            seg_last -= 1",
          "        if seg_first > seg_last:",
          "            continue",
          "        row_x = seg_row * cells_x",
          "        span_a, span_b = row_span(seg_first - row_x, seg_last - row_x, cells_x, periodic)",
          "        if not crowded:",
          "            fill_row(seg_row % cells_y, seg_row // cells_y, span_a, span_b, grid, cols, reach2, buf, xoff,",
          "                     periodic, sides)",
          "        for c in range(seg_first, seg_last + 1):",
          "            if start[c + 1] == start[c]:",
          "                continue",
          "            if crowded:",
          "                run0 = 0",
          "                m = fill_candidates(c, grid, cols, reach2, buf, periodic, sides)",
          "            else:  # the candidates of cell c: x-cells c - 1 .. c + 1 of the row buffer",
          "                cell_x = c - row_x",
          "                run0 = xoff[max(cell_x - 1, span_a) - span_a]",
          "                m = xoff[min(cell_x + 1, span_b) - span_a + 1] - run0",
          f"            {', '.join(_CANDIDATES[k] for k in ('x', 'y', 'z', 'vx', 'vy', 'vz', 'id')[:n_cols])} = {cut}",
          "            for k in range(start[c], start[c + 1]):",
          "                i, boid, slot = k, ids[k], k - rows0  # the row of the state, the boid's public index, its slot",
          "                px, py, pz = cols[k, 0], cols[k, 1], cols[k, 2]",
          "                vx, vy, vz = cols[k, 3], cols[k, 4], cols[k, 5]",
          "                fx, fy, fz = fxs[k], fys[k], fzs[k]",
          "                qw, qx, qy, qz = quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3]",
          "                " + _UNPACK_BOID)  # fmt: skip

    def boids_synchronous(self) -> str:
        c = _Code()
        self.header(c)
        self.chunk_head(c)
        c.indent(4)
        self.boid_update(c, len(self.layout.rules))
        c.dedent(3)
        self.turn_batch(c, "rows0", "n_rows", "ids")
        c.dedent()
        return self.finalize(c)

    def grid(self, reach: str) -> str:
        """The call building the step's grid, cells at least ``reach`` wide."""
        if self.layout.periodic:
            return f"build_periodic_grid(pos, box[:3], box[3:], {reach}, planar)"
        return f"build_grid(pos, {reach})"

    def hunt(self, c: _Code) -> None:
        if "flee" in self.layout.stages:
            v = self.v
            c(f"hunt(pred_pos, pred_vel, pred_quat, pos, np.arange(n), box, periodic, wraps, planar, {v('predator_speed')}, dt, "
              f"{v('predator_cos_max')}, {v('predator_cos_half')}, {v('predator_sin_half')})")  # fmt: skip

    def boids_in_place(self) -> str:
        """``sequential`` (boid after boid) or ``per_rule`` (rule after rule), over the live arrays."""
        L, v = self.layout, self.v
        c = _Code()
        self.header(c)
        reach, slack = v("reach"), v("slack")
        c("@_compiled",
          "def advance(pos, vel, quat, waypoints, pred_pos, pred_vel, pred_quat, n_steps, time0, clock0, pv, flags,",
          "            box, attractors, path, obstacles, wind_u, gradient, status, stop):",
          _UNPACK,
          "    n = pos.shape[0]",
          "    b = np.empty((7, n + 8))  # room for the padding (see fill_around)",
          "    buf = (b[0], b[1], b[2], b[3], b[4], b[5], b[6])",
          "    bx, by, bz, bvx, bvy, bvz, bid = buf",
          "    heads = np.empty((n, 3))",
          "    p_i, v_i, p_j, v_j = np.empty(3), np.empty(3), np.empty(3), np.empty(3)",
          "    t = 0",
          f"    dt = {v('dt')}",
          "    rows_ids = np.arange(n)")  # fmt: skip
        c.indent()
        self.batch_arrays(c, "n")
        self.chosen_buffers(c, "n")
        c.dedent()
        c("    for s in range(n_steps):",
          "        if stop[0]:  # set by another thread: end the call between steps",
          "            return s",
          "        now = time0 + (clock0 + s) * dt",
          f"        if {self.layout.periodic}:",
          "            wrap_into_box(pos, vel, box, planar)",
          "            wrap_into_box(pred_pos, pred_vel, box, planar)",
          f"        grid = {self.grid(reach + ' + ' + slack)}",
          "        hunters = pred_pos.copy()")  # fmt: skip
        c.indent(2)
        self.hunt(c)
        c("for i in range(n):",
          "    heads[i, 0], heads[i, 1], heads[i, 2] = heading(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3],",
          "                                                    vel[i, 0], vel[i, 1], vel[i, 2], mesh)")  # fmt: skip
        if L.update == "sequential":
            c("for i in range(n):")
            c.indent()
            c("boid = i",
              "px, py, pz = pos[i, 0], pos[i, 1], pos[i, 2]",
              "vx, vy, vz = vel[i, 0], vel[i, 1], vel[i, 2]",
              "fx, fy, fz = heads[i, 0], heads[i, 1], heads[i, 2]",
              "qw, qx, qy, qz = quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3]",
              _UNPACK_BOID,
              "slot = 0  # a batch of one: the boids after it see where it went",
              f"m = fill_around(px, py, pz, grid, pos, vel, {reach} * {reach}, buf, periodic, box)")  # fmt: skip
            self.boid_update(c, len(L.rules))
            self.turn_batch(c, "i", "1", "rows_ids")
            # A boid that moved farther than the grid allows for: rebuild it for those after.
            c("ox = image(pos[i, 0] - px, 2.0 * box[3], periodic)",
              "oy = image(pos[i, 1] - py, 2.0 * box[4], periodic)",
              "oz = image(pos[i, 2] - pz, 2.0 * box[5], periodic and not planar)",
              f"if ox * ox + oy * oy + oz * oz > {slack} * {slack}:",
              f"    grid = {self.grid(reach + ' + ' + slack)}")  # fmt: skip
            c.dedent()
        else:
            self.per_rule_stages(c)
        c("if status[0, 0] != OK:", "    return s + 1")
        c.dedent(2)
        c("    return n_steps")
        return self.finalize(c)

    def per_rule_stages(self, c: _Code) -> None:
        """Rule after rule: each stage changes every boid's velocity in place, in index order,
        reading the others' live velocities; then every boid turns and moves."""
        L, v = self.layout, self.v
        c(
            "broken = np.zeros(n, dtype=np.bool_)  # a boid whose rule failed keeps its state",
            "vel0 = vel.copy()",
        )
        for stage in L.stages:
            c(f"# stage: {stage}", "for i in range(n):")
            c.indent()
            c("boid = i",
              "if broken[i]:",
              "    continue",
              "px, py, pz = pos[i, 0], pos[i, 1], pos[i, 2]",
              "vx, vy, vz = vel[i, 0], vel[i, 1], vel[i, 2]",
              "fx, fy, fz = heads[i, 0], heads[i, 1], heads[i, 2]",
              "qw, qx, qy, qz = quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3]",
              _UNPACK_BOID,
              "failed = False")  # fmt: skip
            if stage == "speed":
                c(f"vel[i, 0], vel[i, 1], vel[i, 2] = clamp_speed(vx, vy, vz, {v('s_min')}, {v('s_max')})")
                c.dedent()
                continue
            if stage in _BUILTIN_PAIR or stage.startswith("rule"):
                c(
                    f"m = fill_around(px, py, pz, grid, pos, vel, {v('reach')} * {v('reach')}, buf, periodic, box)"
                )
                self.choose(c, "view2", "cone")
                if stage in _BUILTIN_PAIR:
                    self.pair_loop(c, [stage])
                else:
                    self.user_pair_loop(c, int(stage[len("rule") :]))
            self.finish(c, stage)
            if L.planar:
                c("tz = 0.0")
            c(
                "if failed:",
                "    broken[i] = True",
                "else:",
                f"    vel[i, 0], vel[i, 1], vel[i, 2] = vx + {v('dt')} * tx, vy + {v('dt')} * ty, vz + {v('dt')} * tz",
            )
            c.dedent()
        c("# every boid turns and moves", "for i in range(n):")
        c.indent()
        c("boid, slot = i, i",
          "failed_rows[slot] = broken[i]",
          "if broken[i]:",
          "    vel[i, 0], vel[i, 1], vel[i, 2] = vel0[i, 0], vel0[i, 1], vel0[i, 2]",
          "    continue",
          "px, py, pz = pos[i, 0], pos[i, 1], pos[i, 2]",
          "ux, uy, uz = vel[i, 0], vel[i, 1], vel[i, 2]",
          "vel[i, 0], vel[i, 1], vel[i, 2] = vel0[i, 0], vel0[i, 1], vel0[i, 2]  # kept if the move fails",
          "fx, fy, fz = heads[i, 0], heads[i, 1], heads[i, 2]",
          "qw, qx, qy, qz = quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3]",
          _UNPACK_BOID,
          "failed = False")  # fmt: skip
        self.stage(c, "0.0", "np.inf")
        c.dedent()
        self.turn_batch(c, "0", "n", "rows_ids")

    def batch_arrays(self, c: _Code, n_rows: str) -> None:
        """The arrays of a batch of ``n_rows`` boids that turn and move together (turn_rows)."""
        c(f"n_rows = {n_rows}",
          "staged, turned = np.empty((STAGED, n_rows)), np.empty((7, n_rows))",
          "failed_rows = np.zeros(n_rows, dtype=np.bool_)")  # fmt: skip
        if self.layout.neighbours == "adaptive":
            c("radii = np.empty(n_rows)  # each boid's radius for the next step, kept if it moves")

    def stage(self, c: _Code, s_min: str, s_max: str) -> None:
        """Put boid i in column ``slot`` of the batch: its state, desired velocity u and turn limits."""
        v = self.v
        limit = (v("max_angle"), "0.0", "0.0") if self.layout.turn == "mesh" else (
            v("cos_max"), v("cos_half"), v("sin_half"))  # fmt: skip
        rows = [
            (Q_W, ("qw", "qx", "qy", "qz")),
            (U_X, ("ux", "uy", "uz")),
            (F_X, ("fx", "fy", "fz")),
            (S_MIN, (s_min,)),
            (S_MAX, (s_max,)),
            (LIMIT, limit),
            (P_X, ("px", "py", "pz")),
        ]
        for first, values in rows:
            targets = ", ".join(f"staged[{first + a}, slot]" for a in range(len(values)))
            c(f"{targets} = {', '.join(values)}")
        c("failed_rows[slot] = failed")
        if self.layout.neighbours == "adaptive":
            c("radii[slot] = r_new")

    def turn_batch(self, c: _Code, k0: str, n: str, ids: str) -> None:
        """Turn (heading or mesh limit), move, settle and write the batch: columns 0 .. n - 1,
        rows k0 .. k0 + n - 1 of the state (public indices ``ids``); a failed boid keeps its row."""
        mesh = self.layout.turn != "heading"
        c(f"turn_rows({n}, staged, turned, {mesh}, UP[0], UP[1], UP[2])",
          f"move_rows({k0}, {n}, staged, turned, failed_rows, {self.v('dt')}, box, wraps, planar, quat, vel, pos, "
          f"{ids}, status, t)")  # fmt: skip
        if self.layout.neighbours == "adaptive":
            c(f"for slot in range({n}):",
              "    if not failed_rows[slot]:",
              f"        pv[radius_at + {ids}[{k0} + slot]] = radii[slot]")  # fmt: skip

    def couzin(self) -> str:
        """The Couzin model's chunk: the buffer carries unit headings (bvx.. are headings)."""
        return self.zone_chunk(
            "ra2",
            "n_r, rx, ry, rz, n_o, ox, oy, oz, n_a, ax, ay, az",
            ("rr2", "ro2", "ra2"),
            "n_r, rx, ry, rz, n_o, ox, oy, oz, n_a, ax, ay, az",
            ("perturbed", "sigma"),
        )

    def vicsek(self) -> str:
        """The Vicsek model's chunk: each particle takes the direction of its own heading plus
        its neighbours' (the Couzin orientation zone alone, of radius r), tilted by the noise."""
        return self.zone_chunk(
            "view2",
            "_, _, _, _, n_o, ox, oy, oz, _, _, _, _",
            (None, "view2", "view2"),
            "0.0, 0.0, 0.0, 0.0, n_o, ox, oy, oz, 0.0, 0.0, 0.0, 0.0",
            ("vicsek_noise", "eta"),
        )

    def zone_chunk(
        self, reach2: str, sums: str, radii2: tuple[str | None, ...], zones: str, noise: tuple[str, str]
    ) -> str:
        """A zone model's chunk (Couzin, Vicsek): the sums of ``C.zone_sums`` over the candidates
        within ``reach2``, with the squared radii ``radii2`` (repulsion, orientation, attraction
        value names; None: no zone), the direction ``zones`` of them gives, tilted by the noise
        ``(component, value name)``, then the model's turn at constant speed."""
        v = self.v
        c = _Code()
        self.header(c)
        self.chunk_head(c)
        c.indent(4)
        self.choose(c, reach2, "cone")
        b = self.b
        radii = ", ".join("0.0" if r is None else v(r) for r in radii2)
        c(f"{sums} = C.zone_sums(",
          f"    {b['x']}, {b['y']}, {b['z']}, {b['vx']}, {b['vy']}, {b['vz']}, {b['m']}, px, py, pz, fx, fy, fz, "
          f"{radii}, {v('cone')})",
          f"ux, uy, uz = C.zone_direction({zones}, fx, fy, fz, planar)",
          f"ux, uy, uz = C.{noise[0]}(ux, uy, uz, planar, {v(noise[1])}, seed, step_count, boid)",
          "failed = False")  # fmt: skip
        self.stage(c, v("speed"), v("speed"))
        c.dedent(3)
        self.turn_batch(c, "rows0", "n_rows", "ids")
        c.dedent()
        return self.finalize(c)

    def finalize(self, c: _Code) -> str:
        """Replace each function's unpack marker with the values that function reads, and each
        boid's marker with its species' values (with species)."""
        L = self.layout
        at = _offsets(L, self.used)
        own = [name for name in self.used if L.species and name in SPECIES_VALUES]
        out, lines = [], c.lines
        for k, line in enumerate(lines):
            if line.strip() == _UNPACK_BOID:
                if L.species:
                    indent = line[: len(line) - len(line.lstrip())]
                    end = next((e for e in range(k + 1, len(lines)) if lines[e].startswith("@")), len(lines))
                    text = "\n".join(lines[k + 1 : end])
                    out += [indent + "sp = C.species_index(boid, v_ends)", indent + f"row = sp * {L.species}"]
                    out += [indent + f"v_{name} = pv[{at[name]} + sp]" for name in own if f"v_{name}" in text]
                continue
            if line != _UNPACK:
                out.append(line)
                continue
            end = next((e for e in range(k + 1, len(lines)) if lines[e].startswith("@")), len(lines))
            text = "\n".join(lines[k + 1 : end])
            for name in self.used:
                if name in own or not (f"v_{name}" in text or (name == "ends" and L.species)):
                    continue
                size = value_slots(L, name)
                is_array = name == "ends" or name in _MATRICES.values()
                out.append(
                    f"    v_{name} = pv[{at[name]}:{at[name] + size}]"
                    if is_array
                    else f"    v_{name} = pv[{at[name]}]"
                )
            # Flags travel as values, not constants, so the shared functions compile once for all.
            out.append("    periodic, wraps, planar, mesh = flags[0], flags[1], flags[2], flags[3]")
        return "\n".join(out) + "\n"

    def module(self) -> str:
        L = self.layout
        if L.species:
            self.v("ends")  # each boid's species is found from it
        if L.model == "couzin":
            return self.couzin()
        if L.model == "vicsek":
            return self.vicsek()
        if L.update == "synchronous":
            return self.boids_synchronous()
        return self.boids_in_place()


_FALLOFF_FUNCTION = {
    "inverse": "separation_inverse",
    "linear": "separation_linear",
    "linear_gap": "separation_linear_gap",
    "quadratic": "separation_quadratic",
}
_UNPACK = "#UNPACK"
_UNPACK_BOID = "#UNPACK_BOID"


def up_axis_of(planar: bool) -> tuple[float, float, float]:
    return (0.0, 0.0, 1.0) if planar else (0.0, 1.0, 0.0)


def generate(layout: Layout) -> tuple[str, list[str]]:
    """The source of the step module of ``layout`` and the names of the values it reads, in pv order."""
    gen = _Generator(layout)
    source = gen.module()
    return source, list(gen.used)


# -- fingerprints and the on-disk module cache -------------------------------------------------------


def fingerprint(fn: Callable) -> str:
    """A digest of a user function: its code, and the constants and functions it reads.

    numba freezes a function's global constants into its compiled code, so they are part
    of what the compiled step depends on; so are the functions it calls.
    """
    digest = hashlib.sha256()
    _fold(fn, digest, set())
    return digest.hexdigest()[:16]


def _fold(fn: Any, digest: Any, seen: set[int]) -> None:
    fn = getattr(fn, "py_func", fn)  # a numba dispatcher: its Python function
    if id(fn) in seen or not hasattr(fn, "__code__"):
        digest.update(repr(fn).encode())
        return
    seen.add(id(fn))
    # Its module too: numba's cache imports that module by name when it loads the step back.
    digest.update(str(getattr(fn, "__module__", "")).encode())
    try:
        digest.update(inspect.getsource(fn).encode())
    except (OSError, TypeError):
        digest.update(marshal.dumps(fn.__code__))
    names = set(fn.__code__.co_names)
    for code in fn.__code__.co_consts:  # nested functions and comprehensions
        if hasattr(code, "co_names"):
            names |= set(code.co_names)
    cells = [c.cell_contents for c in (fn.__closure__ or ()) if _has_contents(c)]
    values = [fn.__globals__[name] for name in sorted(names) if name in fn.__globals__] + cells
    for value in values:
        if isinstance(value, (bool, int, float, complex, str, bytes, tuple)):
            digest.update(repr(value).encode())
        elif isinstance(value, np.ndarray):
            digest.update(value.tobytes() + str(value.dtype).encode() + str(value.shape).encode())
        elif callable(value) and hasattr(getattr(value, "py_func", value), "__code__"):
            _fold(value, digest, seen)


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


_CORE_FILES = ("assemble.py", "components.py", "kernel.py", "neighbors.py", "noise.py", "quaternion.py")
_core_digest: str | None = None


def _core_fingerprint() -> str:
    """A digest of the core sources the generated code compiles in (and of numba's version)."""
    global _core_digest
    if _core_digest is None:
        digest = hashlib.sha256(f"{numba.__version__} {sys.version}".encode())
        folder = Path(__file__).parent
        for name in _CORE_FILES:
            digest.update((folder / name).read_bytes())
        _core_digest = digest.hexdigest()
    return _core_digest


def cache_dir() -> Path:
    """Where assembled steps are written (and numba caches their compiled code).

    ``$FLOCK3D_CACHE_DIR``, else ``$XDG_CACHE_HOME/flock3d`` (``~/.cache/flock3d``); a
    temporary folder when neither can be written.
    """
    env = os.environ.get("FLOCK3D_CACHE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "flock3d"
    folder = base / "steps"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK):
            return folder
    except OSError:
        pass
    folder = (
        Path(tempfile.gettempdir()) / f"flock3d-{os.getuid() if hasattr(os, 'getuid') else 'user'}" / "steps"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _load_module(source: str, injected: dict[str, Any]) -> Any:
    key = hashlib.sha256((source + _core_fingerprint()).encode()).hexdigest()[:24]
    name = f"flock3d_step_{key}"
    if name in sys.modules:
        module = sys.modules[name]
    else:
        path = cache_dir() / f"{name}.py"
        try:
            fresh = path.read_bytes() == source.encode()
        except OSError:
            fresh = False
        if not fresh:  # missing, or damaged: the cache is disposable
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(source)
            os.replace(tmp, path)  # atomic: a parallel process never reads half a file
        module = types.ModuleType(name)
        module.__file__ = str(path)  # where numba keeps its cache of the module's functions
        module.__dict__.update(injected)  # before it runs: its chunk compiles as it is defined
        # Registered first: numba's cache names the module of the code it loads back.
        sys.modules[name] = module
        try:
            # Compiled from the source itself, not through a .pyc that could be damaged.
            exec(compile(source, str(path), "exec"), module.__dict__)
        except BaseException:
            del sys.modules[name]
            raise
    return module


# -- steppers -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepStatus:
    """How a call to :meth:`Stepper.advance` ended."""

    steps: int
    """Steps completed (the last of them possibly the failing one)."""
    code: int = OK
    """``kernel.OK``, or what went wrong: NOT_FINITE, RULE_RAISED, RULE_NOT_FINITE, RULE_SHAPE."""
    boid: int = -1
    """The failing boid with the lowest index."""
    term: int = -1
    """For a rule failure, the rule (user pair rules first, then user forces)."""

    @property
    def ok(self) -> bool:
        return self.code == OK


@dataclass
class Stepper:
    """The compiled step of one :class:`Layout`."""

    layout: Layout
    source: str
    value_names: list[str]
    module: Any
    rules: tuple[PairRule, ...] = ()
    forces: tuple[Force, ...] = ()
    _packed: dict = field(default_factory=dict)
    _chunk_pointer: Pointer | None = None

    def _chunk(self) -> Pointer:
        """The assembled chunk as the synchronous driver takes it (looked up once)."""
        if self._chunk_pointer is None:
            self._chunk_pointer = chunk_pointer(self.module.chunk)
        return self._chunk_pointer

    def values(self, params: Params) -> np.ndarray:
        """pv: the values the step reads, for ``params`` (and the rules' weights and radii)."""
        key = (params, tuple((r.radius, r.fov, r.average, r.weight) for r in self.rules),
               tuple(f.weight for f in self.forces))  # fmt: skip
        pv = self._packed.get(key)
        if pv is None:
            pv = np.array(
                _packed(self.layout, self.value_names, params, self.rules, self.forces), dtype=np.float64
            )
            if len(self._packed) > 64:
                self._packed.clear()
            self._packed[key] = pv
        return pv

    def prepare(self, state: FlockState) -> None:
        """Compile now what advancing ``state`` needs and is not compiled yet (the driver), so that
        a call on another thread only runs compiled code."""
        if self.layout.update == "synchronous":
            _driver(self.layout.periodic, state.n_predators > 0)

    def advance(self, state: FlockState, params: Params, n: int, seed: int = 0,
                workspace: Workspace | None = None, stop: np.ndarray | None = None) -> StepStatus:  # fmt: skip
        """Advance ``state`` by up to ``n`` steps in place; stops after a step that fails.

        ``workspace``: the synchronous driver's working arrays, which a flock keeps between calls
        (a fresh one when not given). ``stop``: a (1,) bool array that another thread may set to
        end the call before its next step (the state is then whole, at the last step done)."""
        pv = self.values(params)
        box = np.array([*params.arena_center, *params.half_extents], dtype=np.float64)
        L = self.layout
        n_chunks = max(1, (len(state) + BOIDS_PER_CHUNK - 1) // BOIDS_PER_CHUNK)
        flags = np.array(
            [L.periodic, L.wraps, L.planar, L.turn == "mesh", L.model != "boids"], dtype=np.bool_
        )
        adaptive = L.neighbours == "adaptive"
        if adaptive:  # each boid's radius rides after the values; boid i reads and writes its own only
            pv = np.concatenate([pv, state.radii])
        status = np.zeros((n_chunks if L.update == "synchronous" else 1, 3), dtype=np.int64)
        attractors, path, obstacles, wind_u, gradient = _world_arrays(params)
        arrays = (state.positions, state.velocities, state.orientations, state.waypoints, state.predator_positions,
                  state.predator_velocities, state.predator_orientations)  # fmt: skip
        stop = np.zeros(1, dtype=np.bool_) if stop is None else stop
        time0, clock0 = state.clock(params.dt)
        if L.update == "synchronous":
            fixed = np.array([pv[_offsets(L, self.value_names)["reach"]], params.dt, params.predator_speed,
                              *turn_limit(math.radians(params.predator_turn_rate) * params.dt)])  # fmt: skip
            driver = _driver(L.periodic, len(state.predator_positions) > 0)
            work = (workspace or Workspace()).arrays(len(state))
            done = driver(self._chunk(), *arrays, int(n), time0, clock0, int(state.step_count), int(seed), pv,
                          flags, box, attractors, path, obstacles, wind_u, gradient, status, fixed, stop,
                          *work)  # fmt: skip
        else:
            done = self.module.advance(*arrays, int(n), time0, clock0, pv, flags, box, attractors, path,
                                       obstacles, wind_u, gradient, status, stop)  # fmt: skip
        if adaptive:
            state.radii[...] = pv[len(pv) - len(state) :]
        state.advance_clock(done, params.dt)
        failed = status[status[:, 0] != OK]
        if len(failed) == 0:
            return StepStatus(done)
        row = failed[np.argmin(failed[:, 1])]
        return StepStatus(done, int(row[0]), int(row[1]), int(row[2]))


def _world_arrays(params: Params) -> tuple[np.ndarray, ...]:
    """Attractors (K, 5: x y z weight radius), path (P, 3), obstacles (O, 4: x y z radius),
    the uniform wind (3,) and its gradient (3, 3)."""
    attractors = np.array([[*a.position, a.weight, a.radius] for a in params.attractors], dtype=np.float64)
    path = np.array(params.path.points if params.path else [], dtype=np.float64)
    obstacles = np.array([[*o.center, o.radius] for o in params.obstacles], dtype=np.float64)
    return (
        attractors.reshape(-1, 5),
        path.reshape(-1, 3),
        obstacles.reshape(-1, 4),
        np.asarray(params.wind, dtype=np.float64),
        np.asarray(params.wind_gradient, dtype=np.float64).reshape(3, 3),
    )


_steppers: dict[tuple, Stepper] = {}
_lock = threading.Lock()

# -- the first run on a machine ------------------------------------------------------------------

_warm_up: subprocess.Popen | None = None


def warm_up_in_background(params: Params) -> None:
    """On a machine whose numba cache lacks the driver ``params`` need, compile it in a second process.

    The first step then compiles the scene's own chunk here while the other core compiles
    what every scene of its kind shares; :func:`stepper_for`'s first synchronous step
    waits for it and loads the result from the cache. Nothing happens once the cache
    holds it.
    """
    global _warm_up
    options = (params.arena_shape == "periodic", params.predator_count > 0)
    if _warm_up is not None or os.environ.get("FLOCK3D_NO_WARM_UP") or driver_is_cached(*options):
        return
    code = f"from flock3d.core.kernel import synchronous_driver; synchronous_driver{options}"
    # The same flock3d as this process's: first on the path, and no current directory before
    # it (-P), where another checkout may lie.
    here = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    try:
        _warm_up = subprocess.Popen(
            [sys.executable, "-P", "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env={**os.environ, "FLOCK3D_NO_WARM_UP": "1", "PYTHONPATH": path},
        )  # fmt: skip
    except OSError:
        _warm_up = None


def _driver(periodic: bool, predators: bool):
    """The synchronous driver, after any compile under way in the background ends."""
    global _warm_up
    if _warm_up is not None:
        try:
            _warm_up.wait(timeout=300)
        except subprocess.TimeoutExpired:
            _warm_up.kill()
        _warm_up = None
    return synchronous_driver(periodic, predators)


def stepper_for(params: Params, rules: Sequence[PairRule] = (), forces: Sequence[Force] = ()) -> Stepper:
    """The stepper of the layout ``params``, ``rules`` and ``forces`` need (assembled once per process)."""
    rules, forces = tuple(rules), tuple(forces)
    layout = layout_of(params, rules, forces)
    key = (layout, tuple(id(r.fn) for r in rules), tuple(id(f.fn) for f in forces))
    with _lock:
        stepper = _steppers.get(key)
        if stepper is None:
            source, names = generate(layout)
            if layout.update != "synchronous" and "slack" not in names:
                names.append("slack")
            injected = {f"U_rule{k}": _compiled_user(r.fn) for k, r in enumerate(rules)}
            injected.update({f"U_force{k}": _compiled_user(f.fn) for k, f in enumerate(forces)})
            module = _load_module(source, injected)
            stepper = Stepper(layout, source, names, module, rules, forces)
            _steppers[key] = stepper
    # The rules' weights and radii may differ between calls with the same functions.
    if stepper.rules is not rules or stepper.forces is not forces:
        stepper = replace(stepper, rules=rules, forces=forces, _packed={})
        _steppers[key] = stepper
    return stepper


def _compiled_user(fn: Callable) -> Any:
    if isinstance(fn, numba.core.dispatcher.Dispatcher):
        return fn
    return numba.njit(error_model="numpy")(fn)
