"""Your rules and forces on the GPU: the same Python functions, compiled as CUDA device functions.

The GPU step calls ``U_rule<k>`` and ``U_force<k>`` as the CPU step does
(:mod:`flock3d.core.step.pairs`), with read-only (3,) float64 arrays in the thread's local
memory (and the time, to a force). numba-cuda compiles the function the CPU step hands to
``numba.njit`` as a device function; what a device function cannot do (make an array:
``np.array``, ``p_i - p_j``; raise and catch) is found by :func:`compile_for_device`, which
compiles it alone for the device, before the step that calls it.
Importing this module needs numba-cuda (:mod:`flock3d.core.gpu.device`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numba import types

from flock3d.core.assemble import read_only
from flock3d.core.gpu.device import cuda, simulated
from flock3d.core.user_rules import Force, PairRule

__all__ = ["device_functions", "compile_for_device", "arguments"]


def _read_only_view(array: np.ndarray) -> np.ndarray:
    """What :func:`~flock3d.core.assemble.read_only` is where kernels run as Python (the
    simulator): the same array, read-only (no copy)."""
    view = array.view()
    view.flags.writeable = False
    return view


def device_functions(rules: Sequence[PairRule], forces: Sequence[Force]) -> dict[str, Any]:
    """The names a GPU step with ``rules`` and ``forces`` calls them by, bound to their device
    functions, and ``read_only``."""
    out: dict[str, Any] = {"read_only": _read_only_view if simulated() else read_only}
    out.update({f"U_rule{k}": _device(r.fn) for k, r in enumerate(rules)})
    out.update({f"U_force{k}": _device(f.fn) for k, f in enumerate(forces)})
    return out


def _device(fn: Callable) -> Any:
    return cuda.jit(device=True)(getattr(fn, "py_func", fn))  # a numba dispatcher: its Python function


def arguments(item: PairRule | Force) -> tuple:
    """The argument types the GPU step calls ``item``'s function with (further arguments left at
    their defaults): read-only (3,) float64 arrays, and the time [s] for a force."""
    array = types.float64[::1].copy(readonly=True)
    given = (array,) * 4 if isinstance(item, PairRule) else (array, array, types.float64)
    fn = getattr(item.fn, "py_func", item.fn)
    extra = fn.__code__.co_argcount - len(given)
    return (*given, *([types.Omitted(d) for d in (fn.__defaults__ or ())][-extra:] if extra else []))


def compile_for_device(item: PairRule | Force, cc: tuple[int, int] | None = None) -> Any:
    """Compile ``item``'s function alone as a device function for compute capability ``cc`` (None:
    the current device's) and return the type it returns; raises what numba-cuda raises."""
    if cc is None:
        cc = cuda.get_current_device().compute_capability
    _, returned = cuda.compile_ptx(getattr(item.fn, "py_func", item.fn), arguments(item), device=True, cc=cc)
    return returned
