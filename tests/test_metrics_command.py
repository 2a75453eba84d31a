"""flock3d metrics and run --every end to end: recordings written, measured, and read back."""

import csv
import math

import h5py
import numpy as np
import pytest
from helpers import altered_copy, assert_clean_failure, flock3d

from flock3d import metrics
from flock3d.cli import COMPILING_MEASUREMENTS
from flock3d.io import Trajectory


def read_csv(path):
    rows = list(csv.DictReader(path.open()))
    return {key: np.array([float(r[key]) for r in rows]) for key in rows[0]}


@pytest.mark.slow
def test_run_records_ten_frames_per_simulated_second_by_default(tmp_path):
    for scene, steps, every in [("default", 60, 6), ("couzin/swarm", 10, 1)]:
        path = tmp_path / "t.h5"
        out = flock3d("run", scene, "--steps", steps, "--out", path)
        assert out.returncode == 0, out.stderr
        with Trajectory(path) as traj:
            assert traj.every == every
            np.testing.assert_array_equal(traj.steps, np.arange(0, steps + 1, every))
        assert f"wrote {steps // every + 1} frames" in out.stdout


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "t.h5"
    out = flock3d(
        "run", "default", "--steps", "240", "--every", "20", "--out", path, "--set", "flock.count=200"
    )
    assert out.returncode == 0, out.stderr
    return path


def test_metrics_with_correlation_and_anisotropy_tables(recording, tmp_path):
    table, corr, aniso = tmp_path / "m.csv", tmp_path / "c.csv", tmp_path / "a.csv"
    out = flock3d("metrics", recording, "--csv", table, "--correlation", corr, "--anisotropy", aniso,
                  "--bins", "10", "--neighbours", "8", "--stride", "2")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "xi / L" in out.stdout and "n_c" in out.stdout and "note:" not in out.stdout
    columns, curves, gammas = read_csv(table), read_csv(corr), read_csv(aniso)
    np.testing.assert_array_equal(columns["step"], np.arange(0, 241, 40))
    assert {"xi_velocity", "xi_orientation", "xi_speed", "n_c", "size", "thickness"} <= set(columns)
    assert len(curves["r"]) == 7 * 10 and len(gammas["gamma"]) == 7 * 8
    with Trajectory(recording) as traj:
        frame = traj.frame(6)  # step 120
    c = metrics.velocity_correlation(frame.positions, frame.velocities, bins=10)
    at = curves["step"] == 120
    np.testing.assert_allclose(curves["velocity"][at], c.velocity, rtol=1e-12)
    assert columns["xi_velocity"][3] == pytest.approx(c.xi_velocity, rel=1e-12)
    a = metrics.neighbour_anisotropy(frame.positions, frame.velocities, 8)
    np.testing.assert_allclose(gammas["gamma"][gammas["step"] == 120], a.gamma, rtol=1e-12)


def test_a_nan_in_a_recording_is_reported_not_fatal(recording, tmp_path):
    damaged = tmp_path / "nan.h5"
    damaged.write_bytes(recording.read_bytes())
    with h5py.File(damaged, "r+") as f:
        f["particles/flock/position/value"][5, 17, 0] = np.nan
    table = tmp_path / "m.csv"
    out = flock3d("metrics", damaged, "--csv", table, "--correlation", tmp_path / "c.csv",
                  "--anisotropy", tmp_path / "a.csv")  # fmt: skip
    assert out.returncode == 0, out.stderr
    warning = [line for line in out.stderr.splitlines() if "warning" in line]
    assert warning == [
        "flock3d metrics: warning: 1 of 13 frames hold NaN, infinite or huge (beyond 1e+150) "
        "positions or velocities (the first at step 100); their measurements are NaN"
    ]
    columns = read_csv(table)
    assert all(math.isnan(columns[name][5]) for name in [*metrics.COLUMNS, "xi_velocity"])
    assert np.isfinite(columns["polarization"][[4, 6]]).all()


