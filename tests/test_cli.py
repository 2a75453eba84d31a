import io
import subprocess
import sys

import numpy as np
import pytest
from helpers import flock3d

from flock3d import Flock, bench, metrics
from flock3d.cli import main
from flock3d.io import Trajectory
from flock3d.scene import resolve_scene


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert "bench" in capsys.readouterr().out


def test_the_command_runs_as_a_program_with_its_exit_status():
    # The one test of the program itself: the others call flock3d.cli.main in their process.
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="flock3d")
    assert script.value == "flock3d.cli:main"
    ok = flock3d("check", "default", process=True)
    assert ok.returncode == 0 and ok.stdout.startswith("default: ok"), ok.stderr
    bad = flock3d("check", "no-such-scene", process=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    # `flock3d metrics x.h5 | head` ended with "flock3d metrics: Broken pipe" on stderr.
    # `true` reads nothing and is gone long before flock3d writes (its import alone takes longer).
    err = tmp_path / "err.txt"
    command = f"'{sys.executable}' -m flock3d.cli scenes 2>'{err}' | true; echo ${{PIPESTATUS[0]}}"
    status = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120).stdout
    assert status.strip() == "141" and err.read_text() == ""  # 128 + SIGPIPE, as a shell reports it


def test_unknown_command_and_option_exit_2_without_traceback():
    for args in (["fly"], ["bench", "--stepz", "3"], ["bench", "--steps", "0"]):
        out = flock3d(*args)
        assert out.returncode == 2
        assert "Traceback" not in out.stderr and "error" in out.stderr


def test_a_recording_interval_past_any_run_is_refused_as_an_argument():
    # It reached h5py as a 67-bit integer: "Object dtype dtype('O') has no native HDF5 equivalent".
    out = flock3d("run", "default", "--steps", "1", "--every", "99999999999999999999")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "argument --every: must be at most 1,000,000,000 steps" in out.stderr


@pytest.mark.slow
def test_bench_measures_at_the_stated_density():
    row = bench.measure(1000, steps=2, min_seconds=0.0)
    assert row["n"] == 1000 and row["threads"] >= 1
    assert row["steps_per_s"] > 0 and row["ms_per_step"] == pytest.approx(1e3 / row["steps_per_s"])
    assert row["ms_per_call"] > 0  # one Flock.step() call of one step
    assert 15 < row["neighbours_start"] < 25  # ~20 boids within view distance
    assert row["peak_rss_mb"] > 0


def test_bench_prints_the_table(monkeypatch):
    # The full table takes a minute; check its shape with a stub measurement.
    calls = []

    def fake(n, steps, min_seconds, engine="fast"):
        calls.append((n, engine))
        speed = 2.0 if engine == "reference" else 4000.0 / (n / 1000)
        return dict(
            n=n, steps_per_s=speed, ms_per_step=1e3 / speed, ms_per_call=1.5e3 / speed, neighbours_start=20.0,
            neighbours_end=21.0,
            threads=2, peak_rss_mb=200.0, start_to_first_step_s=0.7,
        )  # fmt: skip

    monkeypatch.setattr(bench, "_measure_in_subprocess", fake)
    monkeypatch.setattr(bench, "cold_start_seconds", lambda n, variant=None: 6.5)
    out = io.StringIO()
    bench.run(large=True, out=out)
    text = out.getvalue()
    assert [c[0] for c in calls] == [1000, 10000, 100000, 1000000, 1000]
    assert "the fast kernel is 2,000x faster" in text
    rows = [
        line.split() for line in text.splitlines() if line.strip().split(" ")[0].replace(",", "").isdigit()
    ]
    assert [r[0] for r in rows] == ["1,000", "10,000", "100,000", "1,000,000"]
    assert rows[0][1] == "4,000.0" and rows[-1][1] == "4.0"  # steps/s column
    assert rows[0][3] == "0.375" and "step() ms" in text  # one call of step(), overhead included
    assert all(r[-1] == "6.50s" for r in rows) and "cold" in text  # the cold-compile column


@pytest.mark.slow
def test_bench_variants_are_each_a_flock_of_their_own_layout():
    # Built by the reference engine, which compiles nothing: compiling the fast step of all 21
    # layouts took 70-125 s of the suite, and each term's layout is compiled by its own tests.
    from flock3d.core.assemble import layout_of

    variants = bench.variant_params(300)
    assert len(variants) >= 16 and next(iter(variants)).startswith("spec")
    layouts = set()
    for name, params in variants.items():
        flock = bench.variant_flock(params, engine="reference")
        assert flock.params.count == 300 and np.isfinite(flock.positions).all(), name
        layouts.add(layout_of(params))
    # A row an option: each its own layout, but the mesh objects (the same step as primitives').
    assert len(layouts) == len(variants) - 1


@pytest.mark.slow
def test_bench_variants_table_prints_a_row_an_option(monkeypatch):
    variants = bench.variant_params(300)
    first = dict(list(variants.items())[:3])  # the spec, a box, a periodic arena
    monkeypatch.setattr(bench, "variant_params", lambda n: first)
    out = io.StringIO()
    rows = bench.run_variants(n=300, steps=2, min_seconds=0.0, out=out, cold_starts=False)
    assert [r["option"] for r in rows] == list(first) and all(r["steps_per_s"] > 0 for r in rows)
    assert out.getvalue().count("x     nans\n") == len(rows)  # one "vs spec" ratio per row, no cold column


