"""Writing a layout's step: the template's functions with their holes filled.

A flock's fast step is Python source, compiled by numba: the skeleton of
:mod:`flock3d.core.step.template` (the loops every layout shares) with each ``hole(NAME)``
line replaced by the code that the layout needs: the built-in terms it has (each term
writes its own lines, :mod:`flock3d.core.terms`), the user's rules and forces, its kind of
neighbours and its species. Only what a scene uses is compiled, the pair terms in one fused,
branch-free loop over the candidates.

The generator writes a module twice: the first pass learns which values the step reads, in
the order it first reads them (the layout of ``pv``); the second writes each value's place
in ``pv`` where it is unpacked. Nothing edits the text afterwards.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any

from flock3d.core.kernel import F_X, LIMIT, P_X, Q_W, S_MAX, S_MIN, U_X
from flock3d.core.models import MODELS_BY_NAME, Model
from flock3d.core.models import Emit as ModelEmit
from flock3d.core.params import TERMS, TERMS_BY_NAME
from flock3d.core.step import template
from flock3d.core.terms import Emit, PairTerm, Term

__all__ = ["generate", "WORLD_TERMS", "SPECIES_VALUES", "MATRICES", "value_slots", "riders"]

#: The terms with world data, in the registry's order: the k-th holds entries ``world_at[k] ..
#: world_at[k + 1]`` of the packed, flat world array (none when the flock lacks it).
WORLD_TERMS: tuple[Term, ...] = tuple(term for term in TERMS if term.world_width)

#: Values each species has its own of (one slot per species in pv); the rest are the flock's.
SPECIES_VALUES = frozenset(
    {"view2", "cone", "s_min", "s_max", "max_angle", "cos_max", "cos_half", "sin_half"}
).union(*(term.species_values for term in TERMS))
#: The interaction matrix of the species, one (S * S,) array per rule (> 0: acts): sees, and the
#: matrix of each pair term.
MATRICES = ("sees_m", *(term.matrix for term in TERMS if isinstance(term, PairTerm)))

_CANDIDATES = {"x": "bx", "y": "by", "z": "bz", "vx": "bvx", "vy": "bvy", "vz": "bvz", "id": "bid", "m": "m"}
_CHOSEN = {"x": "kx", "y": "ky", "z": "kz", "vx": "kvx", "vy": "kvy", "vz": "kvz", "id": "kid", "m": "n_sel"}
_HOLE = re.compile(r'^(?P<indent>\s*)hole\("(?P<name>\w+)"(?P<values>(?:, "\w+")*)\)(?:\s*#.*)?$')


def riders(layout: Any) -> list[tuple[str, int]]:
    """The per-boid state arrays (FlockState's) that ride after the values in pv, in order, with
    how many numbers each boid has in it: each present term's that
    :attr:`~flock3d.core.terms.Term.carries` one, the model's (:attr:`~flock3d.core.models.Model.carries`:
    an inertial spin model's spins), the adaptive radii."""
    carried = [(c.name, c.width) for term in TERMS if term.name in layout.stages for c in term.carries]
    carried += [(c.name, c.width) for c in MODELS_BY_NAME[layout.model].carries]
    return carried + ([("radii", 1)] if layout.neighbours == "adaptive" else [])


def value_slots(layout: Any, name: str) -> int:
    """How many numbers value ``name`` takes in pv: one, one per species, or an array's length."""
    if name == "ends":
        return max(layout.species - 1, 0)
    if name in MATRICES:
        return layout.species * layout.species
    return layout.species if layout.species and name in SPECIES_VALUES else 1


def offsets(layout: Any, names: Sequence[str]) -> dict[str, int]:
    """Where each value starts in pv."""
    out, at = {}, 0
    for name in names:
        out[name] = at
        at += value_slots(layout, name)
    return out


def generate(layout: Any) -> tuple[str, list[str]]:
    """The source of the step module of ``layout`` and the names of the values it reads, in pv order."""
    first = _Generator(layout, None, None)
    first.module()
    names = list(first.used)
    second = _Generator(layout, offsets(layout, names), first.reads)
    return second.module(), names


class _Lines(list):
    """Lines of Python source written at an indentation level."""

    def __init__(self) -> None:
        super().__init__()
        self.level = 0

    def __call__(self, *lines: str) -> None:
        for line in lines:
            self.append("    " * self.level + line if line else "")

    def indent(self, by: int = 1) -> _Lines:
        self.level += by
        return self

    def dedent(self, by: int = 1) -> None:
        self.level -= by


class _Generator(Emit, ModelEmit):
    """Writes the module of one layout: fills the template's holes, term by term."""

    # the boid's quantities as a model's update names them (ModelEmit)
    position, heading, velocity, desired = (
        ("px", "py", "pz"),
        ("fx", "fy", "fz"),
        ("vx", "vy", "vz"),
        ("ux", "uy", "uz"),
    )
    noise, planar, components = "seed, step_count, boid", "planar", "C"

    def __init__(self, layout: Any, at: dict[str, int] | None, reads: set[str] | None) -> None:
        self.layout = layout
        self.kind: Model = MODELS_BY_NAME[layout.model]
        self.at = at  # where each value lies in pv (None in the first pass)
        self.used: list[str] = []  # values read, in the order first read
        self.reads: set[str] = set()  # values read by the function being written
        self.all_reads = reads  # all it reads, known in the second pass (unpacked before they are read)
        self.worlds: set[str] = set()  # its world data read
        self.modules: dict[str, str] = {}  # term module -> the name it is imported under

    # what terms ask of the generator (Emit) ---------------------------------------------------

    def v(self, name: str) -> str:
        if name not in self.used:
            self.used.append(name)
        self.reads.add(name)
        return f"v_{name}"

    def term(self, term: Term) -> str:
        alias = f"{term.name}_term"
        self.modules[term.module] = alias
        return alias

    def world(self, term: Term) -> str:
        self.worlds.add(term.name)
        return term.name

    # what models ask of the generator (ModelEmit) ---------------------------------------------

    def model(self, model: Model) -> str:
        alias = f"{model.ident}_model"
        self.modules[model.module] = alias
        return alias

    def choose(self, c: _Lines, r2: str, cone: str) -> dict[str, str]:
        return self._choose(c, r2, cone)

    def carried(self, c: _Lines, name: str) -> tuple[list[str], list[str]]:
        width = dict(riders(self.layout))[name]
        c(f"at = {name}_at + {width} * boid" if width > 1 else f"at = {name}_at + boid")
        return (
            ["pv[at]", *(f"pv[at + {k}]" for k in range(1, width))],
            [f"{name}[{k}, slot]" for k in range(width)] if width > 1 else [f"{name}[slot]"],
        )

    def stage(
        self, c: _Lines, s_min: str | None, s_max: str | None, position: tuple[str, ...] | None = None
    ) -> None:
        c("failed = False")
        self._stage(c, s_min or "0.0", s_max or "np.inf", position or self.position)

    # the module -----------------------------------------------------------------------------

    def module(self) -> str:
        """The source of the layout's step module."""
        L = self.layout
        if L.species:
            self.v("ends")  # each boid's species is found from it
        if L.update == "synchronous" or self.kind.update_kind != "terms":
            functions = [("_chunk", template.chunk, self._chunk_holes())]
        else:
            functions = [("_compiled", template.advance, self._advance_holes())]
        bodies = [f"@{decorator}\n" + self._fill(fn, holes) for decorator, fn, holes in functions]
        return self._header() + "\n" + "\n\n".join(bodies)

    def _header(self) -> str:
        L = self.layout
        source = inspect.getsource(template)
        imports = source[source.index("import math") : source.index("\n\ndef hole(")]
        rules = ", ".join(fp for fp, _ in L.rules) or "none"
        lines = [
            f'"""A flock3d step: {template.__name__} with its holes filled (generated; do not edit)."""',
            imports.strip(),
            "from flock3d.core import components as C",
            *(
                f"from {module.rsplit('.', 1)[0]} import {module.rsplit('.', 1)[1]} as {alias}"
                for module, alias in sorted(self.modules.items())
            ),  # fmt: skip
            "",
            f"# user rules: {rules}; forces: {', '.join(L.forces) or 'none'}",
            f"UP = {(0.0, 0.0, 1.0) if L.planar else (0.0, 1.0, 0.0)}",
            "_compiled = numba.njit(fastmath=FAST, error_model='numpy', cache=True, nogil=True)",
            "# The driver calls chunk through a pointer: it needs no entry point from Python.",
            "_chunk = numba.njit(CHUNK_SIGNATURE, fastmath=FAST, error_model='numpy', cache=True, nogil=True,",
            "                    no_cpython_wrapper=True)",
            "",
        ]
        return "\n".join(lines) + "\n"

    def _fill(self, fn, holes: dict[str, list[str]]) -> str:
        """The source of template function ``fn`` with its holes replaced by ``holes``' lines."""
        out = []
        for line in inspect.getsource(fn).splitlines():
            match = _HOLE.match(line)
            if match is None:
                out.append(line)
                continue
            indent = match["indent"]
            if match["name"] == "values":
                own = re.findall(r'"(\w+)"', match["values"])
                lines = self._values_lines(own)
            else:
                lines = holes[match["name"]]
            out += [indent + text if text else "" for text in lines]
        return "\n".join(out) + "\n"

    def _values_lines(self, own: list[str]) -> list[str]:
        """Unpack the values the function reads (those of each boid's species are unpacked per boid)."""
        for name in own:
            self.v(name)
        L, at = self.layout, self.at or {}
        lines = []
        for name in self.used:
            if name not in self.reads or (L.species and name in SPECIES_VALUES):
                continue
            start = at.get(name, 0)
            if name == "ends" or name in MATRICES:
                lines.append(f"v_{name} = pv[{start}:{start + value_slots(L, name)}]")
            else:
                lines.append(f"v_{name} = pv[{start}]")
        return lines

    def _world_lines(self) -> list[str]:
        """Each world feature's data the function reads, a view of ``world``: (rows, width), or
        the flat record of a term of ``world_width`` 1."""
        return [
            f"{term.name} = world[world_at[{k}]:world_at[{k + 1}]]"
            + ("" if term.world_width == 1 else f".reshape(-1, {term.world_width})")  # 1: a flat record
            for k, term in enumerate(WORLD_TERMS)
            if term.name in self.worlds
        ]

    def _now_lines(self) -> list[str]:
        """Where each world feature the function reads that moves is at the step's time ``now``."""
        return [line for term in WORLD_TERMS if term.name in self.worlds for line in term.at_time(self)]

    def _species_lines(self) -> list[str]:
        """A boid's species, its row of the interaction matrices and its species' own values."""
        L, at = self.layout, self.at or {}
        if not L.species:
            return []
        reads, names = (self.reads, self.used) if self.at is None else (self.all_reads, list(self.at))
        own = [name for name in names if name in SPECIES_VALUES and name in reads]
        return [
            "sp = C.species_index(boid, v_ends)",
            f"row = sp * {L.species}",
            *(f"v_{name} = pv[{at.get(name, 0)} + sp]" for name in own),
        ]

    # the synchronous chunk ------------------------------------------------------------------

    def _chunk_holes(self) -> dict[str, list[str]]:
        L = self.layout
        n_cols = 7 if L.indexed else 6
        runs = ["rbx", "rby", "rbz", "rbvx", "rbvy", "rbvz", "rbid"][:n_cols]
        columns = [_CANDIDATES[k] for k in ("x", "y", "z", "vx", "vy", "vz", "id")[:n_cols]]
        holes = {
            "buffer": [
                f"b, xoff = candidate_buffer(c_lo, c_hi, grid, {n_cols}, periodic, crowded)",
                f"buf = ({', '.join(f'b[{k}]' for k in range(n_cols))})",
                f"{', '.join(runs)} = buf",
            ],
            "cell": [f"{', '.join(columns)} = {', '.join(f'{r}[run0:]' for r in runs)}"],
            "batch": self._batch("b.shape[1]"),
        }
        boid = _Lines()
        if self.kind.update_kind == "terms":
            self._boid_update(boid, len(L.rules))
        else:
            self.kind.update(self, boid)
        holes["boid"] = list(boid)
        turn = _Lines()
        self._turn_batch(turn, "rows0", "n_rows", "ids")
        holes["turn"] = list(turn)
        holes["species"] = self._species_lines()
        holes["world"] = self._world_lines()
        holes["now"] = self._now_lines()
        return holes

    def _batch(self, capacity: str) -> list[str]:
        """Per chunk (or call): the adaptive radii of the batch, and the arrays the k nearest are
        chosen into (at most ``capacity``), with topological neighbours."""
        L = self.layout
        lines = []
        if L.neighbours == "adaptive":
            lines.append("radii = np.empty(n_rows)  # each boid's radius for the next step, kept if it moves")
        for own in self.kind.carries:  # the model's per-boid state rides after the values in pv
            name, width, why = own.name, own.width, own.note
            lines.append(f"{name} = np.empty({f'({width}, n_rows)' if width > 1 else 'n_rows'})  # {why}")
        if L.neighbours != "metric":
            lines += [
                f"n_pick = max(1, min(int({self.v('k')}), {capacity}))",
                "sel, sel_d2, kb = np.empty(n_pick, dtype=np.int64), np.empty(n_pick), np.empty((7, n_pick))",
                f"seen, seen_d2 = np.empty({capacity}, dtype=np.int64), np.empty({capacity})",
                "kbuf = (kb[0], kb[1], kb[2], kb[3], kb[4], kb[5], kb[6])",
                "kx, ky, kz, kvx, kvy, kvz, kid = kbuf",
                "none = pv[:0]",
            ]
            if L.neighbours == "adaptive":  # the boids' radii ride after the values in pv
                lines.append("radius_at = pv.shape[0] - pos.shape[0]")
        carried = riders(L)
        for j, (name, _) in enumerate(carried):  # the rest of the per-boid state rides before the radii
            if name != "radii":
                lines.append(f"{name}_at = pv.shape[0] - {sum(w for _, w in carried[j:])} * pos.shape[0]")
        return lines

    # a boid's update --------------------------------------------------------------------------

    def _neighbourhood(self, term: str) -> tuple[str, str]:
        """(radius^2, cone) value names of a pair term or of user pair rule ``rule<k>``."""
        if term in TERMS_BY_NAME:
            return TERMS_BY_NAME[term].neighbourhood(self.layout)
        k = int(term[len("rule") :])
        return f"rule{k}_r2", (f"rule{k}_cone" if self.layout.rules[k][1] else "cone")

    def _choose(self, c: _Lines, r2: str, cone: str) -> dict[str, str]:
        """With topological neighbours, choose the k nearest candidates the boid sees within
        sqrt(r2) and ``cone`` (ties to the lower index) into the chosen buffer; with the adaptive
        radius, those within the boid's radius, and its radius for the next step (``r_new``).
        Returns the columns the pair sums then run over."""
        L, v = self.layout, self.v
        if L.neighbours == "metric":
            return _CANDIDATES
        ends, sees = (v("ends"), f"{v('sees_m')}[row:row + {L.species}]") if L.species else ("none", "none")
        c(f"n_sel = C.nearest_seen(bx, by, bz, bid, m, px, py, pz, fx, fy, fz, {v(r2)}, {v(cone)}, n_pick, "
          f"{ends}, {sees}, sel, sel_d2, seen, seen_d2)")  # fmt: skip
        if L.neighbours == "adaptive":
            c("r_i = pv[radius_at + boid]",
              f"r_new = C.adapted_radius(r_i, n_sel, int({v('k')}), sel_d2, {v(r2)}, {v('adaptation')})",
              "n_sel = C.within(sel_d2, n_sel, r_i * r_i)")  # fmt: skip
        c("C.compact((bx, by, bz, bvx, bvy, bvz, bid), sel, n_sel, kbuf)  # this cell's candidates")
        return _CHOSEN

    def _offset_to_candidate(self, c: _Lines, b: dict[str, str], rel: bool = True) -> None:
        """dx, dy, dz, d2, dot: candidate j seen from the boid; with species and ``rel``, ``rel``
        indexes the matrix entry of the boid's species and the candidate's."""
        c("j = numba.uint64(jj)",
          f"dx = {b['x']}[j] - px", f"dy = {b['y']}[j] - py", f"dz = {b['z']}[j] - pz",
          "d2 = dx * dx + dy * dy + dz * dz",
          "dot = fx * dx + fy * dy + fz * dz")  # fmt: skip
        if self.layout.species and rel:
            c(f"rel = row + C.species_index({b['id']}[j], {self.v('ends')})")

    def _species_entry(self, c: _Lines, name: str) -> str:
        """In the pair loop: the entry of matrix ``name`` for candidate j's species, as a chain of
        selects over the ``after_k`` flags (j's species is k or later), which vectorises where an
        indexed load would not."""
        c(f"{name}_j = {name}_0")
        c(*(f"{name}_j = {name}_{k} if after_{k} else {name}_j" for k in range(1, self.layout.species)))
        return f"{name}_j"

    def _pair_loop(self, c: _Lines, terms: Sequence[PairTerm], b: dict[str, str]) -> None:
        """The branch-free loop summing the built-in pair ``terms`` over the candidates ``b``."""
        species = self.layout.species
        masks: dict[tuple[str, str], str] = {}
        cones: dict[str, str] = {}
        counted: dict[str, str] = {}  # a mask -> the term that counts it (terms sharing it share the count)
        mask_of: dict[str, str] = {}
        for term in terms:
            c(f"n_{term.name} = 0.0", f"s_{term.name}_x = s_{term.name}_y = s_{term.name}_z = 0.0")
        if species:
            n = species
            c(*(f"end_{k} = {self.v('ends')}[{k}]" for k in range(n - 1)))
            for name in ("sees_m", *(term.matrix for term in terms)):
                c(*(f"{name}_{k} = {self.v(name)}[row + {k}] > 0.0" for k in range(n)))
        if b is _CANDIDATES:  # padded to a multiple of 8 with entries no test accepts (see
            # kernel.fill_row): the loop runs whole SIMD vectors, without a scalar remainder
            c("for jj in range((m + 7) & -8):")
        else:
            c(f"for jj in range({b['m']}):")
        c.indent()
        self._offset_to_candidate(c, b, rel=False)
        c("cdot = dot * abs(dot)")
        if species:
            c(*(f"after_{k} = {b['id']}[j] >= end_{k - 1}" for k in range(1, species)))
            c(f"near = (d2 > 0.0) & {self._species_entry(c, 'sees_m')}")
        else:
            c("near = d2 > 0.0")
        for term in terms:
            hood = term.neighbourhood(self.layout)
            if hood not in masks:
                masks[hood] = f"seen{len(masks)}"
                r2, cone = hood
                if cone not in cones:  # each cone tested once per candidate
                    cones[cone] = f"in_cone{len(cones)}"
                    c(f"{cones[cone]} = cdot >= {self.v(cone)} * d2")
                c(f"{masks[hood]} = near & (d2 < {self.v(r2)}) & {cones[cone]}")
            seen = masks[hood]
            if species:  # the rule acts on this species? (its own mask: the matrix differs by rule)
                c(f"acts_{term.name} = {seen} & {self._species_entry(c, term.matrix)}")
                seen = f"acts_{term.name}"
            mask_of[term.name] = seen
            c(term.contribution(self, b))
            if seen not in counted:
                counted[seen] = term.name
                c(f"n_{term.name} += 1.0 if {seen} else 0.0")
            c(f"s_{term.name}_x += tx if {seen} else 0.0",
              f"s_{term.name}_y += ty if {seen} else 0.0",
              f"s_{term.name}_z += tz if {seen} else 0.0")  # fmt: skip
        c.dedent()
        for term in terms:
            first = counted[mask_of[term.name]]
            if first != term.name:
                c(f"n_{term.name} = n_{first}")

    def _user_pair_loop(self, c: _Lines, k: int) -> None:
        """The loop of user pair rule k: called for the candidates it sees, with the boid's current v."""
        r2, cone = self._neighbourhood(f"rule{k}")
        b = _CANDIDATES
        c(f"n_rule{k} = 0.0", f"s_rule{k}_x = s_rule{k}_y = s_rule{k}_z = 0.0",
          "p_i[0], p_i[1], p_i[2] = px, py, pz", "v_i[0], v_i[1], v_i[2] = vx, vy, vz",
          "ro_p_i, ro_v_i, ro_p_j, ro_v_j = read_only(p_i), read_only(v_i), read_only(p_j), read_only(v_j)",
          f"for jj in range({b['m']}):")  # fmt: skip
        c.indent()
        self._offset_to_candidate(c, b)
        sees = f" & ({self.v('sees_m')}[rel] > 0.0)" if self.layout.species else ""
        c(f"if not ((d2 > 0.0) & (d2 < {self.v(r2)}) & (dot * abs(dot) >= {self.v(cone)} * d2){sees}):",
          "    continue",
          f"p_j[0], p_j[1], p_j[2] = {b['x']}[j], {b['y']}[j], {b['z']}[j]",
          f"v_j[0], v_j[1], v_j[2] = {b['vx']}[j], {b['vy']}[j], {b['vz']}[j]")  # fmt: skip
        self._user_call(c, f"U_rule{k}(ro_p_i, ro_v_i, ro_p_j, ro_v_j)", "")
        c("if outcome != OK:",
          f"    record(status, t, outcome, boid, {k})",
          "    failed = True",
          "    break",
          f"n_rule{k} += 1.0",
          f"s_rule{k}_x += tx", f"s_rule{k}_y += ty", f"s_rule{k}_z += tz")  # fmt: skip
        c.dedent()

    def _finish(self, c: _Lines, stage: str) -> None:
        """``tx, ty, tz`` <- the acceleration of one stage, for the boid's current v."""
        v, L = self.v, self.layout
        if stage in TERMS_BY_NAME:
            term = TERMS_BY_NAME[stage]
            c(*(term.finish(self) if isinstance(term, PairTerm) else term.line(self)))
        elif stage.startswith("rule"):
            k = int(stage[len("rule") :])
            m = self.term(TERMS_BY_NAME["separation"])
            c(f"tx, ty, tz = {m}.weighted({v(f'rule{k}_w')}, n_rule{k}, s_rule{k}_x, s_rule{k}_y, "
              f"s_rule{k}_z, {v(f'rule{k}_avg')} > 0.0)")  # fmt: skip
        else:
            k = int(stage[len("force") :])
            c("p_i[0], p_i[1], p_i[2] = px, py, pz", "v_i[0], v_i[1], v_i[2] = vx, vy, vz",
              f"w = {v(f'force{k}_w')}")  # fmt: skip
            self._user_call(c, f"U_force{k}(read_only(p_i), read_only(v_i), now)", "w * ")
            c("if outcome != OK:",
              f"    record(status, t, outcome, boid, {len(L.rules) + k})",
              "    failed = True",
              "    tx = ty = tz = 0.0")  # fmt: skip

    @staticmethod
    def _user_call(c: _Lines, call: str, weight: str) -> None:
        """``tx, ty, tz`` <- what a user function returns (times ``weight``), and ``outcome``: OK,
        or the kernel's code for a call that raised, did not return 3 numbers or a non-finite one.

        Whatever 3 numbers it returns, a tuple, a list or a (3,) array, are read in one place
        (``r`` is never re-bound, so its type is the function's). Its array arguments are
        read-only views (``read_only``): numba refuses to compile a rule that writes into them.
        """
        c("tx = ty = tz = 0.0",
          "outcome = RULE_RAISED",
          "try:",
          f"    r = {call}",
          "    outcome = RULE_SHAPE",
          "    if len(r) == 3:",
          f"        tx, ty, tz = {weight}float(r[0]), {weight}float(r[1]), {weight}float(r[2])",
          "        finite = abs(tx) < np.inf and abs(ty) < np.inf and abs(tz) < np.inf",
          "        outcome = OK if finite else RULE_NOT_FINITE",
          "except Exception:",
          "    pass")  # fmt: skip

    def _boid_update(self, c: _Lines, n_rules: int) -> None:
        """Everything after the candidates are in the buffer: sums, forces, the desired velocity,
        staged in column ``slot`` of the batch."""
        L, v = self.layout, self.v
        c("failed = False")
        b = self._choose(c, "view2", "cone")
        pair = [TERMS_BY_NAME[s] for s in L.stages if isinstance(TERMS_BY_NAME.get(s), PairTerm)]
        self._pair_loop(c, pair, b)
        if L.combine == "sum":
            for k in range(n_rules):
                self._user_pair_loop(c, k)
            c("ax = ay = az = 0.0")
            for stage in L.stages:
                self._finish(c, stage)
                c("ax += tx", "ay += ty", "az += tz")
            if L.planar:
                c("az = 0.0")
            if L.flight == "aerodynamic":
                self._fly(c)
                return
            c(f"ux, uy, uz = vx + {v('dt')} * ax, vy + {v('dt')} * ay, vz + {v('dt')} * az")
            s_min, s_max = v("s_min"), v("s_max")
        else:
            c("ux, uy, uz = vx, vy, vz")
            c("vx0, vy0, vz0 = vx, vy, vz")
            for stage in L.stages:
                c(f"# stage: {stage}")
                term = TERMS_BY_NAME.get(stage)
                if term is not None and term.clamps:
                    c(*term.line(self))
                    continue
                if stage.startswith("rule"):
                    self._user_pair_loop(c, int(stage[len("rule") :]))
                self._finish(c, stage)
                if L.planar:
                    c("tz = 0.0")
                c(f"vx += {v('dt')} * tx", f"vy += {v('dt')} * ty", f"vz += {v('dt')} * tz")
            c("ux, uy, uz = vx, vy, vz", "vx, vy, vz = vx0, vy0, vz0")
            s_min, s_max = "0.0", "np.inf"  # the chain's speed stage has clamped it
        self._stage(c, s_min, s_max)

    def _fly(self, c: _Lines) -> None:
        """Aerodynamic flight: the acceleration (ax, ay, az) steers a bird that lifts, drags, pushes,
        falls and banks (``fly``); its new orientation and velocity go straight to the batch's
        ``turned``, which moves it (no turn of the batch)."""
        v, m = self.v, self.term(TERMS_BY_NAME["roost"])
        values = ", ".join(v(name) for name in ("dt", "cruise", "gravity", "lift_drag", "speed_time", "max_bank",
                                                 "roll_step", "s_min", "s_max"))  # fmt: skip
        c(f"nw, nx, ny, nz, nvx, nvy, nvz = {m}.fly(qw, qx, qy, qz, vx, vy, vz, ax, ay, az, {values})",
          "turned[0, slot], turned[1, slot], turned[2, slot], turned[3, slot] = nw, nx, ny, nz",
          "turned[4, slot], turned[5, slot], turned[6, slot] = nvx, nvy, nvz")  # fmt: skip
        # The start-of-step orientation too: what a constraint after the move (perching) restores.
        self._staged(c, [(Q_W, ("qw", "qx", "qy", "qz")), (P_X, ("px", "py", "pz"))])

    def _stage(
        self, c: _Lines, s_min: str, s_max: str, position: tuple[str, ...] = ("px", "py", "pz")
    ) -> None:
        """Put boid i in column ``slot`` of the batch: its state, desired velocity u, turn limits and
        the position the batch moves it from."""
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
            (P_X, position),
        ]
        self._staged(c, rows)

    def _staged(self, c: _Lines, rows: list[tuple[int, tuple[str, ...]]]) -> None:
        """Write ``rows`` (first row of ``staged``, values) into the boid's column, whether it
        failed, and its radius for the next step (adaptive neighbours)."""
        for first, values in rows:
            targets = ", ".join(f"staged[{first + a}, slot]" for a in range(len(values)))
            c(f"{targets} = {', '.join(values)}")
        c("failed_rows[slot] = failed")
        if self.layout.neighbours == "adaptive":
            c("radii[slot] = r_new")

    def _turn_batch(self, c: _Lines, k0: str, n: str, ids: str) -> None:
        """Turn (heading or mesh limit), move, settle and write the batch: columns 0 .. n - 1,
        rows k0 .. k0 + n - 1 of the state (public indices ``ids``); a failed boid keeps its row."""
        mesh = self.layout.turn != "heading"
        dt = "0.0" if self.layout.position_update == "old" else self.v("dt")  # staged where it moves to
        if self.layout.flight != "aerodynamic":  # a flying bird has turned itself (_fly)
            c(f"turn_rows({n}, staged, turned, {mesh}, UP[0], UP[1], UP[2])")
        c(f"move_rows({k0}, {n}, staged, turned, failed_rows, {dt}, box, wraps, planar, quat, vel, pos, "
          f"{ids}, status, t)")  # fmt: skip
        constraints = [term for term in TERMS if term.constrains and term.name in self.layout.stages]
        # Where each boid may be after its move: the terms' constraints, in the registry's order.
        if constraints:
            c(f"later = now + {self.v('dt')}", f"for slot in range({n}):")
            c.indent()
            c("if failed_rows[slot]:",
              "    continue",
              f"k = {k0} + slot",
              f"boid = {ids}[k]",
              "mx, my, mz = pos[k, 0], pos[k, 1], pos[k, 2]",
              "mvx, mvy, mvz = vel[k, 0], vel[k, 1], vel[k, 2]")  # fmt: skip
            for term in constraints:
                c(*term.constraint(self))
            c(
                "pos[k, 0], pos[k, 1], pos[k, 2] = mx, my, mz",
                "vel[k, 0], vel[k, 1], vel[k, 2] = mvx, mvy, mvz",
            )
            c.dedent()
        if self.layout.neighbours == "adaptive":
            c(f"for slot in range({n}):",
              "    if not failed_rows[slot]:",
              f"        pv[radius_at + {ids}[{k0} + slot]] = radii[slot]")  # fmt: skip
        for own in self.kind.carries:  # the model's per-boid state, kept if it moved
            name, width = own.name, own.width
            read, written = self.carried(_Lines(), name)
            c(f"for slot in range({n}):",
              "    if not failed_rows[slot]:",
              f"        at = {name}_at + {width} * {ids}[{k0} + slot]" if width > 1 else
              f"        at = {name}_at + {ids}[{k0} + slot]",
              f"        {', '.join(read)} = {', '.join(written)}")  # fmt: skip

    # in-place updates: sequential, per rule ------------------------------------------------------

    def _grid(self, reach: str) -> str:
        """The call building the step's grid, cells at least ``reach`` wide."""
        if self.layout.periodic:
            return f"build_periodic_grid(pos, box[:3], box[3:], {reach}, planar)"
        return f"build_grid(pos, {reach})"

    def _advance_holes(self) -> dict[str, list[str]]:
        L, v = self.layout, self.v
        reach = f"{v('reach')} + {v('slack')}"
        grid = []
        if L.periodic:
            grid += ["wrap_into_box(pos, vel, box, planar)", "wrap_into_box(pred_pos, pred_vel, box, planar)"]
        grid.append(f"grid = {self._grid(reach)}")
        hunt = []
        if "flee" in L.stages:
            hunt.append(
                f"hunt(pred_pos, pred_vel, pred_quat, pos, np.arange(n), box, periodic, wraps, planar, "
                f"{v('predator_speed')}, dt, {v('predator_cos_max')}, {v('predator_cos_half')}, "
                f"{v('predator_sin_half')})"
            )
        update = _Lines()
        if L.update == "sequential":
            self._sequential(update, reach)
        else:
            self._per_rule(update)
        holes = {"batch": self._batch("n"), "grid": grid, "hunt": hunt, "update": list(update)}
        holes["world"] = self._world_lines()
        holes["now"] = self._now_lines()
        return holes

    def _boid_state(self, c: _Lines) -> None:
        """Boid i's state from the live arrays (and its species' values)."""
        c("px, py, pz = pos[i, 0], pos[i, 1], pos[i, 2]",
          "vx, vy, vz = vel[i, 0], vel[i, 1], vel[i, 2]",
          "fx, fy, fz = heads[i, 0], heads[i, 1], heads[i, 2]",
          "qw, qx, qy, qz = quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3]",
          *self._species_lines())  # fmt: skip

    def _sequential(self, c: _Lines, reach: str) -> None:
        """Boid after boid: each sees the boids before it where they moved."""
        v = self.v
        c("for i in range(n):")
        c.indent()
        c("boid = i")
        self._boid_state(c)
        c("slot = 0  # a batch of one: the boids after it see where it went",
          f"m = fill_around(px, py, pz, grid, pos, vel, {v('reach')} * {v('reach')}, buf, periodic, box)")  # fmt: skip
        self._boid_update(c, len(self.layout.rules))
        self._turn_batch(c, "i", "1", "rows_ids")
        # A boid that moved farther than the grid allows for: rebuild it for those after.
        c("ox = image(pos[i, 0] - px, 2.0 * box[3], periodic)",
          "oy = image(pos[i, 1] - py, 2.0 * box[4], periodic)",
          "oz = image(pos[i, 2] - pz, 2.0 * box[5], periodic and not planar)",
          f"if ox * ox + oy * oy + oz * oz > {v('slack')} * {v('slack')}:",
          f"    grid = {self._grid(reach)}")  # fmt: skip
        c.dedent()

    def _per_rule(self, c: _Lines) -> None:
        """Rule after rule: each stage changes every boid's velocity in place, in index order,
        reading the others' live velocities; then every boid turns and moves."""
        L, v = self.layout, self.v
        c("broken = np.zeros(n, dtype=np.bool_)  # a boid whose rule failed keeps its state",
          "vel0 = vel.copy()")  # fmt: skip
        for stage in L.stages:
            term = TERMS_BY_NAME.get(stage)
            c(f"# stage: {stage}", "for i in range(n):")
            c.indent()
            c("boid = i", "if broken[i]:", "    continue")
            self._boid_state(c)
            c("failed = False")
            if term is not None and term.clamps:
                c(*term.line(self), "vel[i, 0], vel[i, 1], vel[i, 2] = vx, vy, vz")
                c.dedent()
                continue
            if isinstance(term, PairTerm) or stage.startswith("rule"):
                c(
                    f"m = fill_around(px, py, pz, grid, pos, vel, {v('reach')} * {v('reach')}, buf, periodic, box)"
                )
                b = self._choose(c, "view2", "cone")
                if isinstance(term, PairTerm):
                    self._pair_loop(c, [term], b)
                else:
                    self._user_pair_loop(c, int(stage[len("rule") :]))
            self._finish(c, stage)
            if L.planar:
                c("tz = 0.0")
            c("if failed:",
              "    broken[i] = True",
              "else:",
              f"    vel[i, 0], vel[i, 1], vel[i, 2] = vx + {v('dt')} * tx, vy + {v('dt')} * ty, vz + {v('dt')} * tz")  # fmt: skip
            c.dedent()
        c("# every boid turns and moves", "for i in range(n):")
        c.indent()
        c("boid, slot = i, i",
          "failed_rows[slot] = broken[i]",
          "if broken[i]:",
          "    vel[i, 0], vel[i, 1], vel[i, 2] = vel0[i, 0], vel0[i, 1], vel0[i, 2]",
          "    continue")  # fmt: skip
        self._boid_state(c)
        c("ux, uy, uz = vx, vy, vz",
          "vel[i, 0], vel[i, 1], vel[i, 2] = vel0[i, 0], vel0[i, 1], vel0[i, 2]  # kept if the move fails",
          "failed = False")  # fmt: skip
        self._stage(c, "0.0", "np.inf")
        c.dedent()
        self._turn_batch(c, "0", "n", "rows_ids")
