"""numba's on-disk cache of flock3d's compiled code, made disposable.

numba reads its cache files (an index, ``*.nbi``, and the compiled code, ``*.nbc``) with
``pickle``, and a truncated or overwritten file ends every later run in an
``UnpicklingError`` traceback. A cache only saves time, so :func:`guard` makes numba treat
a damaged entry of a flock3d function (the kernel's, or an assembled step's) as missing:
its files are deleted, the code compiled again and cached afresh, and one line is logged for the process
(``logging.getLogger("flock3d")``, which prints the message alone on stderr when the
application configured no logging). Other packages' functions are left to numba as they are.

**Trusted only when sealed.** A data file of a flock3d function starts with a seal: a digest of
the inputs it was compiled from (the function's cache name, its source file's stamp, numba's
version, and numba's key: the signature, the target machine and the bytecode's hash) and a
digest of its content. An entry whose seal does not match (damaged, or another function's
valid entry put in its place) is dropped like an unreadable one, never loaded. The seal
catches accidents (bit rot, a copy gone wrong), not someone who recomputes it.

A cache that cannot be written (a read-only or full disk, a folder where a file should be)
costs the next run its compile, never this one. Where numba finds nowhere to cache at all (an
installed package and a home that take no files, as for a container's user of another uid),
numba's cache is a folder of the temporary directory, as flock3d's own step cache then is
(:func:`flock3d.core.step.cache.cache_dir`), where numba would end every import in a traceback.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import pickle
import shutil
import tempfile

__all__ = ["guard", "report_damage", "temporary_cache"]

_log = logging.getLogger("flock3d")
_dropped: list[str] = []  # the index files of the entries dropped in this process


def _ours(cache) -> bool:
    """Whether a numba ``Cache`` holds a flock3d function (its modules, or an assembled step)."""
    return str(getattr(cache._py_func, "__module__", "")).startswith("flock3d")


def report_damage(folder: str, what: str) -> None:
    """Log that the compile cache in ``folder`` was damaged (``what``: which entry, how):
    one line a process, however many entries a damaged cache holds; the rest at DEBUG."""
    _log.log(
        logging.DEBUG if _dropped else logging.WARNING,
        "flock3d: the compile cache in %s was damaged (%s); dropping damaged entries and compiling them "
        "again",
        folder,
        what,
    )
    _dropped.append(what)


class SealBroken(ValueError):
    """A data file whose seal does not match what it should hold."""


class _Unsealed(OSError):
    """A data file written before entries were sealed: numba takes the OSError as a miss."""


#: What a sealed data file starts with, before its two digests (32 bytes each) and its pickle.
_SEAL = b"flock3d-sealed-1\n"


def _sealed_class():
    from numba.core.caching import IndexDataCacheFile

    class SealedCacheFile(IndexDataCacheFile):
        """numba's index and data files, each data file sealed (see the module's notes)."""

        _flock3d_key: object = None

        def save(self, key, data):
            self._flock3d_key = key  # numba compiles one function at a time, under its lock
            super().save(key, data)

        def load(self, key):
            self._flock3d_key = key
            return super().load(key)

        def _inputs(self) -> bytes:
            made_from = (self._index_name, self._source_stamp, self._version, self._flock3d_key)
            return hashlib.sha256(repr(made_from).encode()).digest()

        def _save_data(self, name, data):
            payload = self._dump(data)
            with self._open_for_write(self._data_path(name)) as f:
                f.write(_SEAL + self._inputs() + hashlib.sha256(payload).digest() + payload)

        def _load_data(self, name):
            with open(self._data_path(name), "rb") as f:
                data = f.read()
            n = len(_SEAL)
            if not data.startswith(_SEAL):
                if data.startswith(b"\x80"):  # numba's own pickle: an entry of an older flock3d
                    raise _Unsealed(self._data_path(name))  # a miss, not damage: compiled again
                raise SealBroken("it carries no flock3d checksum")
            if data[n : n + 32] != self._inputs():
                raise SealBroken("it was compiled from other inputs")
            payload = data[n + 64 :]
            if hashlib.sha256(payload).digest() != data[n + 32 : n + 64]:
                raise SealBroken("its contents do not match their checksum")
            return pickle.loads(payload)

    return SealedCacheFile


def _seal(cache) -> None:
    """Give a flock3d function's cache sealed data files (once)."""
    global _Sealed
    if _Sealed is None:
        _Sealed = _sealed_class()
    if type(cache._cache_file) is _Sealed.__base__:
        cache._cache_file.__class__ = _Sealed


