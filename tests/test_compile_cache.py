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


def _step_once(cache: Path) -> subprocess.CompletedProcess:
    code = "from flock3d import *; f = Flock(Params(count=40, fov=200)); f.step(3); print(f.step_count)"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "FLOCK3D_CACHE_DIR": str(cache), "FLOCK3D_NO_WARM_UP": "1"},
    )


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
        assert len(lines) == 1, (how, out.stderr)
        assert "the compile cache in" in lines[0] and "was damaged" in lines[0], lines
        again = _step_once(cache)  # the cache was written afresh
        assert again.returncode == 0 and again.stderr == "", (how, again.stderr)
