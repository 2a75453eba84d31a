"""The generator's update of one boid: the pair sums and forces combined into its desired
velocity (summed, or chained stage by stage), or aerodynamic flight, staged in its column of
the batch that turns and moves.

A mixin of :class:`flock3d.core.step.generate._Generator` (see :mod:`~flock3d.core.step.module`).
"""

from __future__ import annotations

from flock3d.core.kernel import F_X, LIMIT, P_X, Q_W, S_MAX, S_MIN, U_X
from flock3d.core.params import TERMS_BY_NAME
from flock3d.core.step.lines import _Lines
from flock3d.core.terms import PairTerm


class _BoidUpdate:
    """Writes a boid's desired velocity from its stages, and stages it in the batch."""

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
            call = _Lines()
            self._user_call(call, f"U_force{k}(read_only(p_i), read_only(v_i), now)", "w * ")
            self._outlined(c, f"_force{k}", call, ["outcome", "tx", "ty", "tz"])
            c("if outcome != OK:",
              f"    record(status, t, outcome, boid, {len(L.rules) + k})",
              "    failed = True",
              "    tx = ty = tz = 0.0")  # fmt: skip

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
                self._user_rule(c, k, b)
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
                    self._user_rule(c, int(stage[len("rule") :]), b)
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