def test_a_recording_of_which_no_frame_can_be_measured_is_refused_and_writes_nothing(recording, tmp_path):
    # It printed a table of NaN, wrote it over the CSV and the plot given, and exited 0.
    def alter(f):
        f["particles/flock/position/value"][...] = np.nan

    damaged = altered_copy(recording, tmp_path / "nan.h5", alter)
    kept = {tmp_path / "m.csv": b"kept table", tmp_path / "m.png": b"kept plot"}
    for path, data in kept.items():
        path.write_bytes(data)
    out = flock3d(
        "metrics", damaged, "--csv", tmp_path / "m.csv", "--plot", tmp_path / "m.png", "--no-progress"
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        f"flock3d metrics: {damaged}: no frame could be measured (13 of 13 frames hold NaN, infinite or "
        "huge (beyond 1e+150) positions or velocities (the first at step 0); their measurements are NaN)"
    )
    assert all(path.read_bytes() == data for path, data in kept.items())


@pytest.mark.parametrize(
    "values",
    [{5: 1e308}, {(3, 0): 1e300, (8, 1): -1e300}],  # every coordinate of a frame; a boid far out
    ids=["1e308", "spread-1e300"],
)
def test_positions_too_large_to_measure_are_a_warning_not_a_traceback(recording, tmp_path, values):
    def alter(f):
        for where, value in values.items():  # a frame, or a boid of a frame
            f["particles/flock/position/value"][where] = value

    frames = sorted({where if isinstance(where, int) else where[0] for where in values})
    damaged = altered_copy(recording, tmp_path / "huge.h5", alter)
    table = tmp_path / "m.csv"
    out = flock3d("metrics", damaged, "--csv", table, "--correlation", tmp_path / "c.csv",
                  "--anisotropy", tmp_path / "a.csv", "--no-progress")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "RuntimeWarning" not in out.stderr
    warning = [line for line in out.stderr.splitlines() if "warning" in line]
    assert warning == [
        f"flock3d metrics: warning: {len(frames)} of 13 frames hold NaN, infinite or huge (beyond 1e+150) "
        f"positions or velocities (the first at step {20 * frames[0]}); their measurements are NaN"
    ]
    columns = read_csv(table)
    unmeasured = np.isin(np.arange(13), frames)
    for name in [*metrics.COLUMNS, "xi_velocity", "n_c"]:
        assert np.all(np.isnan(columns[name][unmeasured])), name
    assert np.isfinite(columns["polarization"][~unmeasured]).all()


@pytest.mark.slow
def test_metrics_says_it_compiles_measurements_not_a_simulation(recording, tmp_path):
    # A fresh cache: the measurements' compiled code is built again, as on a first run.
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}  # read at import: a process
    out = flock3d("metrics", recording, "--no-progress", env=env, process=True)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [COMPILING_MEASUREMENTS]
    assert "simulation" not in out.stderr


def test_metrics_bad_options_fail_cleanly(recording, tmp_path):
    assert_clean_failure(
        flock3d("metrics", recording, "--correlation", tmp_path / "c.txt"), "must end in .csv"
    )
    assert_clean_failure(flock3d("metrics", recording, "--stride", "0"), "must be >= 1")
    for option, most in (("--bins", "10,000"), ("--neighbours", "1,000")):
        assert_clean_failure(flock3d("metrics", recording, option, "0"), f"{option}: must be >= 1")
        out = flock3d("metrics", recording, option, "99999999999")
        assert_clean_failure(out, f"{option}: must be at most {most}, got 99,999,999,999")
    # 200 boids have 199 neighbours each: a rank of 200 gave a table of NaN and exit 0 (the hostile walk)
    out = flock3d("metrics", recording, "--anisotropy", tmp_path / "a.csv", "--neighbours", "200")
    assert_clean_failure(out, "--neighbours must be below the number of boids, 200 (got 200)")
    assert not (tmp_path / "a.csv").exists()


