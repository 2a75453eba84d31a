"""The step's walk alone, for ``flock3d bench --profile``: the template's chunk
(:func:`flock3d.core.step.template.chunk`) with the holes that fill each cell's candidates as a
layout's step fills them, and nothing done per boid.

Run by the driver's own loop over chunks (:func:`flock3d.core.kernel.driver.phase_runner`), it
takes the time the step's walk over its row segments and its candidate buffers takes, from the
template itself rather than from a copy of it. With ``count`` it also counts what it walks, per
chunk, in the chunk's row of ``status`` ((chunks, 3) int64, where a step records its failures):
the boids in the 27 cells around each boid, the candidates of each boid's pair loop, and the
entries copied into the candidate buffers.
"""

from __future__ import annotations

from typing import Any

from flock3d.core.step import template
from flock3d.core.step.generate import _Generator, written

__all__ = ["walk"]


def walk(layout: Any, count: bool = False) -> tuple[str, list[str]]:
    """The source of the walk module of ``layout`` (its ``chunk`` has the signature of a step's)
    and the names of the values it reads, in pv order; with ``count``, the walk counts."""
    return written(layout, lambda at, reads: _Walk(layout, at, reads, count))


class _Walk(_Generator):
    """Fills the chunk's candidate holes as the step does; the boid's update and the batch's
    turn and move are left out."""

    def __init__(self, layout: Any, at: dict[str, int] | None, reads: set[str] | None, count: bool) -> None:
        super().__init__(layout, at, reads)
        self.count = count

    def module(self) -> str:
        holes = self._candidate_holes()
        empty = ("batch", "species", "boid", "turn", "world")
        holes.update({name: [] for name in empty})
        if self.count:  # once per occupied cell c, after its candidates are in the buffer
            holes["cell"] += [
                "in_c = start[c + 1] - start[c]",
                "status[t, 0] += in_c * count_candidates(c, grid, periodic)",
                "status[t, 1] += in_c * m",
                # a row segment's buffer is filled once, before its first cell
                "status[t, 2] += m if crowded else (xoff[span_b - span_a + 1] if c == seg_first else 0)",
            ]
        return self._header() + "\n@_chunk\n" + self._fill(template.chunk, holes)

    def _header(self) -> str:
        components = "from flock3d.core import components as C\n"
        return (
            super()
            ._header()
            .replace(components, components + "from flock3d.core.kernel import count_candidates\n")
        )
