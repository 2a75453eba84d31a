"""Writing a layout's GPU step: the CUDA template's kernel with its holes filled.

The same generator as the CPU step's (:mod:`flock3d.core.step.generate`), on another
template (:mod:`flock3d.core.step.cuda_template`): each term writes the same lines, which
call the same numba components, compiled here as CUDA device functions. What differs is
where a boid's candidates come from: the CPU step copies them into a buffer per row of
cells, a GPU thread reads them where they lie, in the runs of the boids sorted by cell
(:func:`flock3d.core.gpu.cells.candidate_run`); with topological neighbours it keeps the k
nearest it sees in arrays of its local memory (:mod:`flock3d.core.gpu.nearest`); the user's
rules and forces are device functions of their Python functions (:mod:`flock3d.core.gpu.user`),
called as the CPU step calls them but for its ``try`` (a device function raises nothing); a
model's sums over the candidates (:meth:`~flock3d.core.models.Emit.summed`) are called on
parts of them copied into local arrays, and added up; the per-boid state carried from step to
step rides after the values in pv, by public index, as on the CPU; and a boid turns and moves
as a batch of one.

:func:`unsupported` names what of a flock the GPU step does not run yet.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from flock3d.core.gpu.nearest import MAX_NEAREST
from flock3d.core.kernel import STAGED
from flock3d.core.models import MODELS_BY_NAME
from flock3d.core.params import TERMS
from flock3d.core.step import cuda_template
from flock3d.core.step.generate import _CANDIDATES, _Generator, _Lines, riders, written
from flock3d.core.terms import PairTerm

__all__ = ["Shape", "DEFAULT_SHAPE", "MAX_FLOAT32_BOIDS", "generate", "unsupported", "kept", "staged_rows"]

#: The columns the pair sums run over with topological neighbours: the candidates' (read in
#: place), at the rows ``sel`` of the k nearest chosen.
_NEAREST = {**_CANDIDATES, "m": "n_sel"}
#: The template's views of the columns of ``cols`` (N, 8) every boid reads, in column order.
_COLUMNS = ("bx", "by", "bz", "bvx", "bvy", "bvz", "bid")
#: A read of one of those views at a plain row: ``bx[j]``.
_COLUMN_READ = re.compile(rf"\b({'|'.join(_COLUMNS)})\[(\w+)\]")
#: A boid that does not move (its step failed, or an earlier one of the call did) writes its
#: start-of-step state: the gather writes no row of the state the step writes.
_KEPT = ["pos[k, 0], pos[k, 1], pos[k, 2] = cols[k, 0], cols[k, 1], cols[k, 2]",
         "vel[k, 0], vel[k, 1], vel[k, 2] = cols[k, 3], cols[k, 4], cols[k, 5]",
         "last = order[k]",
         "quat[k, 0], quat[k, 1], quat[k, 2], quat[k, 3] = quat0[last, 0], quat0[last, 1], quat0[last, 2], "
         "quat0[last, 3]"]  # fmt: skip
#: Each boid counted in its cell (after its move) for the next step's sort, as
#: :func:`flock3d.core.gpu.kernels.count_cells` counts it: the next step launches no count unless
#: it sizes the grid again (:class:`flock3d.core.gpu.engine.DeviceFlock`).
_COUNTED = ["ncx, ncy, ncz = cell_of(pos[k, 0], pos[k, 1], pos[k, 2], gf, gi)",
            "keys[k] = next_key = cell_key(ncx, ncy, ncz, gi)",
            "cuda.atomic.add(counts, next_key, 1)"]  # fmt: skip
#: A part of the candidates a model's sums are called on (:meth:`_CudaGenerator.summed`): the
#: thread's local arrays of positions and velocities (or headings).
_PART = ("qbx", "qby", "qbz", "qbvx", "qbvy", "qbvz")


def _reads_chosen(layout) -> bool:
    """Whether a term of ``layout`` reads the public indices of the k nearest chosen
    (:attr:`~flock3d.core.terms.Term.reads_chosen`), which the step then keeps in ``kid``."""
    return any(t.reads_chosen for t in TERMS if t.name in layout.stages)


@dataclass(frozen=True)
class Shape:
    """How a layout's GPU step is cut into kernels and compiled; what it computes is the same.

    Attributes:
        max_registers: the registers a thread of the pair loop's kernel may hold (None: as many
            as the compiler wants). Fewer let more threads be resident at once, which hides
            memory latency.
        float32_registers: the same cap for a float32 state (None: ``max_registers``), whose
            values take half the registers (:meth:`of_precision`).
        split: two kernels a step, ``advance`` (the pair loop and the desired velocity) then
            ``settle`` (the turn and the move), rather than one.
        guard: a candidate farther than the step's reach is skipped before the terms' lines (it
            adds nothing to any sum: every term's neighbourhood lies within the reach), where
            the CPU's branch-free loop computes it and masks it out.
        x_cells: the grid's cells (sized on the device) are cut in this many along x
            (:mod:`flock3d.core.gpu.cells`): fewer candidates a boid, the same runs of them.
    """

    max_registers: int | None = None
    split: bool = False
    guard: bool = False
    x_cells: int = 1
    float32_registers: int | None = None

    def __str__(self) -> str:
        parts = ["split" if self.split else "fused", *(["guard"] if self.guard else [])]
        parts += [f"x{self.x_cells}"] if self.x_cells != 1 else []
        float32 = f" ({self.float32_registers} in float32)" if self.float32_registers else ""
        return "+".join(parts) + (f"/{self.max_registers}" if self.max_registers else "") + float32

    def of_precision(self, precision: str) -> Shape:
        """The shape a step of a state in ``precision`` ("float64" or "float32") is compiled in."""
        if precision != "float32" or self.float32_registers is None:
            return self
        return replace(self, max_registers=self.float32_registers, float32_registers=None)


#: The GPU engine's shape: one kernel a step, capped at 72 registers a thread (64 in float32),
#: with the reach guard, cells cut in 3 along x: the fastest measured on an H200
#: (benchmarks/NOTES.md has the shapes beside it; x2 and x4 ran as fast as x3, x1 8-10 % slower;
#: float32 at 64 ran 2-4 % faster than at 72, float64 slower).
DEFAULT_SHAPE = Shape(max_registers=72, guard=True, x_cells=3, float32_registers=64)


#: The most boids a float32 flock holds: what every boid reads of the others carries their
#: indices as floats (flock3d.core.gpu.kernels.gather), exact in float32 up to 2**24.
MAX_FLOAT32_BOIDS = 2**24


def generate(layout: Any, shape: Shape = DEFAULT_SHAPE) -> tuple[str, list[str]]:
    """The source of the GPU step module of ``layout``, cut as ``shape`` says, and the names of
    the values it reads, in pv order."""
    return written(layout, lambda at, reads: _CudaGenerator(layout, at, reads, shape))


def unsupported(layout: Any) -> list[str]:
    """What of a flock of ``layout`` the GPU step does not run yet, in words (empty: it runs all of it)."""
    L, out = layout, []
    model = MODELS_BY_NAME[L.model]
    if model.gpu_refusal:
        out.append(f"the {L.model} model ({model.gpu_refusal})")
    if L.update != "synchronous":  # in place, one boid or one rule after another: the CPU's
        out.append(f"update = '{L.update}'")
    return out


def kept(layout: Any) -> list[tuple[str, int]]:
    """The per-boid state a boid's step computes before its move and keeps only if it moves (the
    adaptive radius, a model's carried state), with its width: a split step passes it from its
    first kernel to its second in the rows of ``staged_all`` after STAGED."""
    own = [(c.name, c.width) for c in MODELS_BY_NAME[layout.model].carries]
    return ([("radii", 1)] if layout.neighbours == "adaptive" else []) + own


def staged_rows(layout: Any) -> int:
    """The rows of ``staged_all`` a split step of ``layout`` passes each boid in from its first
    kernel to its second: STAGED, the carried state it keeps if it moves (:func:`kept`), and in
    aerodynamic flight (whose bird turns itself in the first) the 7 rows of ``turned``."""
    return STAGED + sum(width for _, width in kept(layout)) + (7 if layout.flight == "aerodynamic" else 0)


class _CudaGenerator(_Generator):
    """Fills the CUDA template's holes: the CPU generator's lines, the candidates read in runs."""

    def __init__(self, layout: Any, at: dict[str, int] | None, reads: set[str] | None, shape: Shape) -> None:
        super().__init__(layout, at, reads)
        self.shape = shape

    def module(self) -> str:
        L = self.layout
        if L.species:
            self.v("ends")  # each boid's species is found from it
        boid, turn = _Lines(), _Lines()
        if self.kind.update_kind == "terms":
            self._boid_update(boid, len(L.rules))
        else:  # the model's own update, its sums over the candidates run by summed
            self.kind.update(self, boid)
        self._turn_batch(turn, "k", "1", "ids")
        batch = (
            ["staged, failed_rows = staged_all[:, k : k + 1], failed_all[k : k + 1]"]
            if self.shape.split
            else [
                "staged = cuda.local.array((STAGED, 1), numba.float64)",
                "failed_rows = cuda.local.array(1, numba.boolean)",
            ]  # fmt: skip
        ) + [*self._turned_lines(), *self._carried_lines()]
        if L.rules or L.forces:  # what the user's functions are given (read-only views of them)
            batch += [f"{name} = cuda.local.array(3, numba.float64)" for name in ("p_i", "v_i", "p_j", "v_j")]
        if L.neighbours != "metric":  # the k nearest seen: their rows and squared distances
            batch += [f"sel = cuda.local.array({MAX_NEAREST}, numba.int64)",
                      f"sel_d2 = cuda.local.array({MAX_NEAREST}, numba.float64)"]  # fmt: skip
            if _reads_chosen(L):
                batch.append(f"kid = cuda.local.array({MAX_NEAREST}, numba.float64)")
        if self.kind.update_kind != "terms":  # a part of the candidates a model's sums are called on
            batch += [f"{name} = cuda.local.array({MAX_NEAREST}, numba.float64)" for name in _PART]
        # The kernel that writes the positions writes every row and counts it (the other: nothing).
        writes = {"kept": _KEPT, "counted": _COUNTED}
        holes = {"boid": list(boid), "turn": [] if self.shape.split else list(turn),
                 "species": self._species_lines(), "batch": batch, "world": self._world_lines(),
                 **(dict.fromkeys(writes, ["pass"]) if self.shape.split else writes)}  # fmt: skip
        source = self._header() + "\n@_kernel\n" + self._direct(self._fill(cuda_template.advance, holes))
        if self.shape.split:  # the turn and the move, uncapped: its own registers, not the pair loop's
            holes = {"turned": self._turned_lines(), "turn": [*self._carried_lines(), *turn],
                     "world": self._world_lines(), **writes}  # fmt: skip
            source += "\n\n@_settle\n" + self._fill(cuda_template.settle, holes)
        return source

    @staticmethod
    def _direct(source: str) -> str:
        """``source`` with each read of a candidate's column view at a plain row (``bx[j]``, as
        the terms' lines read it) made a read of ``cols`` itself (``cols[j, 0]``): numba-cuda
        loads a kernel argument's element as global memory at a fixed stride, a strided view's as
        generic memory at a run-time one (on an H200 the bench scene's step at 1M was 3-4 % the
        faster, benchmarks/NOTES.md). The views stay for what takes a whole column."""
        return _COLUMN_READ.sub(lambda m: f"cols[{m.group(2)}, {_COLUMNS.index(m.group(1))}]", source)

    def call_at(self, called: Any, owner: str = "") -> str:
        # numba-cuda compiles the function itself as a device function: no address to call.
        return f"{owner}{called.name}"

    def _turned_lines(self) -> list[str]:
        """The boid's batch of one of turned states: in the thread's local memory, or split in
        aerodynamic flight (the bird turns itself in the first kernel, and moves in the second),
        its column of the last 7 rows of ``staged_all``."""
        if self.shape.split and self.layout.flight == "aerodynamic":
            end = staged_rows(self.layout)
            return [f"turned = staged_all[{end - 7} : {end}, k : k + 1]"]
        return ["turned = cuda.local.array((7, 1), numba.float64)"]

    def _carried_lines(self) -> list[str]:
        """Where each carried array lies in pv (after the values, by public index, as on the CPU:
        :func:`~flock3d.core.step.values.riders`), and the boid's batch of one of the state it
        keeps if it moves (:func:`kept`): in the thread's local memory, or split, in its column
        of ``staged_all``'s rows after STAGED (the second kernel writes it)."""
        carried, lines = riders(self.layout), []
        for j, (name, _) in enumerate(carried):
            at = "radius_at" if name == "radii" else f"{name}_at"
            lines.append(f"{at} = pv.shape[0] - {sum(w for _, w in carried[j:])} * pos.shape[0]")
        row = STAGED
        for name, width in kept(self.layout):
            if self.shape.split:
                rows = f"{row}" if width == 1 else f"{row} : {row + width}"
                lines.append(f"{name} = staged_all[{rows}, k : k + 1]")
            else:
                size = width if width == 1 else (width, 1)
                lines.append(f"{name} = cuda.local.array({size}, numba.float64)")
            row += width
        return lines

    def summed(self, c: _Lines, targets: str, function: str, b: dict[str, str], arguments: str) -> None:
        """A model's sums over the candidates (``targets = function(columns, arguments)`` on the
        CPU): the candidates, read in their runs (or the k nearest chosen), are copied a part of
        at most MAX_NEAREST at a time into the thread's local arrays, at their images nearest the
        boid in a periodic box, and ``function``'s sums over each part are added up."""
        n = len(targets.split(","))
        sums, parts = [f"sum{a}" for a in range(n)], [f"part{a}" for a in range(n)]
        velocity = ("heads[0, j], heads[1, j], heads[2, j]" if self.kind.sees_headings
                    else "bvx[j], bvy[j], bvz[j]")  # fmt: skip
        call = [f"{', '.join(parts)} = {function}({', '.join(_PART)}, n_part, {arguments})",
                *(f"{total} += {part}" for total, part in zip(sums, parts, strict=True)),
                "n_part = 0"]  # fmt: skip
        c(" = ".join(sums) + " = 0.0", "n_part = 0")
        copy = [
            *self._offset_lines("sel[jj]" if b is _NEAREST else "jj"),
            *(["if d2 >= reach2:", "    continue"] if self.shape.guard else []),
            f"{_PART[0]}[n_part], {_PART[1]}[n_part], {_PART[2]}[n_part] = px + dx, py + dy, pz + dz",
            f"{_PART[3]}[n_part], {_PART[4]}[n_part], {_PART[5]}[n_part] = {velocity}",
            "n_part += 1",
        ]
        if self.shape.guard:
            c(f"reach2 = {self.v('reach')} * {self.v('reach')}")
        if b is _NEAREST:  # at most MAX_NEAREST: one part
            c(f"for jj in range({b['m']}):", *("    " + line for line in copy))
        else:
            full = [f"if n_part == {MAX_NEAREST}:", *("    " + line for line in call)]
            self._in_runs(c, ["    " + line for line in (*copy, *full)])
        c(*call[:-1], f"{targets} = {', '.join(sums)}")

    def _header(self) -> str:
        lines = [
            f'"""A flock3d GPU step: {cuda_template.__name__}, its holes filled (generated; do not edit)."""',
            *self._imports(cuda_template),
            "",
            f"# user rules: {', '.join(fp for fp, _ in self.layout.rules) or 'none'}; "
            f"forces: {', '.join(self.layout.forces) or 'none'} (device functions of their Python functions)",
            f"UP = {(0.0, 0.0, 1.0) if self.layout.planar else (0.0, 1.0, 0.0)}",
            "# One thread a boid; numba-cuda compiles the terms' numba components as device functions.",
            f"MAX_REGISTERS = {self.shape.max_registers}  # the pair loop's registers (None: the compiler's)",
            "# (without numba-cuda the module still loads, for its source to be read)",
            "_kernel = cuda.jit(**jit_options(MAX_REGISTERS)) if cuda is not None else (lambda fn: fn)",
            "_settle = cuda.jit if cuda is not None else (lambda fn: fn)",
            "",
        ]
        return "\n".join(lines) + "\n"

    def _choose(self, c: _Lines, r2: str, cone: str) -> dict[str, str]:
        """Metric neighbours: every candidate, read in place. Topological: the k nearest the boid
        sees (ties to the lower index, as :func:`flock3d.core.components.nearest_seen` chooses),
        kept in the thread's ``sel`` as the runs are read; the pair sums then run over them."""
        # A copy of the CPU's names, so that the pair loop runs over exactly the candidates (the
        # CPU pads its buffers to whole SIMD vectors; in place there is no padding to skip).
        if self.layout.neighbours == "metric":
            return dict(_CANDIDATES)
        v = self.v
        sees = (
            f" & ({v('sees_m')}[row + C.species_index(bid[jj], {v('ends')})] > 0.0)"
            if self.layout.species
            else ""
        )
        c(f"n_pick = max(1, min(int({v('k')}), {MAX_NEAREST}))", "n_sel = 0")
        seen = [*self._offset_lines("jj"),
                f"if (d2 > 0.0) & (d2 < {v(r2)}) & (dot * abs(dot) >= {v(cone)} * d2){sees}:",
                "    n_sel = insert_nearest(sel, sel_d2, n_sel, n_pick, jj, d2, bid)"]  # fmt: skip
        self._in_runs(c, ["    " + line for line in seen])
        if self.layout.neighbours == "adaptive":
            self._adapt(c, r2)
        if _reads_chosen(self.layout):  # their public indices, as the CPU's kid
            c("for jj in range(n_sel):", "    kid[jj] = bid[sel[jj]]")
        return _NEAREST

    def _pair_loop(self, c: _Lines, terms: Sequence[PairTerm], b: dict[str, str]) -> None:
        """The CPU's fused pair loop, its one loop over the candidates run over the candidate runs
        (or over the k nearest chosen)."""
        inner = _Lines()
        super()._pair_loop(inner, terms, b)
        head, body, tail = _loop_parts(inner, f"for jj in range({b['m']}):")
        c(*head)
        if self.shape.guard:
            c(f"reach2 = {self.v('reach')} * {self.v('reach')}")
        if b is _NEAREST:
            c(f"for jj in range({b['m']}):", *body)
        else:
            self._in_runs(c, body)
        # Read again what the loop does not use, rather than hold it in registers through it.
        c("vx, vy, vz = cols[k, 3], cols[k, 4], cols[k, 5]",
          "last = order[k]",
          "qw, qx, qy, qz = quat0[last, 0], quat0[last, 1], quat0[last, 2], quat0[last, 3]")  # fmt: skip
        c(*tail)

    @staticmethod
    def _in_runs(c: _Lines, body: list[str], after: Sequence[str] = ()) -> None:
        """``body`` (a loop's body over the candidates ``jj``) run over the candidate runs, and
        ``after`` after each run."""
        c("for run in range(RUNS):", "    lo, hi = candidate_run(run, cx, cy, cz, gi, start, periodic)")
        c.indent()
        c("for jj in range(lo, hi):", *body, *after)
        c.dedent()

    def _offset_lines(self, j: str) -> list[str]:
        """j, dx, dy, dz, d2, dot: candidate row ``j`` seen from the boid. The candidates lie where
        they are, not at their image nearest the boid's row (the CPU buffer's): in a periodic box
        the offsets take the nearest image here."""

        def offset(axis: str, side: int) -> str:
            d = f"b{axis}[j] - p{axis}"
            wrapped = self.layout.periodic and not (axis == "z" and self.layout.planar)
            return f"image({d}, sides[{side}], True)" if wrapped else d

        # an unsigned row, as the CPU's: no test of a negative index wrapping around
        return [f"j = numba.uint64({j})", f"dx = {offset('x', 0)}", f"dy = {offset('y', 1)}",
                f"dz = {offset('z', 2)}", "d2 = dx * dx + dy * dy + dz * dz",
                "dot = fx * dx + fy * dy + fz * dz"]  # fmt: skip

    def _offset_to_candidate(self, c: _Lines, b: dict[str, str], rel: bool = True) -> None:
        *offset, dot = self._offset_lines("sel[jj]" if b is _NEAREST else "jj")
        if self.shape.guard and not rel:  # the built-in pair loop (a NaN distance goes on, as on the CPU)
            c(*offset, "if d2 >= reach2:", "    continue", dot)  # nothing more computed for one beyond
        else:
            c(*offset, dot)
        if self.layout.species and rel:
            c(f"rel = row + C.species_index(bid[j], {self.v('ends')})")

    def _user_pair_loop(self, c: _Lines, k: int, b: dict[str, str]) -> None:
        """The CPU's loop of user pair rule k, run over the candidate runs (or over the k nearest
        chosen)."""
        inner = _Lines()
        super()._user_pair_loop(inner, k, b)
        head, body, tail = _loop_parts(inner, f"for jj in range({b['m']}):")
        c(*head)
        if b is _NEAREST:  # the loop's own break ends it
            c(f"for jj in range({b['m']}):", *body)
        else:  # a failed boid's step is dropped: the rest of its candidates would change nothing
            self._in_runs(c, body, after=["if failed:", "    break"])
        c(*tail)

    def _candidate_position(self, b: dict[str, str]) -> str:
        # Where the candidate lies, or in a periodic box its image nearest the boid (the offsets').
        return "px + dx, py + dy, pz + dz" if self.layout.periodic else super()._candidate_position(b)

    def _outlined(self, c: _Lines, name: str, body: list[str], outputs: list[str]) -> None:
        """The CPU's function of a user call (:meth:`_Module._outlined`) written in place: a
        device function has no ``try`` to keep out of the kernel."""
        c(*body)

    @staticmethod
    def _user_call(c: _Lines, call: str, weight: str) -> None:
        """The CPU's call of a user function (:meth:`_Pairs._user_call`) without its ``try``: a
        device function raises nothing (numba-cuda compiles no ``try``), so ``outcome`` is OK,
        or the code for one that did not return 3 numbers or returned a non-finite one."""
        c("r = " + call,
          "tx = ty = tz = 0.0",
          "outcome = RULE_SHAPE",
          "if len(r) == 3:",
          f"    tx, ty, tz = {weight}float(r[0]), {weight}float(r[1]), {weight}float(r[2])",
          "    finite = abs(tx) < np.inf and abs(ty) < np.inf and abs(tz) < np.inf",
          "    outcome = OK if finite else RULE_NOT_FINITE")  # fmt: skip


def _loop_parts(lines: list[str], loop: str) -> tuple[list[str], list[str], list[str]]:
    """``lines`` cut at their first line ``loop`` (unindented): the lines before it, its body
    (as indented under it) and the lines after it."""
    at = lines.index(loop)
    end = at + 1
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    return lines[:at], lines[at + 1 : end], lines[end:]
