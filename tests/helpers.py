"""Running the flock3d command in a subprocess, as a user would."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys

import numpy as np

#: Code that, run first in an interpreter, makes ``import scipy`` fail, as in a plain ``pip install
#: .`` (which has no scipy): numba then has no linear algebra (np.dot does not compile).
WITHOUT_SCIPY = "import sys; sys.modules['scipy'] = None; "


def flock3d(
    *args: str, timeout: float = 300, env: dict | None = None, cwd=None, without_scipy: bool = False
) -> subprocess.CompletedProcess:
    """Run ``flock3d ARGS`` with this interpreter (as if scipy were not installed, when asked);
    returns the completed process."""
    command = ["-m", "flock3d.cli"]
    if without_scipy:
        command = ["-c", WITHOUT_SCIPY + "import runpy; runpy.run_module('flock3d.cli', run_name='__main__')"]
    return subprocess.run(
        [sys.executable, *command, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def file_size_limit(limit: int):
    """A ``preexec_fn`` for a disk that is full after ``limit`` bytes of any file."""

    def apply():  # in the child: writes past `limit` bytes fail with EFBIG instead of killing it
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def assert_clean_failure(out: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 2, no traceback, and the message fragments on stderr."""
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    for fragment in fragments:
        assert fragment in out.stderr, (fragment, out.stderr)


def small_recording(path, count: int = 20, frames: int = 4, every: int = 2, **params):
    """Record ``frames`` frames of a flock of ``count`` boids (Params ``params``) to ``path``."""
    from flock3d import Flock, Params
    from flock3d.io import TrajectoryWriter
    from flock3d.scene import Scene

    scene = Scene(Params(count=count, **params), seed=1)
    flock = Flock.from_scene(scene)
    with TrajectoryWriter(path, count, scene, every=every) as writer:
        for _ in range(frames):
            writer.append(flock.state)
            flock.step(every)
    return path


def altered_copy(source, path, change):
    """A copy of the recording ``source`` at ``path``, changed by ``change(h5py.File)``."""
    import shutil

    import h5py

    shutil.copy(source, path)
    with h5py.File(path, "r+") as f:
        change(f)
    return path


def assert_one_line_failure(out: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 2, no traceback, and exactly one line on stderr holding the fragments (besides
    the notice that a first run compiles the simulation)."""
    from flock3d.cli import COMPILING

    assert_clean_failure(out, *fragments)
    assert len([line for line in out.stderr.strip().splitlines() if line != COMPILING]) == 1, out.stderr


def sky(image: np.ndarray) -> np.ndarray:
    """(H, 1, 3) int: the renderer's sky behind each row of ``image``, 0-255."""
    from flock3d.look.colors import sky_rows

    return np.round(sky_rows(image.shape[0]) * 255).astype(int)[:, None, :]


def foreground_mask(image: np.ndarray, tolerance: int = 12) -> np.ndarray:
    """Pixels that differ from the sky behind them (a vertical gradient)."""
    return np.abs(image[..., :3].astype(int) - sky(image)).max(axis=-1) > tolerance
