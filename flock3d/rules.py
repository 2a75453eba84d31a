"""Your own rules and forces, compiled into the flock's step.

Two kinds, each a plain Python function of numpy arrays that numba compiles into the
same parallel step as the built-in terms (and that the reference engine calls as it is):

- :func:`force`: a per-boid force ``fn(position, velocity, time) -> acceleration``;
- :func:`pair_rule`: a neighbour rule ``fn(p_i, v_i, p_j, v_j) -> contribution``, summed
  (or averaged) over the neighbours j that boid i sees within the rule's radius and cone.

Each array is (3,) float64, in world units, units/s and seconds; what a function returns
is 3 numbers (an array or a tuple), in units/s^2 once weighted. Write them with numpy and
math on those arrays (numba compiles them: no Python objects inside)::

    import numpy as np
    import flock3d

    @flock3d.force
    def breeze(position, velocity, time):
        return np.array([0.5 * np.sin(0.1 * time), 0.0, 0.0])

    @flock3d.pair_rule(radius=3.0, weight=2.0)
    def keep_apart(p_i, v_i, p_j, v_j):
        d = p_i - p_j
        return d / (d[0] * d[0] + d[1] * d[1] + d[2] * d[2])

    flock = flock3d.Flock(flock3d.Params(), forces=[breeze], rules=[keep_apart])

From the command line, ``--rules my_rules.py`` loads every rule and force a file
defines (:func:`load_rules`); scene files never carry code. See ``docs/rules.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from flock3d.core.user_rules import Force, PairRule, describe, read_only_copy
from flock3d.errors import Flock3dError

__all__ = [
    "force",
    "pair_rule",
    "load_rules",
    "describe",
    "check_rules",
    "check_model_runs_rules",
    "RuleError",
    "Force",
    "PairRule",
]


class RuleError(Flock3dError):
    """A rule or force that cannot be used; the message names it and where it is defined."""


def force(fn: Callable | None = None, *, weight: float = 1.0, name: str | None = None):
    """Make ``fn(position, velocity, time) -> acceleration`` a per-boid force.

    Use as ``@flock3d.force`` or ``@flock3d.force(weight=2.0)``. Pass the result to
    ``Flock(params, forces=[...])``.

    Args:
        fn: the function: (3,) position [units], (3,) velocity [units/s] and time [s] to
            3 numbers; None when used as ``@flock3d.force(...)``.
        weight: multiplies what ``fn`` returns, giving the acceleration [units/s^2].
        name: names it in ``rules.order`` and in messages (None: the function's name).

    Returns:
        The :class:`Force`; without ``fn``, a decorator that makes one.

    Raises:
        TypeError: ``fn`` does not take (position, velocity, time) (further arguments
            need defaults), or an option has the wrong type; the message names the rule.
        ValueError: ``weight`` is not finite or beyond 1e9 in size.
    """

    def make(fn: Callable) -> Force:
        return Force(fn, getattr(fn, "__name__", None) if name is None else name, weight)

    return make if fn is None else make(fn)


def pair_rule(
    fn: Callable | None = None,
    *,
    radius: float | None = None,
    fov: float | None = None,
    average: bool = True,
    weight: float = 1.0,
    name: str | None = None,
):
    """Make ``fn(p_i, v_i, p_j, v_j) -> contribution`` a neighbour rule.

    The step sums ``fn`` over the neighbours j that boid i sees within ``radius`` and the
    cone ``fov``, divides by their number when ``average``, and multiplies by ``weight``:
    the rule's acceleration. A boid that sees none gets no acceleration. In a periodic arena
    p_j is the neighbour's image nearest to boid i.

    Use as ``@flock3d.pair_rule`` or ``@flock3d.pair_rule(radius=3.0, weight=2.0)``.

    Args:
        fn: the function: positions [units] and velocities [units/s] of boid i and of
            neighbour j, each (3,), to 3 numbers; None when used as
            ``@flock3d.pair_rule(...)``.
        radius: how far the rule reaches [units]; None: the view distance, following it
            when it is re-tuned.
        fov: the rule's cone, full angle [degrees]; None: the view's.
        average: divide the sum by the number of neighbours (True) or keep the sum.
        weight: multiplies the sum (or average), giving the acceleration [units/s^2].
        name: names it in ``rules.order`` and in messages (None: the function's name).

    Returns:
        The :class:`PairRule`; without ``fn``, a decorator that makes one.

    Raises:
        TypeError: ``fn`` does not take (p_i, v_i, p_j, v_j) (further arguments need
            defaults), or an option has the wrong type; the message names the rule.
        ValueError: ``radius`` not in (0, 1e9], ``fov`` not in (0, 360], or ``weight`` not
            finite or beyond 1e9 in size.
    """

    def make(fn: Callable) -> PairRule:
        return PairRule(
            fn, getattr(fn, "__name__", None) if name is None else name, radius, fov, average, weight
        )

    return make if fn is None else make(fn)


# Sample arguments for a first call in plain Python: distinct, nothing coincident or zero.
#: A test call's arguments: p_i (a force's position), v_i, p_j, v_j. No position is the origin, an
#: arena's usual centre, where a radial force (-r / |r|, as the confinement) has no direction.
_SAMPLE = (np.array([0.5, -0.25, 0.75]), np.array([1.0, 0.5, 0.25]), np.array([1.5, -0.5, 1.25]),
           np.array([-0.25, 1.0, 0.5]))  # fmt: skip


#: The most rules and forces of yours a flock may run together. Each is compiled into the step
#: as its own loop or call, so the step's compile time and memory grow with their number;
#: this many keep a first compile within about a minute on two cores.
MAX_RULES = 12


def check_rules(rules: tuple[PairRule, ...], forces: tuple[Force, ...]) -> None:
    """Call each rule once in plain Python on read-only sample arguments; raise :class:`RuleError`
    when there are more than :data:`MAX_RULES`, or one is not a rule or force, raises (anything
    but KeyboardInterrupt), writes into its arguments, or does not return 3 finite numbers."""
    if len(rules) + len(forces) > MAX_RULES:
        raise RuleError(
            f"{len(rules)} rules and {len(forces)} forces: a flock runs at most {MAX_RULES} together "
            "(each is compiled into the step, whose compile time and memory grow with their number); "
            "combine some into one"
        )
    _check_names(rules, forces)
    for item, kind, args in [(r, PairRule, _SAMPLE) for r in rules] + [
        (f, Force, (*_SAMPLE[:2], 0.0)) for f in forces
    ]:
        if not isinstance(item, kind):
            what = "rules" if kind is PairRule else "forces"
            maker = "@flock3d.pair_rule" if kind is PairRule else "@flock3d.force"
            raise RuleError(f"{what} must be made with {maker} (got {item!r})")
        label = f"{'rule' if kind is PairRule else 'force'} {describe(item.fn)}"
        try:
            with no_hard_exit():
                out = item.fn(*(read_only_copy(a) if isinstance(a, np.ndarray) else a for a in args))
        except KeyboardInterrupt:
            raise
        except HardExit as error:
            raise RuleError(f"{label} called {error} on a test call") from None
        except BaseException as error:
            if isinstance(error, ValueError) and "read-only" in str(error):
                raise RuleError(f"{label} {writes_arguments(item)}") from None
            detail = f": {error}" if str(error) else ""
            raise RuleError(f"{label} raised {type(error).__name__} on a test call{detail}") from None
        try:
            vector = np.asarray(out, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            vector = None
        if vector is None or vector.shape != (3,):
            raise RuleError(
                f"{label} returned {_short(out)}; it must return 3 numbers (an x, y, z acceleration)"
            )
        if not np.all(np.isfinite(vector)):
            raise RuleError(f"{label} returned a non-finite value on a test call ({_short(out)})")


def _check_names(rules: tuple[PairRule, ...], forces: tuple[Force, ...]) -> None:
    """Each rule's and force's name is its own: ``rules.order`` and the messages tell them apart by
    it. (One named as a built-in stage, as examples/wind.py's force is, runs; ``rules.order``
    refuses to name it, not knowing which of the two is meant.)"""
    seen: set[str] = set()
    for item in (*rules, *forces):
        name = getattr(item, "name", None)
        if not isinstance(name, str):
            continue  # not a rule or force at all: said below
        if name in seen:
            raise RuleError(f"two rules or forces are named {name!r}: give one another (name=...)")
        seen.add(name)


def check_model_runs_rules(params: Any, rules: tuple, forces: tuple) -> None:
    """Raise :class:`RuleError` when ``params``' model has an update of its own (the Couzin,
    Vicsek, inertial spin, Cucker-Smale and Pearce models), which takes no rules or forces of
    yours: they would do nothing."""
    from flock3d.core.models import model_of

    if (rules or forces) and model_of(params).update_kind != "terms":
        raise RuleError(
            f"the {params.model} model runs its own update, which takes no rules or forces of yours: "
            'they run with model = "boids"'
        )


def writes_arguments(item: PairRule | Force) -> str:
    """What the messages say of a rule that writes into its (read-only) arguments."""
    first = "p_i" if isinstance(item, PairRule) else "position"
    return f"writes into its arguments, which are read-only: work on a copy (d = {first}.copy())"


def _raised(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class HardExit(BaseException):
    """What ``os._exit(...)`` or ``os.abort()`` raise while :func:`no_hard_exit` holds."""


@contextlib.contextmanager
def no_hard_exit() -> Iterator[None]:
    """While your code runs (a rules file's module code, a test call of a rule), ``os._exit``
    and ``os.abort`` raise :class:`HardExit` instead of ending the process.

    They end it at once, past every handler, atexit and finally, so nothing can report them
    afterwards (a rules file calling ``os._exit(0)`` made ``flock3d run`` exit 0 having run
    nothing). Replacing them in the os module (and in posix/nt, where they live) catches every
    call made through those modules, including ``from os import _exit`` run inside the file;
    not a reference taken before, nor ctypes or a signal sent to the process.
    """
    names = ("_exit", "abort")
    modules = [m for m in (os, sys.modules.get("posix"), sys.modules.get("nt")) if m is not None]
    saved = [(m, n, getattr(m, n)) for m in modules for n in names if hasattr(m, n)]

    def refusing(name: str) -> Callable:
        def call(*args: Any) -> None:
            raise HardExit(f"os.{name}({', '.join(map(repr, args))})")

        return call

    for module, name, _ in saved:
        setattr(module, name, refusing(name))
    try:
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


def _short(value: Any) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."


def load_rules(path: str | Path) -> tuple[tuple[PairRule, ...], tuple[Force, ...]]:
    """The pair rules and forces a Python file defines at module level, in definition order.

    This runs the file (it is your code).

    Args:
        path: the Python (``.py``) file.

    Returns:
        ``(rules, forces)``: the :class:`PairRule` and :class:`Force` objects it defines.

    Raises:
        RuleError: in one line, when the file is missing, is not a ``.py`` file, fails to
            run, or defines no rule or force, or two of the same name.
    """
    path = Path(path)
    if not path.is_file():
        raise RuleError(
            f"{path}: no such rules file" + ("" if not path.exists() else " (not a regular file)")
        )
    if path.suffix != ".py":
        raise RuleError(f"{path}: a rules file is a Python file (.py)")
    # A module of its own, registered, named after the file's content: numba names a compiled
    # function's module, and imports it by that name when it loads a cached step calling it.
    try:
        name = "flock3d_rules_" + hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    except OSError as error:
        raise RuleError(f"{path}: cannot be read ({error.strerror or error})") from None
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        try:
            with no_hard_exit():
                spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        namespace = vars(module)
    except KeyboardInterrupt:
        raise
    except RuleError as error:
        raise RuleError(f"{path}: {error}") from None
    except SyntaxError as error:
        where = f"{path}:{error.lineno}" if error.lineno is not None else str(path)  # NUL bytes: no line
        raise RuleError(f"{where}: syntax error: {error.msg}") from None
    except SystemExit:
        raise RuleError(f"{path}: running it called exit(); a rules file only defines rules") from None
    except HardExit as error:
        raise RuleError(f"{path}: running it called {error}; a rules file only defines rules") from None
    except BaseException as error:  # GeneratorExit or a BaseException of its own too: one line
        raise RuleError(f"{path}: running it raised {_raised(error)}") from None
    rules = tuple(v for v in namespace.values() if isinstance(v, PairRule))
    forces = tuple(v for v in namespace.values() if isinstance(v, Force))
    if not rules and not forces:
        raise RuleError(
            f"{path}: defines no rule or force (decorate functions with @flock3d.pair_rule or @flock3d.force)"
        )
    names = [r.name for r in rules] + [f.name for f in forces]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise RuleError(f"{path}: two rules are named {duplicate!r}; give one another name=")
    return rules, forces
