"""Writing a layout's GPU step: the CUDA template's kernel with its holes filled.

The same generator as the CPU step's (:mod:`flock3d.core.step.generate`), on another
template (:mod:`flock3d.core.step.cuda_template`): each term writes the same lines, which
call the same numba components, compiled here as CUDA device functions. What differs is
where a boid's candidates come from: the CPU step copies them into a buffer per row of
cells, a GPU thread reads them where they lie, in the runs of the boids sorted by cell
(:func:`flock3d.core.gpu.cells.candidate_run`); and a boid turns and moves as a batch of one.

:func:`unsupported` names what of a flock the GPU step does not run yet.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from flock3d.core.params import TERMS
from flock3d.core.step import cuda_template
from flock3d.core.step.generate import _CANDIDATES, _Generator, _Lines, offsets
from flock3d.core.terms import PairTerm

__all__ = ["generate", "unsupported"]


def generate(layout: Any, max_registers: int | None = None) -> tuple[str, list[str]]:
    """The source of the GPU step module of ``layout`` and the names of the values it reads, in pv
    order; its kernel capped at ``max_registers`` a thread, if given."""
    first = _CudaGenerator(layout, None, None)
    first.module()
    names = list(first.used)
    second = _CudaGenerator(layout, offsets(layout, names), first.reads)
    second.max_registers = max_registers
    return second.module(), names


def unsupported(layout: Any) -> list[str]:
    """What of a flock of ``layout`` the GPU step does not run yet, in words (empty: it runs all of it)."""
    L, out = layout, []
    if L.model != "boids":
        out.append(f"the {L.model} model")
    if L.update != "synchronous":  # in place, one boid or one rule after another: the CPU's
        out.append(f"update = '{L.update}'")
    if L.neighbours != "metric":
        out.append(f"{L.neighbours} neighbours")
    if L.rules or L.forces:
        out.append("your own rules and forces")
    if L.flight != "kinematic":
        out.append(f"{L.flight} flight")
    for term in TERMS:  # world data, per-boid state and constraints after the move: not on the device yet
        if term.name in L.stages and (term.world_width or term.carries or term.constrains):
            out.append(f"{term.name}")
    return out


class _CudaGenerator(_Generator):
    """Fills the CUDA template's holes: the CPU generator's lines, the candidates read in runs."""

    max_registers: int | None = None

    def module(self) -> str:
        L = self.layout
        if L.species:
            self.v("ends")  # each boid's species is found from it
        boid, turn = _Lines(), _Lines()
        self._boid_update(boid, 0)
        self._turn_batch(turn, "k", "1", "ids")
        holes = {"boid": list(boid), "turn": list(turn), "species": self._species_lines()}
        return self._header() + "\n@_kernel\n" + self._fill(cuda_template.advance, holes)

    def _header(self) -> str:
        source = inspect.getsource(cuda_template)
        imports = source[source.index("import math") : source.index("\n\ndef hole(")]
        lines = [
            f'"""A flock3d GPU step: {cuda_template.__name__}, its holes filled (generated; do not edit)."""',
            imports.strip(),
            "from flock3d.core import components as C",
            *(
                f"from {module.rsplit('.', 1)[0]} import {module.rsplit('.', 1)[1]} as {alias}"
                for module, alias in sorted(self.modules.items())
            ),
            "",
            f"UP = {(0.0, 0.0, 1.0) if self.layout.planar else (0.0, 1.0, 0.0)}",
            "# One thread a boid; numba-cuda compiles the terms' numba components as device functions.",
            f"MAX_REGISTERS = {self.max_registers}  # a thread's registers (None: the compiler's choice)",
            "# (without numba-cuda the module still loads, for its source to be read)",
            "_kernel = cuda.jit(**jit_options(MAX_REGISTERS)) if cuda is not None else (lambda fn: fn)",
            "",
        ]
        return "\n".join(lines) + "\n"

    def _choose(self, c: _Lines, r2: str, cone: str) -> dict[str, str]:
        # Metric neighbours alone (unsupported() refuses the rest): every candidate, read in place.
        # A copy of the CPU's names, so that the pair loop runs over exactly the candidates (the
        # CPU pads its buffers to whole SIMD vectors; in place there is no padding to skip).
        return dict(_CANDIDATES)

    def _pair_loop(self, c: _Lines, terms: Sequence[PairTerm], b: dict[str, str]) -> None:
        """The CPU's fused pair loop, its one loop over the candidates run over the candidate runs."""
        inner = _Lines()
        super()._pair_loop(inner, terms, b)
        loop = inner.index(f"for jj in range({b['m']}):")
        end = loop + 1
        while end < len(inner) and inner[end].startswith("    "):
            end += 1
        c(*inner[:loop])
        c("for run in range(RUNS):", "    lo, hi = candidate_run(run, cx, cy, cz, gi, start, periodic)")
        c.indent()
        c("for jj in range(lo, hi):", *inner[loop + 1 : end])
        c.dedent()
        c(*inner[end:])

    def _offset_to_candidate(self, c: _Lines, b: dict[str, str], rel: bool = True) -> None:
        # The candidates lie where they are, not at their image nearest the boid's row (the CPU
        # buffer's): in a periodic box the offsets take the nearest image here.
        def offset(axis: str, side: int) -> str:
            d = f"{b[axis]}[j] - p{axis}"
            wrapped = self.layout.periodic and not (axis == "z" and self.layout.planar)
            return f"image({d}, sides[{side}], True)" if wrapped else d

        c("j = jj", f"dx = {offset('x', 0)}", f"dy = {offset('y', 1)}", f"dz = {offset('z', 2)}",
          "d2 = dx * dx + dy * dy + dz * dz",
          "dot = fx * dx + fy * dy + fz * dz")  # fmt: skip
