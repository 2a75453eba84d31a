"""Parameter sweeps on a local Dask cluster: the table, the seeds, resume, the plot."""

import pandas as pd
import pytest
from helpers import assert_clean_failure, flock3d

from flock3d.scene import resolve_scene
from flock3d.sweep import SweepError, make_tasks, parse_axis, run_sweep, task_seed

STEPS, DISCARD = 60, 20


@pytest.fixture(scope="module")
def scheduler():
    """A local cluster of two worker processes, used through its address (as --scheduler would)."""
    import logging

    from dask.distributed import LocalCluster

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    )
    yield cluster.scheduler_address
    cluster.close()


def small_scene():
    return resolve_scene("couzin/torus", overrides=["flock.count=30"])


def test_axes_parse_ranges_and_lists():
    assert parse_axis("zones.orientation_width=0:15:4").values == (0.0, 5.0, 10.0, 15.0)
    assert parse_axis("perception.fov=180,270,360").values == (180, 270, 360)
    bad_axes = [
        ("fov=1,2", "unknown key; did you mean perception.fov"),
        ("perception.fov", "expected"),
        ("perception.fov=1:2", "start:stop:count"),
    ]
    for bad, message in bad_axes:
        with pytest.raises(SweepError, match=message):
            parse_axis(bad)


def test_seeds_belong_to_tasks_not_to_their_order():
    axis = parse_axis("zones.orientation_width=0,2")
    tasks = make_tasks(small_scene(), [axis], 3)
    assert len({t.seed for t in tasks}) == 6
    extended = make_tasks(small_scene(), [parse_axis("zones.orientation_width=-1,0,2,4")], 3)
    assert {(t.values, t.repeat, t.seed) for t in tasks} <= {(t.values, t.repeat, t.seed) for t in extended}
    assert task_seed(1, (2.0,), 0) != task_seed(2, (2.0,), 0)


def test_sweep_table_independent_repeats_and_resume(tmp_path, scheduler):
    out = tmp_path / "results.parquet"
    axes = [parse_axis("zones.orientation_width=0.5,6"), parse_axis("perception.fov=200,360")]
    table, stats = run_sweep(small_scene(), axes, 2, STEPS, DISCARD, out, scheduler=scheduler, progress=False)
    assert (stats.computed, stats.skipped) == (8, 0)
    assert len(table) == 8 and out.exists()
    columns = ["zones.orientation_width", "perception.fov", "repeat", "seed", "polarization_mean"]
    columns += ["polarization_std", "milling_mean", "milling_std", "groups", "steps", "discard"]
    for column in columns:
        assert column in table.columns
    assert table["seed"].is_unique
    assert table[["polarization_mean", "milling_mean"]].apply(lambda c: c.between(0, 1)).all().all()
    # Repeats of one combination are independent runs: their results differ.
    for _, group in table.groupby(["zones.orientation_width", "perception.fov"]):
        assert group["polarization_mean"].nunique() == 2
    # Re-run: nothing recomputed; the file's rows are the same.
    before = pd.read_parquet(out)
    again, stats = run_sweep(small_scene(), axes, 2, STEPS, DISCARD, out, scheduler=scheduler, progress=False)
    assert (stats.computed, stats.skipped) == (0, 8)
    pd.testing.assert_frame_equal(pd.read_parquet(out), before)
    # A third repeat: only the new runs are computed.
    grown, stats = run_sweep(small_scene(), axes, 3, STEPS, DISCARD, out, scheduler=scheduler, progress=False)
    assert (stats.computed, stats.skipped) == (4, 8) and len(grown) == 12


def test_a_run_is_reproducible_from_its_recorded_seed(tmp_path, scheduler):
    axes = [parse_axis("zones.orientation_width=1.0")]
    a, _ = run_sweep(
        small_scene(), axes, 1, STEPS, DISCARD, tmp_path / "a.csv", scheduler=scheduler, progress=False
    )
    b, _ = run_sweep(
        small_scene(), axes, 1, STEPS, DISCARD, tmp_path / "b.csv", scheduler=scheduler, progress=False
    )
    assert a["seed"][0] == b["seed"][0]
    assert a["polarization_mean"][0] == b["polarization_mean"][0]


def test_sweep_command_on_a_local_cluster(tmp_path):
    out, plot = tmp_path / "r.csv", tmp_path / "phase.png"
    run = flock3d(
        "sweep",
        "couzin/torus",
        "--set",
        "flock.count=20",
        "--param",
        "zones.orientation_width=0:4:2",
        "--repeats",
        "2",
        "--steps",
        "40",
        "--discard",
        "10",
        "--out",
        out,
        "--plot",
        plot,
        "--workers",
        "2",
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert "computed 4 runs" in run.stdout
    assert len(pd.read_csv(out)) == 4 and plot.stat().st_size > 5000


def test_sweep_bad_input(tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    base = ["sweep", "couzin/torus", "--steps", "10"]
    cases = [
        (
            [*base, "--param", "zones.orientation_width=-1,2", "--out", tmp_path / "x.csv"],
            "zones.orientation_width must be >= 0",
        ),
        ([*base, "--param", "zones.orientation_width=1", "--out", other], "holds results of another sweep"),
        (
            [*base, "--param", "zones.orientation_width=1", "--discard", "10", "--out", tmp_path / "y.csv"],
            "--discard must be from 0",
        ),
        (
            [
                *base,
                "--param",
                "zones.orientation_width=1",
                "--out",
                tmp_path / "z.csv",
                "--scheduler",
                "tcp://127.0.0.1:9",
            ],
            "cannot reach the Dask scheduler",
        ),
    ]
    for args, message in cases:
        assert_clean_failure(flock3d(*args, timeout=120), message)
