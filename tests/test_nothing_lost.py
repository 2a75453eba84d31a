"""A write that fails leaves the file that was there whole, and no temporary file behind.

Each kind of file flock3d writes over another (a scene, a recording, a video, an image, a
table, a plot, a cache entry) is written in a child process whose files may not grow past a
few bytes (``ulimit -f``, SIGXFSZ ignored): the write fails with a real EFBIG, as on a full
disk, half way through the new file.
"""

import errno
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest
from helpers import assert_one_line_failure, file_size_limit, flock3d, small_recording

from flock3d.core.atomic import AtomicFile, atomic_write
from flock3d.io import Trajectory

from conftest import first_line


def python_limited(code: str, limit: int, cwd, env: dict | None = None) -> subprocess.CompletedProcess:
    """Python ``code`` in a process whose files may not grow past ``limit`` bytes."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        preexec_fn=file_size_limit(limit),
    )


def assert_only(folder, *names: str) -> None:
    """``folder`` holds exactly the files ``names``: no temporary file was left behind."""
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


# -- the helper itself --------------------------------------------------------------------------


def test_a_write_that_raises_leaves_the_old_file_and_no_temporary_file(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old")
    with pytest.raises(OSError) as raised:
        with atomic_write(path) as handle:
            handle.write("new, half")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert raised.value.filename == str(path)  # the target is named, not the temporary file
    assert path.read_text() == "old"
    assert_only(tmp_path, "a.txt")


def test_the_new_file_keeps_the_old_ones_permissions_and_a_link_stays_a_link(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old")
    path.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(path.name)
    with atomic_write(link) as handle:
        handle.write("new")
    assert link.is_symlink() and path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert_only(tmp_path, "a.txt", "link.txt")


def test_a_file_put_beside_takes_the_first_free_name_and_replaces_nothing(tmp_path):
    path = tmp_path / "a.h5"
    path.write_text("old")
    (tmp_path / "a.stopped.h5").write_text("an earlier stop")
    put = []
    for text in ("second", "third"):
        new = AtomicFile(path)
        new.temp.write_text(text)
        put.append(new.commit_beside("stopped"))
    assert [p.name for p in put] == ["a.stopped-2.h5", "a.stopped-3.h5"]
    assert [p.read_text() for p in put] == ["second", "third"]
    assert path.read_text() == "old" and (tmp_path / "a.stopped.h5").read_text() == "an earlier stop"
    fresh = AtomicFile(tmp_path / "b.h5")  # where no file was, the file goes to its own name
    fresh.temp.write_text("b")
    assert fresh.commit_beside("stopped") == tmp_path / "b.h5"
    assert_only(tmp_path, "a.h5", "a.stopped.h5", "a.stopped-2.h5", "a.stopped-3.h5", "b.h5")


def test_a_recording_stopped_by_ctrl_c_in_python_keeps_the_one_there(tmp_path):
    from flock3d.flock import Flock
    from flock3d.io import TrajectoryWriter
    from flock3d.scene import resolve_scene

    scene = resolve_scene("default", ["flock.count=20"])
    path = tmp_path / "rec.h5"
    path.write_bytes(b"a long recording")
    flock = Flock.from_scene(scene)
    with pytest.raises(KeyboardInterrupt):
        with TrajectoryWriter(path, len(flock), scene, 1, flock.state.n_predators) as writer:
            writer.append(flock.state)
            raise KeyboardInterrupt
    assert path.read_bytes() == b"a long recording"
    assert writer.written_to == tmp_path / "rec.stopped.h5"
    with Trajectory(writer.written_to) as traj:
        assert traj.n_frames == 1
    assert_only(tmp_path, "rec.h5", "rec.stopped.h5")


def test_what_cannot_be_replaced_is_written_in_place():
    file = AtomicFile("/dev/null")
    assert file.temp == file.path and file.existed
    with atomic_write("/dev/null") as handle:
        handle.write("nothing")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


# -- each kind of file -------------------------------------------------------------------------


def test_any_name_the_file_system_takes_can_be_written_over(tmp_path):
    # 80 three-byte characters and a suffix: 244 bytes, under the file system's 255; the
    # temporary name kept 180 characters of it, 540 bytes (found in review).
    path = tmp_path / ("\u9e1f" * 80 + ".csv")
    path.write_text("old\n")
    with atomic_write(path, "w") as handle:
        handle.write("new\n")
    assert path.read_text() == "new\n" and sorted(os.listdir(tmp_path)) == [path.name]


def test_a_figure_written_to_a_name_without_a_suffix_takes_matplotlibs_default_format(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from flock3d.plots import save_figure

    save_figure(plt.figure(), tmp_path / "figure")  # the temporary name ends in .tmp: no format
    assert (tmp_path / "figure").read_bytes().startswith(b"\x89PNG") and os.listdir(tmp_path) == ["figure"]


def test_a_scene_saved_over_another_on_a_full_disk_leaves_it_whole(tmp_path):
    from flock3d.scene import resolve_scene

    path = tmp_path / "scene.toml"
    resolve_scene("vicsek/fig2a").save(path)
    old = path.read_bytes()
    child = python_limited(
        """
        from flock3d.scene import resolve_scene
        try:
            resolve_scene("default").save("scene.toml")
        except OSError as error:
            print(error.errno, error.filename)
        """,
        limit=300,
        cwd=tmp_path,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == [str(errno.EFBIG), "scene.toml"]
    assert path.read_bytes() == old
    assert_only(tmp_path, "scene.toml")


RUN = ("run", "default", "--every", "1", "--no-progress")


@pytest.mark.slow
def test_a_recording_that_fills_the_disk_leaves_the_one_there_before_whole(tmp_path):
    path = tmp_path / "rec.h5"
    first = flock3d(*RUN, "--steps", "20", "--out", path, cwd=tmp_path)  # compiled here, not below
    assert first.returncode == 0, first.stderr
    old = path.read_bytes()
    # 500 boids: a block of 87 frames takes about 4 MB with its reserve; the second cannot.
    out = flock3d(*RUN, "--steps", "300", "--out", path, file_size=6_000_000, cwd=tmp_path)
    assert_one_line_failure(
        out, f"{path}: no room for more frames (File too large); stopped, dropping the",
        "frames written and keeping the file there before as it was",
    )  # fmt: skip
    assert path.read_bytes() == old
    assert_only(tmp_path, "rec.h5")


@pytest.mark.slow
def test_a_recording_that_fills_the_disk_where_there_was_none_keeps_its_frames(tmp_path):
    path = tmp_path / "rec.h5"
    out = flock3d(*RUN, "--steps", "300", "--out", path, file_size=6_000_000, cwd=tmp_path)
    assert_one_line_failure(out, "no room for more frames (File too large); stopped, keeping the")
    kept = int(out.stderr.split("keeping the ")[1].split(" frames")[0].replace(",", ""))
    with Trajectory(path) as traj:
        assert traj.n_frames == kept > 0
    assert_only(tmp_path, "rec.h5")


def test_a_run_that_fails_keeps_the_old_recording_and_writes_its_frames_only_where_none_was(tmp_path):
    rules = tmp_path / "blows_up.py"  # from its fifth step on (t = 4/60 s), the force is infinite
    rules.write_text(
        "import numpy as np, flock3d\n@flock3d.force\ndef up(position, velocity, time):\n"
        "    return np.array([np.inf if time > 0.06 else 0.0, 0.0, 0.0])\n"
    )
    path = tmp_path / "rec.h5"
    first = flock3d(*RUN, "--steps", "20", "--every", "2", "--out", path, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    old = path.read_bytes()
    failed = ("--steps", "20", "--every", "1", "--rules", rules)
    out = flock3d(*RUN, *failed, "--out", path, cwd=tmp_path)
    assert_one_line_failure(
        out, "force 'up'", f"non-finite value (nan or inf); {path} kept as it was, without"
    )
    assert path.read_bytes() == old
    new = tmp_path / "new.h5"
    out = flock3d(*RUN, *failed, "--out", new, cwd=tmp_path)
    assert_one_line_failure(out, "step 5, boid 0: force 'up'", f"; the 5 frames before it are in {new}")
    with Trajectory(new) as traj:
        assert traj.n_frames == 5  # the start and the four steps before the failing one
    assert_only(tmp_path, "rec.h5", "new.h5", "blows_up.py")


@pytest.mark.slow
@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["ctrl-c", "sigterm", "terminal-closed"]
)
def test_a_run_stopped_by_a_signal_keeps_every_frame_beside_the_old_recording(tmp_path, sig, child):
    # SIGHUP (a terminal closed under the run) killed it at once, its frames left in a hidden
    # temporary file (the hostile-input walk); it now stops the run as SIGTERM does. A stop a
    # second in replaced a long recording of the same name (the artist's walk): it now stays,
    # and the stopped run's frames go beside it.
    path = tmp_path / "rec.h5"
    first = flock3d(*RUN, "--steps", "5", "--out", path, cwd=tmp_path)  # compiled: the child loads it
    assert first.returncode == 0, first.stderr
    old = path.read_bytes()
    process = child(*RUN, "--steps", "1000000", "--out", path, cwd=tmp_path, env={"PYTHONUNBUFFERED": "1"})
    assert first_line(process).startswith("Default: 500 boids")
    time.sleep(2.0)
    process.send_signal(sig)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 128 + sig, err
    frames = int(out.split("wrote ")[1].split(" frames")[0].replace(",", ""))
    beside = tmp_path / "rec.stopped.h5"
    assert f"to {beside} " in out and f"{path}, there before the run was stopped, is kept as it was" in out
    assert path.read_bytes() == old
    with Trajectory(beside) as traj:
        assert traj.n_frames == frames > 6  # the new run's, every one of them
    assert_only(tmp_path, "rec.h5", "rec.stopped.h5")


@pytest.mark.slow
def test_a_run_under_nohup_goes_on_when_its_terminal_closes(tmp_path, child):
    # SIGHUP ignored, as nohup leaves it: the run must not take it as a stop.
    script = tmp_path / "nohup_run.py"
    script.write_text(
        "import signal, sys\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\nfrom flock3d.cli import main\n"
        f"sys.exit(main({[*RUN, '--steps', '1000000', '--out', 'rec.h5']!r}))\n"
    )
    first = flock3d(*RUN, "--steps", "5", "--out", tmp_path / "rec.h5", cwd=tmp_path)  # compiled
    assert first.returncode == 0, first.stderr
    process = child(script=script, cwd=tmp_path, env={"PYTHONUNBUFFERED": "1"})
    assert first_line(process).startswith("Default: 500 boids")
    time.sleep(1.0)
    process.send_signal(signal.SIGHUP)
    time.sleep(2.0)
    assert process.poll() is None  # still flying
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143 and "stopped by SIGTERM" in err, err


def _render_or_skip(*args, cwd) -> None:
    out = flock3d("render", "default", *args, "--size", "160x120", "--no-progress", cwd=cwd)
    if out.returncode != 0 and "needs EGL" in out.stderr:
        pytest.skip("no EGL/OpenGL for offscreen rendering here")
    assert out.returncode == 0, out.stderr


@pytest.mark.slow
@pytest.mark.gui
@pytest.mark.parametrize("over", [False, True], ids=["new", "over-a-video"])
def test_a_render_stopped_by_a_signal_keeps_its_frames_beside_the_old_video(tmp_path, child, over):
    # A render stopped by SIGTERM said "terminated" and dropped every frame it had drawn.
    import re

    import imageio.v2 as imageio

    from flock3d.core.atomic import left_behind

    path = tmp_path / "v.mp4"
    _render_or_skip("--out", path, "--frames", "3", cwd=tmp_path)  # compiled: the child loads it
    old = path.read_bytes()
    if not over:
        path.unlink()
    process = child("render", "default", "--out", path, "--frames", "100000", "--size", "160x120",
                    "--no-progress", cwd=tmp_path)  # fmt: skip
    deadline = time.monotonic() + 300
    while process.poll() is None and time.monotonic() < deadline:
        if any(temp.stat().st_size > 0 for temp in left_behind(path)):
            break  # frames are being encoded
        time.sleep(0.2)
    time.sleep(1.0)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143, err
    kept = tmp_path / "v.stopped.mp4" if over else path
    frames = int(re.search(r"after ([\d,]+) frames?, kept in ", err)[1].replace(",", ""))
    said = f"flock3d render: stopped by SIGTERM after {frames:,} frames, kept in {kept}"
    assert err.strip().splitlines() == [
        said + (f" ({path}, there before, is kept as it was)" if over else "")
    ]
    assert sum(1 for _ in imageio.get_reader(kept)) == frames > 1  # a whole video of them
    if over:
        assert path.read_bytes() == old
    assert_only(tmp_path, "v.mp4", *(["v.stopped.mp4"] if over else []))


@pytest.mark.slow
@pytest.mark.gui
@pytest.mark.parametrize(
    "name, message",
    [  # ffmpeg is killed by SIGXFSZ, as a shell's `ulimit -f` would kill it (Popen restores it)
        ("v.mp4", "writing the video failed (ffmpeg: File size limit exceeded)"),
        ("p.png", "cannot write the image (File too large)"),
    ],
)
def test_a_video_or_image_rendered_over_another_on_a_full_disk_leaves_it_whole(tmp_path, name, message):
    path = tmp_path / name
    _render_or_skip("--out", path, "--frames", "20", cwd=tmp_path)
    old = path.read_bytes()
    out = flock3d("render", "default", "--out", path, "--frames", "20", "--start", "1",
                  "--size", "160x120", "--no-progress", file_size=2000, cwd=tmp_path)  # fmt: skip
    assert_one_line_failure(out, f"{path}: {message}")
    assert path.read_bytes() == old
    assert_only(tmp_path, name)


@pytest.mark.slow
@pytest.mark.parametrize("option, name", [("--csv", "m.csv"), ("--plot", "m.png")])
def test_a_table_or_plot_written_over_another_on_a_full_disk_leaves_it_whole(tmp_path, option, name):
    recording = small_recording(tmp_path / "rec.h5", count=30, frames=40)
    path = tmp_path / name
    first = flock3d("metrics", recording, option, path, "--no-progress", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    path.write_bytes(b"the old file\n" * 50)  # what a partial new file could never be
    old = path.read_bytes()
    out = flock3d("metrics", recording, option, path, "--no-progress", file_size=400, cwd=tmp_path)
    assert_one_line_failure(out, f"flock3d metrics: {path}: File too large")
    assert path.read_bytes() == old
    assert_only(tmp_path, "rec.h5", name)


def test_a_step_cache_entry_rewritten_on_a_full_disk_leaves_the_old_entry(tmp_path):
    # A stale entry is rewritten; when that fails, the entry is as it was (the next run tries
    # again) and the error names the module: the entry, or the copy that a cache which cannot be
    # written falls back to in a private folder, whose write fails on the full disk too.
    child = python_limited(
        """
        import hashlib
        from flock3d.core.step import cache
        source = "VALUE = 1\\n" * 200  # 2,000 bytes: the write goes past the limit
        key = hashlib.sha256((source + cache.core_fingerprint()).encode()).hexdigest()[:24]
        path = cache.cache_dir() / f"flock3d_step_{key}.py"
        path.write_text("VALUE = 0\\n")
        try:
            cache.load_module(source, {})
        except OSError as error:
            print(error.errno, error.filename)
        """,
        limit=1000,
        cwd=tmp_path,
        env={"FLOCK3D_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert child.returncode == 0, child.stderr
    code, filename = child.stdout.split()
    steps = tmp_path / "cache" / "steps"
    assert int(code) == errno.EFBIG and os.path.basename(filename).startswith("flock3d_step_")
    assert_only(steps, os.path.basename(filename))
    assert (steps / os.path.basename(filename)).read_text() == "VALUE = 0\n"
