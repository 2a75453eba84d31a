"""numba's on-disk cache of flock3d's compiled code, made disposable.

numba reads its cache files (an index, ``*.nbi``, and the compiled code, ``*.nbc``) with
``pickle``, and a truncated or overwritten file ends every later run in an
``UnpicklingError`` traceback. A cache only saves time, so :func:`guard` makes numba treat
a damaged entry of a flock3d function (the kernel's, or an assembled step's) as missing:
its files are deleted, the code compiled again and cached afresh, and one line is logged for the process
(``logging.getLogger("flock3d")``, which prints the message alone on stderr when the
application configured no logging). Other packages' functions are left to numba as they are.
"""

from __future__ import annotations

import glob
import logging
import os

__all__ = ["guard"]

_log = logging.getLogger("flock3d")
_dropped: list[str] = []  # the index files of the entries dropped in this process


def _ours(cache) -> bool:
    """Whether a numba ``Cache`` holds a flock3d function (its modules, or an assembled step)."""
    return str(getattr(cache._py_func, "__module__", "")).startswith("flock3d")


def _drop(cache, error: BaseException) -> None:
    """Delete a function's cache files: its index and every compiled version it lists."""
    files = cache._cache_file
    # One line however many functions a damaged cache holds: the first says it, the rest are details.
    _log.log(
        logging.DEBUG if _dropped else logging.WARNING,
        "flock3d: the compile cache in %s was damaged (%s in the entry of %s); dropping damaged "
        "entries and compiling them again",
        files._cache_path,
        type(error).__name__,
        cache._py_func.__qualname__,
    )
    _dropped.append(files._index_path)
    pattern = files._data_name_pattern.replace("{number:d}", "*")
    for path in [files._index_path, *glob.glob(os.path.join(glob.escape(files._cache_path), pattern))]:
        try:
            os.remove(path)
        except OSError:
            pass


def guard() -> None:
    """Make numba drop damaged cache entries of flock3d's functions instead of failing (idempotent)."""
    from numba.core import caching

    cls = caching.Cache
    if getattr(cls, "_flock3d_guarded", False):
        return
    load, save = cls.load_overload, cls.save_overload

    def load_overload(self, sig, target_context):
        try:
            return load(self, sig, target_context)
        except Exception as error:
            if not _ours(self):
                raise
            _drop(self, error)
            return None  # a miss: numba compiles the function and saves it anew

    def save_overload(self, sig, data):
        try:
            return save(self, sig, data)
        except Exception as error:  # saving reads the index first
            if not _ours(self):
                raise
            _drop(self, error)
            return save(self, sig, data)

    cls.load_overload, cls.save_overload = load_overload, save_overload
    cls._flock3d_guarded = True
