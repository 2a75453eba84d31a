"""The generator's candidates and pair loops: which candidates a boid's pair sums run over (all
in reach, or the k nearest it sees), the fused, branch-free loop of the built-in pair terms,
and the loop of each of the user's pair rules.

A mixin of :class:`flock3d.core.step.generate._Generator` (see :mod:`~flock3d.core.step.module`).
"""

from __future__ import annotations

from collections.abc import Sequence

from flock3d.core.params import TERMS_BY_NAME
from flock3d.core.step.lines import _Lines
from flock3d.core.terms import PairTerm

#: The columns of a boid's candidates in the template's buffer, and their count.
_CANDIDATES = {"x": "bx", "y": "by", "z": "bz", "vx": "bvx", "vy": "bvy", "vz": "bvz", "id": "bid", "m": "m"}
#: The columns the k nearest chosen of them are compacted into (topological neighbours), and their count.
_CHOSEN = {"x": "kx", "y": "ky", "z": "kz", "vx": "kvx", "vy": "kvy", "vz": "kvz", "id": "kid", "m": "n_sel"}


class _Pairs:
    """Writes the choice of a boid's candidates and the loops summing over them."""

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
            self._adapt(c, r2)
        c("C.compact((bx, by, bz, bvx, bvy, bvz, bid), sel, n_sel, kbuf)  # this cell's candidates")
        return _CHOSEN

    def _adapt(self, c: _Lines, r2: str) -> None:
        """The adaptive radius: the boid's radius ``r_i`` (carried in pv), its radius for the next
        step (``r_new``) from the k nearest chosen within sqrt(r2), and only those within ``r_i``
        kept."""
        v = self.v
        c("r_i = pv[radius_at + boid]",
          f"r_new = C.adapted_radius(r_i, n_sel, int({v('k')}), sel_d2, {v(r2)}, {v('adaptation')})",
          "n_sel = C.within(sel_d2, n_sel, r_i * r_i)")  # fmt: skip

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

    def _user_rule(self, c: _Lines, k: int, b: dict[str, str]) -> None:
        """User pair rule k's sums over the boid's candidates ``b`` (all in reach, or the k
        nearest it sees: :meth:`_choose`'s) (``n_rule<k>``, ``s_rule<k>_*``), in place or by a
        function of the module's own (:meth:`_outlined` chooses); a failed call sets ``failed``."""
        body = _Lines()
        self._user_pair_loop(body, k, b)
        self._outlined(c, f"_rule{k}", body, ["failed", f"n_rule{k}", *(f"s_rule{k}_{a}" for a in "xyz")])

    def _user_pair_loop(self, c: _Lines, k: int, b: dict[str, str]) -> None:
        """The loop of user pair rule k over the candidates ``b``: called for those it sees within
        its own radius and cone, with the boid's current v."""
        r2, cone = self._neighbourhood(f"rule{k}")
        c(f"n_rule{k} = 0.0", f"s_rule{k}_x = s_rule{k}_y = s_rule{k}_z = 0.0",
          "p_i[0], p_i[1], p_i[2] = px, py, pz", "v_i[0], v_i[1], v_i[2] = vx, vy, vz",
          "ro_p_i, ro_v_i, ro_p_j, ro_v_j = read_only(p_i), read_only(v_i), read_only(p_j), read_only(v_j)",
          f"for jj in range({b['m']}):")  # fmt: skip
        c.indent()
        self._offset_to_candidate(c, b)
        sees = f" & ({self.v('sees_m')}[rel] > 0.0)" if self.layout.species else ""
        c(f"if not ((d2 > 0.0) & (d2 < {self.v(r2)}) & (dot * abs(dot) >= {self.v(cone)} * d2){sees}):",
          "    continue",
          f"p_j[0], p_j[1], p_j[2] = {self._candidate_position(b)}",
          f"v_j[0], v_j[1], v_j[2] = {b['vx']}[j], {b['vy']}[j], {b['vz']}[j]")  # fmt: skip
        self._user_call(c, f"U_rule{k}(ro_p_i, ro_v_i, ro_p_j, ro_v_j)", "")
        c("if outcome != OK:",
          f"    record(status, t, outcome, boid, {k})",
          "    failed = True",
          "    break",
          f"n_rule{k} += 1.0",
          f"s_rule{k}_x += tx", f"s_rule{k}_y += ty", f"s_rule{k}_z += tz")  # fmt: skip
        c.dedent()

    def _candidate_position(self, b: dict[str, str]) -> str:
        """Candidate j's position as a user pair rule is given it: in the buffer, at its image
        nearest the boid's row."""
        return f"{b['x']}[j], {b['y']}[j], {b['z']}[j]"

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