@pytest.mark.slow
def test_bench_profile_splits_a_step_into_its_phases():
    out = io.StringIO()
    rows = bench.profile(n=2000, after=0.1, repeats=1, out=out)
    assert [r["moment"] for r in rows] == ["start", "after 0.1 s"]
    for r in rows:
        assert r["n"] == 2000 and r["step_ms"] > 0 and r["pair_ms"] >= 0
        assert all(r[k] > 0 for k in ("grid_ms", "gather_ms", "candidates_ms", "turn_ms"))
        # Every pair the step tests is among the 27 cells around; every neighbour is a candidate.
        counts = ("scanned_per_boid", "candidates_per_boid", "within_per_boid", "seen_per_boid")
        assert [r[k] for k in counts] == sorted((r[k] for k in counts), reverse=True)
        assert r["seen_per_boid"] > 0
        assert r["pairs_per_ns_core"] > 0
    text = out.getvalue()
    assert text.count("pair loop (the rest)") == 2 and "pairs within view distance per ns per core" in text


@pytest.mark.parametrize("species", [False, True])
def test_bench_profile_walks_the_steps_own_template(species):
    # The profile's walk (flock3d.core.step.walk) is the step's chunk less what it does per boid:
    # every line of it but its counts and its values' unpacking is the step's, in the step's order,
    # so a change to the template's walk or to the candidate holes reaches the profile.
    from flock3d.core import assemble
    from flock3d.core.params import Params, Species
    from flock3d.core.step.walk import walk

    params = Params(species=[Species("a", 10), Species("b", 10)]) if species else Params()
    layout = assemble.layout_of(params)
    step = assemble.generate(layout)[0].splitlines()
    walked, names = walk(layout, count=True)
    assert names == ["reach"]
    counting = ("in_c = ", "status[t, ", "from flock3d.core.kernel import count_candidates")
    lines = [line for line in walked.splitlines() if not line.strip().startswith(("v_", *counting))]
    at = 0
    for line in lines:
        assert line in step[at:], f"the walk's line {line!r} is not the step's"
        at = step.index(line, at) + 1
    assert sum(line.strip().startswith("status[t, ") for line in walked.splitlines()) == 3
    assert "status[t, " not in walk(layout)[0]  # timed without its counts


def test_bench_profile_is_on_the_command_line(monkeypatch):
    calls = []
    monkeypatch.setattr(bench, "profile", lambda **kwargs: calls.append(kwargs))
    assert main(["bench", "--profile", "--after", "5"]) == 0
    assert calls == [{"after": 5.0}]


def test_bench_threads_beyond_numbas_pool_are_refused_in_one_line():
    import numba

    out = flock3d("bench", "--threads", "1000")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.splitlines() == [
        f"flock3d bench: --threads 1000: numba runs at most {numba.config.NUMBA_NUM_THREADS} threads here "
        "(one per core; set NUMBA_NUM_THREADS to allow more)"
    ]


@pytest.mark.slow
def test_bench_threads_apply_here_and_in_the_benchs_own_processes():
    # --profile measures in this process, which must run the threads asked for, not all of its
    # own, and must not stop at a compile with "Cannot set NUMBA_NUM_THREADS to a different
    # value"; each size's process must run as many threads as asked too.
    code = (
        "import sys, numba\n"
        "from flock3d import Flock, Params, bench\n"
        "from flock3d.cli import main\n"
        "def profile(after):\n"
        "    Flock(Params(count=30, fov=123.0), seed=0).step(1)\n"
        "    row = bench._measure_in_subprocess(200, 1, 0.0)\n"
        "    print('threads', numba.get_num_threads(), row['threads'])\n"
        "bench.profile = profile\n"
        "sys.exit(main(['bench', '--profile', '--threads', '1']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-3:] == ["threads", "1", "1"]


def test_runs_closing_summary_measures_by_the_minimum_image_in_a_periodic_box():
    # Vicsek's box wraps: a particle by a face has its nearest neighbour across it, which the
    # summary ignored (it measured the open distances). No step: the placed flock has particles by
    # the faces already, and a periodic step would compile a driver of its own.
    out = flock3d("run", "vicsek/ordered", "--steps", "0")
    assert out.returncode == 0, out.stderr
    flock = Flock.from_scene(resolve_scene("vicsek/ordered"))
    nn = metrics.nearest_neighbour_stats(flock.positions, metrics.periodic_box(flock.params))
    assert f"nearest-neighbour distance {nn.mean:.3f} (min {nn.min:.3f})" in out.stdout
    assert round(nn.mean, 3) < round(metrics.nearest_neighbour_stats(flock.positions).mean, 3)


@pytest.mark.parametrize("length", [("--steps", "0"), ("--seconds", "0")])
def test_a_run_of_no_steps_or_no_seconds_records_the_start_alone(tmp_path, length):
    # --steps 0 ran and --seconds 0 was refused ("must be a finite number > 0").
    out = flock3d("run", "default", "--set", "flock.count=20", *length, "--out", tmp_path / "start.h5")
    assert out.returncode == 0, out.stderr
    assert "Default: 20 boids, 0 steps" in out.stdout and "wrote 1 frame to" in out.stdout
    flock = Flock.from_scene(resolve_scene("default", overrides=["flock.count=20"]))
    with Trajectory(tmp_path / "start.h5") as traj:
        assert traj.n_frames == 1 and np.array_equal(traj.frame(0).positions, flock.positions)


@pytest.mark.parametrize(
    "count, header, final",
    [
        (0, "Default: 0 boids, 0 steps", "final: no boids to measure"),
        (
            1,
            "Default: 1 boid, 0 steps",
            "final: polarization 1.000, milling 0.000, no nearest neighbour (one boid)",
        ),
    ],
)
def test_runs_closing_summary_says_what_a_flock_too_small_has_no_measure_of(count, header, final):
    # It printed "nan" for every measure of no boids, and for one boid's nearest neighbour.
    out = flock3d("run", "default", "--set", f"flock.count={count}", "--steps", "0")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(header) and lines[-1] == final
    assert "nan" not in out.stdout
