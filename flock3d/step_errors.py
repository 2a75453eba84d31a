"""The one-line errors of a :class:`~flock3d.flock.Flock` step that failed (a state that blew up,
with its likely cause; a rule that raised or returned what it must not) and of a rule numba
cannot compile into the step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numba
import numpy as np

from flock3d.boid import Boid
from flock3d.core import assemble, reference
from flock3d.core.fields import spec_of
from flock3d.core.models import model_of
from flock3d.core.params import TERMS_BY_NAME, Params
from flock3d.core.user_rules import Force, PairRule, read_only_copy
from flock3d.errors import Flock3dError, SimulationError
from flock3d.rules import RuleError, describe, writes_arguments

if TYPE_CHECKING:
    from flock3d.flock import Flock

__all__ = ["failure_error", "compile_error"]


def failure_error(flock: Flock, code: int, boid: int, term: int, cause: BaseException | None = None):
    """The one-line :class:`SimulationError` (or :class:`RuleError`) for a failed step."""
    from flock3d.core import kernel

    where = f"step {flock.step_count}, boid {boid}"
    if code == kernel.NOT_FINITE:
        for name, array in (("position", flock.positions), ("velocity", flock.velocities),
                            ("orientation", flock.orientations)):  # fmt: skip
            if not np.all(np.abs(array[boid]) <= kernel.MAX_COORDINATE):  # the boid keeps its old state
                return SimulationError(
                    f"{where}: its {name} was already non-finite (or beyond {kernel.MAX_COORDINATE:g}) "
                    "before the step: it was set so from outside the flock"
                )
        return SimulationError(
            f"{where}: the state blew up (non-finite, or beyond {kernel.MAX_COORDINATE:g}); "
            f"{_likely_cause(flock, boid)}"
        )
    rules = flock.rules
    item = rules[term] if term < len(rules) else flock.forces[term - len(rules)]
    label = f"{'rule' if term < len(rules) else 'force'} {describe(item.fn)}"
    if code == kernel.RULE_RAISED:
        cause = cause or _reproduce(flock, item, boid)
        what = f"{type(cause).__name__}: {cause}" if cause else "an exception in compiled code"
        return RuleError(f"{where}: {label} raised {what}")
    if code == kernel.RULE_NOT_FINITE:
        return RuleError(f"{where}: {label} returned a non-finite value (nan or inf)")
    return RuleError(f"{where}: {label} did not return 3 numbers (an x, y, z acceleration)")


def _likely_cause(flock: Flock, i: int) -> str:
    """Which term of boid i is huge or non-finite, and the parameter to lower; else dt."""
    p = flock.params
    if model_of(p).update_kind == "terms":
        state, kinds = flock.state, p.species_of_boids
        boid = reference.ReferenceBoid(
            flock.positions[i].copy(), flock.velocities[i].copy(), Boid(flock, i).orientation,
            species=int(kinds[i]), carried=reference.carried_entries(state, i),
        )  # fmt: skip
        world = reference.World(
            [
                reference.ReferenceBoid(
                    q.copy(),
                    v.copy(),
                    reference.Quaternion(o),
                    species=int(k),
                    carried=reference.carried_entries(state, j),
                )
                for j, (q, v, o, k) in enumerate(
                    zip(state.positions, state.velocities, state.orientations, kinds, strict=True)
                )
            ],  # fmt: skip
            [],
            p,
            (),
            (),
            [s for s in assemble.stage_names(p, (), ()) if TERMS_BY_NAME[s].weight],
            state.time,
        )
        sizes = {}
        for name in world.stages:
            with np.errstate(all="ignore"):
                try:
                    a = boid.stage(name, world, boid.velocity)
                except (ArithmeticError, ValueError):
                    a = np.array([np.inf])
            sizes[name] = float(np.linalg.norm(a)) if np.all(np.isfinite(a)) else math.inf
        name, size = max(sizes.items(), key=lambda item: item[1], default=(None, 0.0))
        if name is not None and size * p.dt > 10.0 * (p.max_speed + 1.0):
            field = TERMS_BY_NAME[name].weight
            key = spec_of(Params.__dataclass_fields__[field]).key
            return (
                f"the likely cause: its {name} acceleration is {size:.3g} units/s^2 ({key} = "
                f"{getattr(p, field):g}, sim.dt = {p.dt:g}): lower the weight or sim.dt"
            )
    speed = p.speed if model_of(p).constant_speed else p.max_speed
    return (
        f"the likely cause: sim.dt = {p.dt:g} is too large for these weights and speeds "
        f"(a boid may move {speed * p.dt:.3g} units in one step)"
    )


def _reproduce(flock: Flock, item, i: int) -> BaseException | None:
    """Call the failing rule on boid i's data in plain Python (as the step does, on read-only
    arrays) to get its exception: any but KeyboardInterrupt, which interrupts."""
    p_i, v_i = read_only_copy(flock.positions[i]), read_only_copy(flock.velocities[i])
    try:
        if isinstance(item, Force):
            item.fn(p_i, v_i, flock.time)
            return None
        for other in Boid(flock, i).neighbours():
            item.fn(p_i, v_i, read_only_copy(other.position), read_only_copy(other.velocity))
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        return error
    return None


def compile_error(error: Exception, rules: Sequence[PairRule], forces: Sequence[Force]) -> Exception:
    """The one-line :class:`RuleError` naming the rule numba cannot compile (else the error itself).

    numba's own errors run to dozens of lines, and not all of them are NumbaErrors (linear
    algebra without scipy is an ImportError): each rule is compiled alone, as the step calls
    it, to find the one at fault and say why in one line.
    """
    if isinstance(error, Flock3dError):  # flock3d's own, e.g. an interrupted step given up
        return error
    for item in (*rules, *forces):
        problem = _compile_problem(item)
        if problem:
            return RuleError(
                f"{'rule' if isinstance(item, PairRule) else 'force'} {describe(item.fn)} {problem}"
            )
    if (rules or forces) and isinstance(error, numba.core.errors.NumbaError):
        return RuleError(f"your rules could not be compiled into the step: {_reason(error)}")
    return error


def _compile_problem(item: PairRule | Force) -> str | None:
    """What keeps numba from compiling ``item`` as the step calls it, or None.

    The step passes read-only (3,) float64 arrays (and the time, a float, to a force) and
    leaves further arguments at their defaults; it reads 3 numbers from what comes back.
    """
    from numba import types

    fn = getattr(item.fn, "py_func", item.fn)
    given = (4 if isinstance(item, PairRule) else 2) * [types.float64[::1]]
    given += [] if isinstance(item, PairRule) else [types.float64]
    extra = fn.__code__.co_argcount - len(given)  # further arguments: each has a default
    defaults = [types.Omitted(d) for d in (fn.__defaults__ or ())][-extra:] if extra else []
    read_only = [t.copy(readonly=True) if isinstance(t, types.Array) else t for t in given]
    try:
        compiled = numba.njit(error_model="numpy")(fn)
        compiled.compile((*read_only, *defaults))
    except Exception as own:
        if "linear algebra" in str(own):
            return (
                "needs scipy for linear algebra (np.dot, np.linalg, @) in compiled code: install it "
                "(pip install scipy) or write the sums out, e.g. d[0] * d[0] + d[1] * d[1] + d[2] * d[2]"
            )
        try:
            numba.njit(error_model="numpy")(fn).compile((*given, *defaults))
        except Exception:
            return f"cannot be compiled by numba ({_reason(own)}); write it with numpy and math on its arrays"
        return writes_arguments(item)
    return _return_problem(compiled.nopython_signatures[-1].return_type)


def _return_problem(returned: Any) -> str | None:
    """What is wrong with a compiled rule's return type ``returned`` (None: it is 3 numbers)."""
    from numba import types

    number = (types.Integer, types.Float, types.Boolean)
    if isinstance(returned, types.Array):
        fits = returned.ndim == 1 and isinstance(returned.dtype, number)
    elif isinstance(returned, types.BaseTuple):
        fits = len(returned) == 3 and all(isinstance(t, number) for t in returned)
    elif isinstance(returned, types.List):
        fits = isinstance(returned.dtype, number)
    else:
        fits = False
    if fits:
        return None
    if isinstance(returned, (types.Optional, types.NoneType)):
        return "returns None on some path; it must return 3 numbers on every one"
    return f"returns {returned}; it must return 3 numbers: a tuple (x, y, z) or a (3,) array"


