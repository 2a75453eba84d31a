"""The disk cache of assembled steps: a module per layout, named by a hash of its source.

A step's module is written under :func:`cache_dir` and numba caches its compiled code beside
it; both are disposable (see :mod:`flock3d.core.numba_cache`). The name covers the source,
the core code it compiles in, numba's and Python's versions, and whether scipy is installed;
a user rule's :func:`fingerprint` covers its code, its defaults and what it reads.

Nothing in the cache is trusted: a step's module is compiled from the source itself, and the
file is used (for numba's cache beside it) only when its bytes are the source's; numba's own
entries carry a seal of their inputs and content (:mod:`flock3d.core.numba_cache`). A module
file damaged, or a folder in its place, is written afresh with one line logged; where it
cannot be written (a read-only cache), the step is compiled in a private temporary folder.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import inspect
import logging
import marshal
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np

from flock3d.core.atomic import atomic_write
from flock3d.core.numba_cache import report_damage, temporary_cache

__all__ = ["fingerprint", "cache_dir", "core_fingerprint", "load_module"]

_log = logging.getLogger("flock3d")


def fingerprint(fn: Callable) -> str:
    """A digest of a user function: its code, and the constants and functions it reads.

    numba freezes a function's global constants and its arguments' defaults into its
    compiled code, so they are part of what the compiled step depends on; so are the
    functions it calls.
    """
    digest = hashlib.sha256()
    _fold(fn, digest, set())
    return digest.hexdigest()[:16]


def _fold(fn: Any, digest: Any, seen: set[int]) -> None:
    fn = getattr(fn, "py_func", fn)  # a numba dispatcher: its Python function
    if id(fn) in seen or not hasattr(fn, "__code__"):
        digest.update(repr(fn).encode())
        return
    seen.add(id(fn))
    # Its module too: numba's cache imports that module by name when it loads the step back.
    digest.update(str(getattr(fn, "__module__", "")).encode())
    try:
        digest.update(inspect.getsource(fn).encode())
    except (OSError, TypeError):
        digest.update(marshal.dumps(fn.__code__))
    else:
        # A function made by exec has no file: Python 3.13 keeps a -c command's text under
        # "<string>", where inspect then "finds" any exec'd function's source (two forces had
        # one fingerprint, and the second ran the first's compiled step). Its code tells it apart.
        if fn.__code__.co_filename.startswith("<"):
            digest.update(marshal.dumps(fn.__code__))
    digest.update(repr(fn.__defaults__).encode())  # extra=SCALE reads SCALE when defined
    names = set(fn.__code__.co_names)
    for code in fn.__code__.co_consts:  # nested functions and comprehensions
        if hasattr(code, "co_names"):
            names |= set(code.co_names)
    cells = [c.cell_contents for c in (fn.__closure__ or ()) if _has_contents(c)]
    values = [fn.__globals__[name] for name in sorted(names) if name in fn.__globals__] + cells
    for value in values:
        if isinstance(value, (bool, int, float, complex, str, bytes, tuple)):
            digest.update(repr(value).encode())
        elif isinstance(value, np.ndarray):
            digest.update(value.tobytes() + str(value.dtype).encode() + str(value.shape).encode())
        elif callable(value) and hasattr(getattr(value, "py_func", value), "__code__"):
            _fold(value, digest, seen)


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


_core_digest: str | None = None


#: The core's modules whose compiled functions a generated step calls or inlines (with every
#: term module): numba's cache of a step is only valid with the code it compiled in.
_COMPILED_IN = ("kernel/*.py", "components.py", "neighbors.py", "noise.py", "quaternion.py", "geometry.py",
                "terms/*.py", "objects/*.py", "models/*.py", "gpu/*.py")  # fmt: skip


def core_fingerprint() -> str:
    """A digest of the core sources a generated step compiles in, of numba's and Python's
    versions, and of whether scipy is installed: numba's linear algebra in a user rule (np.dot)
    calls scipy's BLAS, and a step compiled with it aborts a process that has no scipy."""
    global _core_digest
    if _core_digest is None:
        scipy = importlib.util.find_spec("scipy") is not None
        digest = hashlib.sha256(f"{numba.__version__} {sys.version} scipy={scipy}".encode())
        folder = Path(__file__).parents[1]  # flock3d/core
        for path in sorted(p for pattern in _COMPILED_IN for p in folder.glob(pattern)):
            digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
        _core_digest = digest.hexdigest()
    return _core_digest


def cache_dir() -> Path:
    """Where assembled steps are written (and numba caches their compiled code).

    ``$FLOCK3D_CACHE_DIR``, else ``$XDG_CACHE_HOME/flock3d`` (``~/.cache/flock3d``); a
    temporary folder when neither can be written.
    """
    env = os.environ.get("FLOCK3D_CACHE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "flock3d"
    folder = base / "steps"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK):
            return folder
    except OSError:
        pass
    folder = Path(temporary_cache("steps"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _module_file(path: Path, source: str) -> Path:
    """Where a step's module file holding exactly ``source`` is: ``path``, written afresh when
    it is missing or differs; a private temporary folder's file when ``path`` cannot be written."""
    try:
        if path.read_bytes() == source.encode():
            return path
        damaged = "the module differs from its source"
    except FileNotFoundError:
        damaged = None
    except OSError as error:  # a folder in its place, or unreadable
        damaged = f"{type(error).__name__} reading the module"
    if damaged is not None:
        report_damage(str(path.parent), f"{damaged} in {path.name}")
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        _write(path, source)
        return path
    except OSError as error:
        global _private
        if _private is None:
            _private = Path(tempfile.mkdtemp(prefix="flock3d-steps-"))
            atexit.register(shutil.rmtree, _private, ignore_errors=True)
            level = logging.DEBUG if damaged is not None else logging.WARNING  # one line a process
            _log.log(
                level,
                "flock3d: cannot write the compile cache in %s (%s); compiling in a temporary folder",
                path.parent,
                error.strerror or error,
            )
        path = _private / path.name
        _write(path, source)
        return path


def _write(path: Path, source: str) -> None:
    with atomic_write(path) as handle:  # a parallel process never reads half a file
        handle.write(source)


#: This process's folder for steps' modules when the cache cannot be written.
_private: Path | None = None


def load_module(source: str, injected: dict[str, Any]) -> Any:
    key = hashlib.sha256((source + core_fingerprint()).encode()).hexdigest()[:24]
    name = f"flock3d_step_{key}"
    if name in sys.modules:
        module = sys.modules[name]
    else:
        path = _module_file(cache_dir() / f"{name}.py", source)
        module = types.ModuleType(name)
        module.__file__ = str(path)  # where numba keeps its cache of the module's functions
        module.__dict__.update(injected)  # before it runs: its chunk compiles as it is defined
        # Registered first: numba's cache names the module of the code it loads back.
        sys.modules[name] = module
        try:
            # Compiled from the source itself, not through a .pyc that could be damaged.
            exec(compile(source, str(path), "exec"), module.__dict__)
        except BaseException:
            del sys.modules[name]
            raise
    return module
