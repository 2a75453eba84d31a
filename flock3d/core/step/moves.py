"""The generator's turn and move, and the in-place updates: the batch turned, moved, settled by
the terms' constraints and written; the boid-after-boid (sequential) and rule-after-rule
(per rule) updates of the live arrays.

A mixin of :class:`flock3d.core.step.generate._Generator` (see :mod:`~flock3d.core.step.module`).
"""

from __future__ import annotations

from flock3d.core.kernel import MOVE_ROWS, TURN_ROWS, turn_called
from flock3d.core.params import TERMS, TERMS_BY_NAME
from flock3d.core.step.lines import _Lines
from flock3d.core.step.values import predators_keepers
from flock3d.core.terms import PairTerm


class _Moves:
    """Writes the batch's turn and move, and the holes of the in-place step (``advance``)."""

    def _turn_batch(self, c: _Lines, k0: str, n: str, ids: str) -> None:
        """Turn (heading or mesh limit), move, settle and write the batch: columns 0 .. n - 1,
        rows k0 .. k0 + n - 1 of the state (public indices ``ids``); a failed boid keeps its row."""
        dt = "0.0" if self.layout.position_update == "old" else self.v("dt")  # staged where it moves to
        turning = turn_called(self.layout.turn)
        up = "" if turning is TURN_ROWS else ", UP[0], UP[1], UP[2]"
        # A chunk's batch calls them at their addresses (compiled once for every layout); a batch of
        # one boid (the in-place updates) inlines them: two calls a boid cost 6 % of its step.
        turn, move = (
            (self.call_at(turning), self.call_at(MOVE_ROWS)) if n != "1" else (turning.name, MOVE_ROWS.name)
        )
        if self.layout.flight != "aerodynamic":  # a flying bird has turned itself (_fly)
            c(f"{turn}({n}, staged, turned{up})")
        c(f"{move}({k0}, {n}, staged, turned, failed_rows, {dt}, box, wraps, planar, quat, vel, pos, {ids}, "
          f"status, t)")  # fmt: skip
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
            hunt += self._predators_kept_out()
        update = _Lines()
        if L.update == "sequential":
            self._sequential(update, reach)
        else:
            self._per_rule(update)
        holes = {"batch": self._batch("n"), "grid": grid, "hunt": hunt, "update": list(update)}
        holes["world"] = self._world_lines()
        return holes

    def _predators_kept_out(self) -> list[str]:
        """The predators, moved by the hunt, kept out of the world as the boids are by the terms
        that hold them (:attr:`~flock3d.core.terms.Term.keeps_predators`): the synchronous
        driver's :func:`~flock3d.core.kernel.predators.kept_out`, in place."""
        lines = []
        for _, term in predators_keepers(self.layout):
            keep, world = self.called(term, term.keeps_predators), self.world(term)
            new, old = (", ".join(f"{a}[m, {k}]" for k in range(3)) for a in ("pred_pos", "hunters"))
            lines += ["for m in range(pred_pos.shape[0]):",
                      f"    {new} = {keep}({new}, {old}, {world}, now, now + dt, planar)"]  # fmt: skip
        return lines

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
                    self._user_rule(c, int(stage[len("rule") :]), b)
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
