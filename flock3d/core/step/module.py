"""The generator's module and its holes: what terms and models ask of the generator, the
template's functions copied with their holes filled, the values each unpacks from ``pv``, and
the holes of the synchronous chunk.

A mixin of :class:`flock3d.core.step.generate._Generator`: the candidates and pair loops
(:mod:`~flock3d.core.step.pairs`), a boid's update (:mod:`~flock3d.core.step.update`) and the
turn, move and in-place updates (:mod:`~flock3d.core.step.moves`) are its other parts.
"""

from __future__ import annotations

import builtins
import inspect
import re
import symtable
from typing import Any

from flock3d.core.models import MODELS_BY_NAME, Model, columns
from flock3d.core.models import Emit as ModelEmit
from flock3d.core.step import template
from flock3d.core.step.lines import _Lines
from flock3d.core.step.pairs import _CANDIDATES
from flock3d.core.step.values import CALLS_AT, MATRICES, SPECIES_VALUES, WORLD_TERMS, riders, value_slots
from flock3d.core.terms import Emit, Term

#: A template's ``hole(NAME, "value", ...)`` line (a comment may follow it).
_HOLE = re.compile(r'^(?P<indent>\s*)hole\("(?P<name>\w+)"(?P<values>(?:, "\w+")*)\)(?:\s*#.*)?$')


class _Module(Emit, ModelEmit):
    """The state of writing one layout's module, what terms and models ask of it, the module
    and its holes."""

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
        self.calls: list[Any] = []  # the functions called at their addresses (Called), in world_at's order
        self.owners: dict[str, str] = {}  # each one's module, as its <name>_at is reached here ("": imported)
        self.modules: dict[str, str] = {}  # term module -> the name it is imported under
        self.outlined: list[str] = []  # the module's functions calling user functions (_outlined)

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

    def called(self, term: Term, called: Any) -> str:
        return self.call_at(called, f"{self.term(term)}.")

    def call_at(self, called: Any, owner: str = "") -> str:
        """The local name of the compiled function ``called`` (a :class:`~flock3d.core.kernel.Called`)
        at its address, which the stepper appends to ``world_at`` in the order of the module's
        ``CALLED``; ``owner``: the module its ``<name>_at`` is reached through."""
        if called not in self.calls:
            self.calls.append(called)
            self.owners[called.name] = owner
        return f"{called.name}_fn"

    # what models ask of the generator (ModelEmit) ---------------------------------------------

    def model(self, model: Model) -> str:
        alias = f"{model.ident}_model"
        self.modules[model.module] = alias
        return alias

    def choose(self, c: _Lines, r2: str, cone: str) -> dict[str, str]:
        return self._choose(c, r2, cone)

    def summed(self, c: _Lines, targets: str, function: str, b: dict[str, str], arguments: str) -> None:
        c(f"{targets} = {function}(", f"    {columns(b)}, {arguments})")

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
        return self._header() + "\n" + "\n\n".join([*self.outlined, *bodies])

    def _outlined(self, c: _Lines, name: str, body: list[str], outputs: list[str]) -> None:
        """``body``, lines that call a user function in a ``try``, as a function ``name`` of the
        module, and a call of it here: its arguments are the locals ``body`` reads, it returns
        ``outputs``, and a ``failed`` among them fails the caller's boid too.

        Numba's front end takes seconds for each ``try`` in a function as large as a chunk, and
        more for each one after the first, but little in a function of its own. The call is paid
        in step time, once a boid for each rule or force (not once a pair). So a layout calling
        one user function keeps ``body`` in place, and one calling several outlines each."""
        if len(self.layout.rules) + len(self.layout.forces) < 2:
            c(*body)
            return
        source = "def f():\n" + "\n".join("    " + line for line in body)
        table = symtable.symtable(source, "<outlined>", "exec").get_children()[0]
        known = {*dir(builtins), *vars(template), "C", "read_only", *self.modules.values()}
        params = sorted(
            symbol.get_name()
            for symbol in table.get_symbols()
            if symbol.is_referenced() and not symbol.is_assigned()
            and symbol.get_name() not in known and not symbol.get_name().startswith("U_")
        )  # fmt: skip
        arguments = ", ".join(params)
        self.outlined.append(
            f"@_compiled\ndef {name}({arguments}):\n"
            + ("    failed = False\n" if "failed" in outputs else "")
            + "".join(f"    {line}\n" if line else "\n" for line in body)
            + f"    return {', '.join(outputs)}\n"
        )
        results = [f"{name}_failed" if out == "failed" else out for out in outputs]
        c(f"{', '.join(results)} = {name}({arguments})")
        if "failed" in outputs:
            c(f"failed = failed or {name}_failed")

    def _imports(self, source_module) -> list[str]:
        """The generated module's imports: those of its template ``source_module`` (from ``import
        math`` to its ``hole``), the components, and each module its lines call, by its alias."""
        source = inspect.getsource(source_module)
        imports = source[source.index("import math") : source.index("\n\ndef hole(")]
        return [
            imports.strip(),
            "from flock3d.core import components as C",
            *(
                f"from {module.rsplit('.', 1)[0]} import {module.rsplit('.', 1)[1]} as {alias}"
                for module, alias in sorted(self.modules.items())
            ),
        ]

    def _header(self) -> str:
        L = self.layout
        rules = ", ".join(fp for fp, _ in L.rules) or "none"
        lines = [
            f'"""A flock3d step: {template.__name__} with its holes filled (generated; do not edit)."""',
            *self._imports(template),
            "",
            f"# user rules: {rules}; forces: {', '.join(L.forces) or 'none'}",
            *(
                [
                    "# The compiled functions called at their addresses, which follow world_at's offsets:",
                    f"CALLED = {tuple(c.name for c in self.calls)!r}",
                ]
                if self.calls
                else []
            ),
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
        the flat record of a term of ``world_width`` 1; and each function it calls through its
        address, from ``world_at``."""
        return [
            f"{term.name} = world[world_at[{k}]:world_at[{k + 1}]]"
            + ("" if term.world_width == 1 else f".reshape(-1, {term.world_width})")  # 1: a flat record
            for k, term in enumerate(WORLD_TERMS)
            if term.name in self.worlds
        ] + [
            f"{c.name}_fn = {self.owners[c.name]}{c.name}_at(world_at[{CALLS_AT + k}])"
            for k, c in enumerate(self.calls)
        ]

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
        holes = self._candidate_holes()
        holes["batch"] = self._batch("b.shape[1]")
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
        return holes

    def _candidate_holes(self) -> dict[str, list[str]]:
        """The chunk's candidate buffer (``buffer``) and each cell's candidates in it (``cell``)."""
        n_cols = 7 if self.layout.indexed else 6
        runs = ["rbx", "rby", "rbz", "rbvx", "rbvy", "rbvz", "rbid"][:n_cols]
        columns = [_CANDIDATES[k] for k in ("x", "y", "z", "vx", "vy", "vz", "id")[:n_cols]]
        return {
            "buffer": [
                f"b, xoff = candidate_buffer(c_lo, c_hi, grid, {n_cols}, periodic, crowded)",
                f"buf = ({', '.join(f'b[{k}]' for k in range(n_cols))})",
                f"{', '.join(runs)} = buf",
            ],
            "cell": [f"{', '.join(columns)} = {', '.join(f'{r}[run0:]' for r in runs)}"],
        }

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