def device_compile_error(
    rules: Sequence[PairRule], forces: Sequence[Force], cc: tuple[int, int] | None = None
) -> RuleError | None:
    """The one-line :class:`RuleError` naming the first of ``rules`` and ``forces`` that numba-cuda
    cannot compile as the GPU step calls it (for compute capability ``cc``; None: the current
    device's), or None when it compiles them all.

    A device function makes no array and catches nothing: a rule written with whole-array
    maths (``p_i - p_j``, ``np.array([...])``) runs on the CPU engines and not here.
    """
    from flock3d.core.gpu.user import compile_for_device

    for item in (*rules, *forces):
        label = f"{'rule' if isinstance(item, PairRule) else 'force'} {describe(item.fn)}"
        try:
            problem = _return_problem(compile_for_device(item, cc))
        except Exception as error:  # numba-cuda's errors run to dozens of lines, not all NumbaErrors
            return RuleError(
                f"{label} cannot be compiled for the GPU ({_reason(error)}): on the GPU a rule makes no "
                "array; work on the numbers (p_i[0] - p_j[0], ...) and return a tuple (x, y, z)"
            )
        if problem:
            return RuleError(f"{label} {problem} (on the GPU)")
    return None


def _reason(error: Exception) -> str:
    """The line of a numba error that says what is wrong (not its pipeline boilerplate)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    useful = [
        line for line in lines if not line.startswith(("Failed in", "During:", "File ", "<source", "- "))
    ]
    text = (useful or lines or [type(error).__name__])[0]
    return text if len(text) <= 160 else text[:157] + "..."