@pytest.mark.slow
def test_metrics_of_a_periodic_recording_look_through_the_faces(tmp_path):
    path, table = tmp_path / "wrap.h5", tmp_path / "m.csv"
    assert (
        flock3d(
            "run", "classics/wraparound-270-2d", "--steps", "30", "--every", "10", "--out", path
        ).returncode
        == 0
    )
    out = flock3d("metrics", path, "--csv", table, "--correlation", tmp_path / "c.csv")
    assert out.returncode == 0, out.stderr
    columns = read_csv(table)
    with Trajectory(path) as traj:
        box = metrics.periodic_box(traj.scene.params)
        last = traj.frame(-1)
        distance = traj.scene.params.perception_distance
    assert box is not None and box[2] == 0.0  # a planar wrap-around world
    assert columns["groups"][-1] == metrics.groups(last.positions, distance, box)[0]
    assert columns["nn_mean"][-1] == pytest.approx(metrics.nearest_neighbour_stats(last.positions, box).mean)
    assert np.all(np.isnan(columns["size"])) and np.all(np.isnan(columns["length"]))
    assert np.all(np.isfinite(columns["xi_velocity"]))
    # The table's nan says why: the box, not a damaged frame.
    assert "note: size, thickness, width and length (and xi / L) are NaN in a periodic box" in out.stdout


@pytest.mark.slow
def test_a_constant_speed_flock_has_no_speed_correlation_and_says_so(tmp_path):
    path = tmp_path / "swarm.h5"
    assert flock3d("run", "couzin/swarm", "--steps", "20", "--every", "10", "--out", path).returncode == 0
    out = flock3d("metrics", path, "--csv", tmp_path / "m.csv", "--correlation", tmp_path / "c.csv")
    assert out.returncode == 0, out.stderr
    columns = read_csv(tmp_path / "m.csv")
    assert np.all(np.isnan(columns["xi_speed"])) and np.all(np.isfinite(columns["xi_velocity"]))
    assert "note: xi_speed is NaN: the speeds do not fluctuate" in out.stdout


def test_each_row_of_the_table_says_what_it_measures(recording):
    """The largest distance (size) and the ellipsoid's axes (length may exceed it) cannot be confused."""
    from flock3d import metrics

    out = flock3d("metrics", recording, "--no-progress")
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line for line in out.stdout.splitlines() if line.split()[:1] != []}
    for name, meaning in metrics.COLUMNS.items():
        assert rows[name].endswith(meaning), rows[name]
    assert "largest distance" in rows["size"] and "ellipsoid" in rows["length"]


def test_a_logarithmic_axis_is_labelled_with_plain_numbers(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from flock3d.plots import save_figure

    fig, ax = plt.subplots()
    ax.loglog([1.0, 3.0], [0.1, 0.5])  # under a decade each: matplotlib labels the minor ticks too
    save_figure(fig, tmp_path / "log.png")
    labels = {t.get_text() for axis in (ax.xaxis, ax.yaxis) for t in axis.get_ticklabels(which="both")} - {""}
    assert {"1", "2", "3", "0.1", "0.2", "0.3", "0.4"} <= labels, labels  # not 2x10^0, 3x10^-1
    assert not any("times" in label or "e-" in label for label in labels), labels


@pytest.mark.slow
def test_a_plot_says_nothing_of_matplotlibs_folders_where_home_takes_no_files(recording, tmp_path):
    # HOME a file: matplotlib said in two lines, every --plot, that it made a temporary folder
    # (the hostile-input walk). flock3d's plots need none of its settings.
    home = tmp_path / "home"
    home.write_text("not a folder")
    env = {"HOME": str(home), "XDG_CONFIG_HOME": "", "MPLCONFIGDIR": ""}
    out = flock3d("metrics", recording, "--plot", tmp_path / "m.png", "--no-progress", env=env, process=True)
    assert out.returncode == 0 and (tmp_path / "m.png").stat().st_size > 10_000, out.stderr
    assert [line for line in out.stderr.splitlines() if line != COMPILING_MEASUREMENTS] == [], out.stderr
