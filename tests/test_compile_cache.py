"""A damaged compile cache is dropped and compiled again, in one line: a cache only saves time.

numba reads its cache files with pickle: a truncated or overwritten one raises UnpicklingError,
which must end neither this run nor any later one in a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import process_env

from flock3d.core.compiling import COMPILING


def _step_once(cache: Path) -> subprocess.CompletedProcess:
    return _run(cache, "count=40, fov=200")


def _damage(files: list[Path], how: str) -> None:
    for path in files:
        if how == "junk":
            path.write_bytes(b"junk\x80\xff" * 7)
        elif how == "empty":
            path.write_bytes(b"")
        else:  # half: a write cut short
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.slow
def test_a_damaged_compile_cache_is_dropped_and_compiled_again_in_one_line(tmp_path):
    cache = tmp_path / "cache"
    first = _step_once(cache)
    assert first.returncode == 0 and first.stdout.strip() == "3", first.stderr
    for how in ("junk", "empty", "half"):
        entries = sorted((cache / "steps").rglob("*.nb[ic]"))
        assert entries, "numba cached nothing"
        _damage(entries + sorted((cache / "steps").glob("*.py")), how)
        out = _step_once(cache)
        assert out.returncode == 0 and out.stdout.strip() == "3", (how, out.stderr)
        lines = out.stderr.strip().splitlines()
        lines = [line for line in lines if line != COMPILING]  # a rebuild that compiles says so
        assert len(lines) == 1, (how, out.stderr)
        assert "the compile cache in" in lines[0] and "was damaged" in lines[0], lines
        again = _step_once(cache)  # the cache was written afresh
        assert again.returncode == 0 and again.stderr == "", (how, again.stderr)


def _run(cache: Path, params: str) -> subprocess.CompletedProcess:
    code = f"from flock3d import *; f = Flock(Params({params})); f.step(3); print(f.step_count)"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        env=_cache_env(cache),
    )


def _cache_env(cache: Path) -> dict:
    """This environment with the compile cache in ``cache``: numba's cache files of the steps too,
    whatever ``NUMBA_CACHE_DIR`` the suite was started with (it would move them elsewhere)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    return {**env, "FLOCK3D_CACHE_DIR": str(cache), "FLOCK3D_NO_WARM_UP": "1"}


def _step_files(cache: Path, suffix: str) -> list[Path]:
    return sorted((cache / "steps").rglob(f"*{suffix}"))


@pytest.mark.slow
def test_a_tampered_compile_cache_entry_is_never_used_and_is_compiled_again_in_one_line(tmp_path):
    cache = tmp_path / "cache"
    a, b = "count=40, fov=200", "model='vicsek', arena_shape='periodic', count=40"
    out = _run(cache, a)
    assert out.returncode == 0 and out.stdout.strip() == "3", out.stderr
    (module,), (entry,) = _step_files(cache, ".py"), _step_files(cache, ".nbc")  # the step of `a`
    out = _run(cache, b)
    assert out.returncode == 0 and out.stdout.strip() == "3", out.stderr
    (other,) = set(_step_files(cache, ".nbc")) - {entry}  # the step of `b`
    assert all(e.read_bytes().startswith(b"flock3d-sealed-1\n") for e in (entry, other))

    def swapped():  # another step's whole, valid entry in its place
        entry.write_bytes(other.read_bytes())

    def flipped():  # one bit of the compiled code
        data = bytearray(entry.read_bytes())
        data[-10] ^= 0x01
        entry.write_bytes(bytes(data))

    def entry_folder():
        entry.unlink()
        (entry / "x").mkdir(parents=True)

    def module_folder():
        module.unlink()
        (module / "x").mkdir(parents=True)

    for tamper, reason in (
        (swapped, "it was compiled from other inputs in the entry of chunk"),
        (flipped, "its contents do not match their checksum in the entry of chunk"),
        (entry_folder, "IsADirectoryError in the entry of chunk"),
        (module_folder, f"IsADirectoryError reading the module in {module.name}"),
    ):
        tamper()
        out = _run(cache, a)
        assert out.returncode == 0 and out.stdout.strip() == "3", (tamper.__name__, out.stderr)
        lines = out.stderr.strip().splitlines()
        lines = [line for line in lines if line != COMPILING]  # a rebuild that compiles says so
        assert (
            len(lines) == 1 and "the compile cache in" in lines[0] and f"was damaged ({reason})" in lines[0]
        ), (
            tamper.__name__,
            out.stderr,
        )
        assert entry.is_file() and module.is_file()
    again = _run(cache, a)  # the last rebuilt entries are sound: read back in silence
    assert again.returncode == 0 and again.stderr == "", again.stderr


def test_the_step_cache_key_covers_every_core_module_with_compiled_code():
    # A generated step compiles in (or links) the numba functions of the core: its cache entry is
    # valid only with their source, so each module holding any is in the key (_COMPILED_IN).
    import importlib
    from pathlib import Path

    from numba.core.registry import CPUDispatcher

    from flock3d.core.step import cache

    folder = Path(cache.__file__).parents[1]
    covered = {p for pattern in cache._COMPILED_IN for p in folder.glob(pattern)}
    missing = []
    for path in sorted(folder.rglob("*.py")):
        parts = list(path.relative_to(folder).with_suffix("").parts)
        name = ".".join(["flock3d", "core", *(parts[:-1] if parts[-1] == "__init__" else parts)])
        module = importlib.import_module(name)
        compiled = any(
            isinstance(v, CPUDispatcher) and v.py_func.__module__ == name for v in vars(module).values()
        )
        if compiled and path not in covered:
            missing.append(str(path.relative_to(folder)))
    assert missing == []


@pytest.mark.skipif(not hasattr(__import__("numba").config, "CACHE_LOCATOR_CLASSES"),
                    reason="this numba takes no NUMBA_CACHE_LOCATOR_CLASSES")  # fmt: skip
def test_where_numba_finds_nowhere_to_cache_it_caches_in_the_temporary_folder(tmp_path):
    # An installed package and a home that take no files (a container's user of another uid):
    # numba ended `import flock3d` in "cannot cache function 'cell_index': no locator available".
    # Its locators are narrowed to the one a user gives (NUMBA_CACHE_DIR), left unset, to be so.
    env = {k: v for k, v in process_env().items() if k != "NUMBA_CACHE_DIR"}
    env.update(NUMBA_CACHE_LOCATOR_CLASSES="UserProvidedCacheLocator", TMPDIR=str(tmp_path))
    code = "import os, flock3d; flock3d.metrics.nearest_neighbour_distances([[0, 0, 0], [1, 0, 0]]); " \
           "print(os.environ['NUMBA_CACHE_DIR'])"  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    folder = Path(out.stdout.strip())
    assert folder.parent.parent == tmp_path and folder.name == "numba"
    assert any(folder.rglob("*.nbi")), "nothing cached there"
