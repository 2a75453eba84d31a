"""Compiled functions a step calls through their address: compiling the step types them by their
signature alone, so it neither compiles them nor waits for them.

numba compiles a function's callees before the function itself, in one process (one core): the
step's chunk cannot be typed before every function it calls is compiled or loaded from numba's
cache. The objects' keep-out is a chain of about 20 functions, 2.5-6 s to compile from an empty
cache, that only a world with objects needs. Called through its address (:class:`Called`), it
compiles in a second process (:func:`flock3d.core.assemble.warm_up_in_background`) while this one
compiles the chunk, and the step looks its address up when it first runs, from numba's cache.

The batch turn and move (:data:`~flock3d.core.kernel.motion.TURN_ROWS`, ``MOVE_ROWS``) are
called so too, once a batch: compiled once for every layout, rather than inlined into each
layout's chunk (1.2 s of every compile), and since the chunk runs their own machine code whether
it was compiled or loaded from the cache, a run that compiled its step rounds as one that
loaded it (which fast-math code called by its symbol does not promise).

The addresses travel in the step's ``world_at`` array, after the world terms' offsets, in the
order the generated module names them (its ``CALLED``), so the chunk's signature is every
layout's. A call through an address is an indirect call that LLVM cannot inline, where numba
links a called function's bitcode into its caller (from its cache too), which LLVM may inline. So
only functions called once a batch, or whose every call does much work (the keep-out's chain of
distances), are called so: ``benchmarks/ab.py`` shows each such choice against the inlined one.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from numba import types
from numba.core import cgutils
from numba.experimental.function_type import _get_jit_address
from numba.extending import intrinsic

__all__ = ["Called", "REGISTRY", "is_cached", "function_at"]

#: Every :class:`Called`, by name: a generated step names those it calls in its ``CALLED``.
REGISTRY: dict[str, Called] = {}


class Called:
    """The compiled function ``fn`` (a numba dispatcher) as a step calls it: through its address,
    with the one ``signature`` the step's arguments have.

    ``at``: an intrinsic of compiled code, ``at(address)`` -> the function at ``address`` (int64),
    which compiled code calls as it would call ``fn``; a step's module reaches it as ``<name>_at``
    of the module defining it (:meth:`flock3d.core.step.module._Module.call_at`)."""

    def __init__(self, fn: Any, signature: Any) -> None:
        self.fn, self.signature = fn, signature
        self.name: str = getattr(fn, "py_func", fn).__name__  # fn itself where NUMBA_DISABLE_JIT is set
        self.type = types.FunctionType(signature)
        self.at = function_at(self.type)
        self._address: int | None = None
        self._lock = threading.Lock()
        if REGISTRY.setdefault(self.name, self) is not self:
            raise ValueError(f"two functions called at their address are named {self.name!r}")

    def address(self) -> int:
        """The address of ``fn``'s compiled code for :attr:`signature`: loaded from numba's cache,
        or compiled here where the cache lacks it (once a process)."""
        with self._lock:
            if self._address is None:
                self.fn.compile(self.signature.args)
                self._address = _get_jit_address(self.fn, self.signature)
            return self._address

    def cached(self) -> bool:
        """Whether numba's cache holds ``fn`` compiled for :attr:`signature`."""
        return self._address is not None or is_cached(self.fn, self.signature.args)

    def __repr__(self) -> str:
        return f"Called({self.name})"


def is_cached(fn: Any, signature: Any) -> bool:
    """Whether numba's cache holds ``fn`` compiled for ``signature`` (as it was asked for: a
    ``Signature``, or a tuple of argument types) on this machine. ``fn``: a numba dispatcher
    (its own cache, a no-entry function's included), or the Python function a plain cached
    ``numba.njit`` would compile."""
    try:
        from numba.core.caching import Cache, FunctionCache
        from numba.core.registry import cpu_target

        cache = getattr(fn, "_cache", None)
        if not isinstance(cache, Cache):
            cache = FunctionCache(getattr(fn, "py_func", fn))
        key = cache._index_key(signature, cpu_target.target_context.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # noqa: BLE001 - numba's internals moved: assume cached, compile where needed
        return True


@functools.cache
def function_at(ftype: types.FunctionType) -> Any:
    """An intrinsic: ``at(address)`` -> a first-class function of type ``ftype`` whose compiled
    code is at ``address`` (numba's own calling convention: the ``jit_addr`` of numba's function
    values; no C wrapper, no Python object behind it). One a type: the step and the driver call
    a function of one signature through the same intrinsic."""

    @intrinsic
    def at(typingctx: Any, address: Any) -> Any:
        if address != types.int64:
            return None

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            fn = cgutils.create_struct_proxy(ftype)(context, builder)
            null = cgutils.get_null_value(cgutils.voidptr_t)
            fn.c_addr, fn.py_addr = null, null
            fn.jit_addr = builder.inttoptr(args[0], cgutils.voidptr_t)
            return fn._getvalue()

        return ftype(types.int64), codegen

    return at
