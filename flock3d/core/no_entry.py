"""Compiled functions with no entry point from Python, that Python can call all the same.

numba builds two wrappers beside each function it compiles: a CPython entry point (unboxing
every argument, boxing the result) and a C-callable one. Compiled code calls neither: it calls
the function's own code, or its address (:class:`~flock3d.core.kernel.calls.Called`). Building
them is a fixed cost a function, paid again in every caller that links it, so the functions
that compiled code calls (the objects' distances, the keep-out, the kernel's shared pieces) are
compiled without them: :func:`no_entry` (what that saves: ``benchmarks/NOTES.md``).

numba crashes the interpreter when Python calls a function that has no entry point. A
:func:`no_entry` function is a :class:`NoEntry` dispatcher instead, whose call from Python (a
test, a tool, a scene's check) goes to its twin (:func:`from_python`): the same source compiled a
second time with its wrappers, under a name of its own in numba's cache.

Invariant: a no-entry function's cache entries have names of their own (``*.no-entry-*``), so a
flock3d that expects an entry point never loads one without it from a shared cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
from numba.core.caching import CompileResultCacheImpl, FunctionCache
from numba.core.registry import CPUDispatcher

__all__ = ["NoEntry", "from_python", "no_entry"]

#: What the twin leaves out of a no-entry function's options.
_WRAPPERLESS = ("no_cpython_wrapper", "no_cfunc_wrapper")


class _NoEntryCacheImpl(CompileResultCacheImpl):
    def get_filename_base(self, fullname: str, abiflags: str) -> str:
        return super().get_filename_base(f"{fullname}.no-entry", abiflags)


class _NoEntryCache(FunctionCache):
    """numba's cache of a function, under file names that say it has no entry point."""

    _impl_class = _NoEntryCacheImpl


class NoEntry(CPUDispatcher):
    """A numba dispatcher compiled without wrappers; called from Python, it calls its twin."""

    def enable_caching(self) -> None:
        self._cache = _NoEntryCache(self.py_func)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return from_python(self)(*args, **kwargs)


def no_entry(**options: Any) -> Callable[[Callable], NoEntry]:
    """``numba.njit(**options)``, without the wrappers: a decorator making :class:`NoEntry`
    dispatchers."""

    cache = options.pop("cache", False)  # numba's own cache is not made only to be replaced

    def decorate(fn: Callable) -> NoEntry:
        dispatcher = numba.njit(no_cpython_wrapper=True, no_cfunc_wrapper=True, **options)(fn)
        if isinstance(dispatcher, CPUDispatcher):  # not where NUMBA_DISABLE_JIT leaves fn itself
            dispatcher.__class__ = NoEntry
            if cache:
                dispatcher.enable_caching()
        return dispatcher

    return decorate


_twins: dict[NoEntry, CPUDispatcher] = {}


def from_python(fn: NoEntry) -> CPUDispatcher:
    """The no-entry function ``fn`` as Python calls it: the same source compiled a second time,
    with its wrappers and a cache entry of its own."""
    twin = _twins.get(fn)
    if twin is None:
        py = fn.py_func
        copy = type(py)(py.__code__, py.__globals__, py.__name__, py.__defaults__, py.__closure__)
        copy.__qualname__ = f"{py.__qualname__}.from_python"
        options = {k: v for k, v in fn.targetoptions.items() if k not in _WRAPPERLESS}
        cache = isinstance(fn._cache, FunctionCache)
        twin = _twins[fn] = numba.jit(cache=cache, **options)(copy)  # options hold nopython=True
    return twin