_Sealed = None


def _entry_paths(cache) -> list[str]:
    """A function's cache files: its index and every compiled version of it."""
    files = cache._cache_file
    pattern = files._data_name_pattern.replace("{number:d}", "*")
    return [files._index_path, *glob.glob(os.path.join(glob.escape(files._cache_path), pattern))]


def _drop(cache, error: BaseException) -> None:
    """Delete a function's cache files: its index and every compiled version it lists."""
    files = cache._cache_file
    how = str(error) if isinstance(error, SealBroken) else type(error).__name__
    report_damage(files._cache_path, f"{how} in the entry of {cache._py_func.__qualname__}")
    for path in _entry_paths(cache):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)  # a folder where an entry should be
            else:
                os.remove(path)
        except OSError:
            pass


def _somewhere() -> None:
    """Where numba finds no folder to cache a function of this package in (it raises
    "cannot cache function ...: no locator available"), a folder of the temporary directory
    (``NUMBA_CACHE_DIR`` too, for the processes this one starts)."""
    import numba
    from numba.core import config

    if config.CACHE_DIR:
        return
    if not getattr(config, "CACHE_LOCATOR_CLASSES", None) and os.access(os.path.dirname(__file__), os.W_OK):
        return  # numba's own locators cache beside the source, in a folder that takes files
    try:
        numba.njit(cache=True)(_probe)  # numba looks for a folder when it is told to cache
    except RuntimeError:
        os.environ["NUMBA_CACHE_DIR"] = config.CACHE_DIR = temporary_cache("numba")


def temporary_cache(name: str) -> str:
    """Cache folder ``name`` of this user's in the temporary directory (``flock3d-UID/NAME``): where
    a cache goes when its own place takes no files."""
    user = os.getuid() if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"flock3d-{user}", name)


def _probe() -> None:
    """A function of this package for numba to find a cache folder for (never compiled)."""


def guard() -> None:
    """Make numba drop damaged cache entries of flock3d's functions instead of failing, and give
    it a folder where it has none (idempotent)."""
    from numba.core import caching

    _somewhere()

    cls = caching.Cache
    if getattr(cls, "_flock3d_guarded", False):
        return
    load, save = cls.load_overload, cls.save_overload

    def load_overload(self, sig, target_context):
        if _ours(self):
            _seal(self)
        try:
            return load(self, sig, target_context)
        except Exception as error:
            if not _ours(self):
                raise
            _drop(self, error)
            return None  # a miss: numba compiles the function and saves it anew

    def save_overload(self, sig, data):
        if _ours(self):
            _seal(self)
        try:
            return save(self, sig, data)
        except Exception as error:  # saving reads the index first
            if not _ours(self):
                raise
            if isinstance(error, OSError) and not any(os.path.isdir(p) for p in _entry_paths(self)):
                # Not damage: a cache that cannot be written (read-only, full) costs the next run its compile.
                _log.debug("flock3d: could not cache %s (%s)", self._py_func.__qualname__, error)
                return None
            _drop(self, error)
            try:
                return save(self, sig, data)
            except OSError as again:  # a cache that cannot be written costs the next run its compile
                _log.debug("flock3d: could not cache %s (%s)", self._py_func.__qualname__, again)

    cls.load_overload, cls.save_overload = load_overload, save_overload
    cls._flock3d_guarded = True
