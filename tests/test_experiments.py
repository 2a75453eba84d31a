"""The experiments on small instances: each runs from the command line, prints its figure,
and writes a table and a plot that read back with the numbers it printed."""

import csv
import subprocess
import sys

import imageio.v2 as imageio
import numpy as np
import pytest
from helpers import assert_clean_failure, flock3d

from flock3d import experiments


def read_csv(path):
    rows = list(csv.DictReader(path.open()))
    return {key: [r[key] for r in rows] for key in rows[0]}


def test_experiments_are_reachable_from_flock3d_alone_and_loaded_only_when_asked_for():
    # The README's `flock3d.experiments.run_experiment(NAME)` after a plain `import flock3d`.
    code = (
        "import sys, flock3d\n"
        "assert 'flock3d.experiments' not in sys.modules\n"
        "print(flock3d.experiments.run_experiment.__name__, *sorted(flock3d.experiments.EXPERIMENTS))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["run_experiment", *sorted(experiments.EXPERIMENTS)]


def test_couzin_memory_quick_shows_the_hysteresis(tmp_path):
    out = flock3d("experiment", "couzin-memory", "--out", tmp_path / "memory", "--quick")
    assert out.returncode == 0, out.stderr
    table = read_csv(tmp_path / "memory" / "couzin-memory.csv")
    assert imageio.imread(tmp_path / "memory" / "couzin-memory.png").shape[0] > 300
    branch = np.array(table["branch"])
    width = np.array(table["delta_r_o"], float)
    pol, mill = np.array(table["polarization"], float), np.array(table["milling"], float)
    assert sorted(set(branch)) == ["down", "up"] and sorted(set(table["repeat"])) == ["0", "1"]

    def mean(which, values, at):
        return values[(branch == which) & (width == at)].mean()

    # The paper's memory: at Delta r_o = 2 a mill on the way up, a parallel group on the way down;
    # both branches agree at the ends (a swarm at 0, parallel at 6).
    assert mean("up", mill, 2.0) > 0.6 and mean("up", pol, 2.0) < 0.4
    assert mean("down", pol, 2.0) > 0.8 and mean("down", mill, 2.0) < 0.2
    assert mean("up", pol, 6.0) > 0.9 and mean("down", pol, 6.0) > 0.9
    assert mean("up", pol, 0.0) < 0.4 and mean("down", mill, 0.0) < 0.4
    # The printed figure holds the same means.
    row = next(line for line in out.stdout.splitlines() if line.split()[:1] == ["2.0"])
    assert [float(x) for x in row.split()[1:]] == pytest.approx(
        [mean("up", pol, 2.0), mean("up", mill, 2.0), mean("down", pol, 2.0), mean("down", mill, 2.0)],
        abs=0.006,
    )
    assert "Couzin et al. 2002" in out.stdout


def test_cavagna_quick_correlation_length_grows_with_the_flock(tmp_path):
    result = experiments.run_experiment("cavagna-correlations", quick=True, progress=False)
    c = result.columns
    assert set(c["n"]) == {300, 1000}
    assert np.all(c["polarization"] > 0.95)  # polarized flocks, as the experiment needs
    small, large = (c["n"] == 300), (c["n"] == 1000)
    # xi grows with L, and is a sizeable fraction of it (scale-free), for both kinds of fluctuation.
    assert c["size"][large].mean() > 1.3 * c["size"][small].mean()
    assert c["xi_velocity"][large].mean() > 1.3 * c["xi_velocity"][small].mean()
    assert np.all(c["xi_velocity"] / c["size"] > 0.15)
    # The table is what velocity_correlation says of the flock: xi below L, C crossing zero.
    assert np.all(c["xi_velocity"] < c["size"]) and np.all(c["boids"] <= c["n"])
    path = tmp_path / "x.png"
    result.plot(path)
    assert imageio.imread(path).shape[0] > 300
    assert any("0.35 L" in line for line in result.lines)


def test_experiment_command_bad_input(tmp_path):
    assert_clean_failure(flock3d("experiment", "vicsek-nope", "--out", tmp_path), "invalid choice")
    (tmp_path / "file").write_text("x")
    assert_clean_failure(flock3d("experiment", "couzin-memory", "--out", tmp_path / "file", "--quick"),
                         "is not a folder")  # fmt: skip
    assert_clean_failure(flock3d("experiment", "couzin-memory", "--out", tmp_path / "no" / "such"),
                         "does not exist")  # fmt: skip
    with pytest.raises(KeyError, match="no experiment is named 'vicsek-nope'; choose one of .*couzin-memory"):
        experiments.run_experiment("vicsek-nope")  # the API names the choices as the command does


def test_an_experiment_registers_itself():
    @experiments.experiment("test-only", "a title", "a paper")
    def run(quick, seed, progress):
        return experiments.Result({"x": np.arange(3)}, [f"quick={quick} seed={seed}"], lambda path: None)

    try:
        result = experiments.run_experiment("test-only", quick=True, seed=4)
        assert result.lines == ["quick=True seed=4"] and result.seconds >= 0
        assert experiments.EXPERIMENTS["test-only"].reference == "a paper"
    finally:
        del experiments.EXPERIMENTS["test-only"]


@pytest.mark.slow
def test_vicsek_quick_order_parameter_falls_with_the_noise_and_sharpens_with_n(tmp_path):
    out = flock3d("experiment", "vicsek-fig2a", "--out", tmp_path, "--quick")
    assert out.returncode == 0, out.stderr
    table = read_csv(tmp_path / "vicsek-fig2a.csv")
    assert imageio.imread(tmp_path / "vicsek-fig2a.png").shape[0] > 300
    n, eta, v_a = (np.array(table[k], float) for k in ("n", "eta", "v_a"))
    update = np.array(table["position_update"])
    assert set(n) == {40, 400} and np.all(np.array(table["side"], float) ** 2 * 4 == pytest.approx(n))
    assert sorted(set(update)) == ["new", "old"] and np.sum(update == "new") == np.sum(update == "old")

    def mean(size, at, moved="new"):
        return v_a[(n == size) & (eta == at) & (update == moved)].mean()

    for moved in ("new", "old"):
        for size in (40, 400):  # ordered with little noise, falling as it grows
            assert mean(size, 0.5, moved) > 0.95
            assert mean(size, 0.5, moved) > mean(size, 2.5, moved) + 0.1 > mean(size, 4.5, moved) + 0.2
        # Sharper with more particles: at large noise the larger flock is the more disordered, near
        # its random value sqrt(pi / 4N) ~ 0.04, the small one kept up by its finite size.
        assert mean(400, 4.5, moved) < 0.6 * mean(40, 4.5, moved)
    row = next(line for line in out.stdout.splitlines() if line.split()[:1] == ["4.50"])
    assert [float(x) for x in row.split()[1:]] == pytest.approx(
        [mean(40, 4.5), mean(400, 4.5), mean(40, 4.5, "old"), mean(400, 4.5, "old")], abs=6e-4
    )
    shift = next(line for line in out.stdout.splitlines() if line.startswith("old - new, N = 400"))
    assert f"{mean(400, 2.5, 'old') - mean(400, 2.5):+.3f} (eta 2.5)" in shift
    assert "Vicsek et al. 1995" in out.stdout
    # The figure's bars are the repeats' standard deviation, and the output says how many repeats.
    assert "repeats (bars in the figure: their standard deviation): N = 40: 3, N = 400: 1" in out.stdout


@pytest.mark.slow
def test_ballerini_quick_range_stays_at_k_when_topological_and_grows_with_density_when_metric(tmp_path):
    out = flock3d("experiment", "ballerini-range", "--out", tmp_path, "--quick")
    assert out.returncode == 0, out.stderr
    table = read_csv(tmp_path / "ballerini-range.csv")
    assert imageio.imread(tmp_path / "ballerini-range.png").shape[0] > 300
    kind = np.array(table["interaction"])
    density, n_c, r1, gamma_1, pol = (
        np.array(table[k], float) for k in ("density", "n_c", "r1", "gamma_1", "polarization")
    )
    assert sorted(set(kind)) == ["metric", "topological"] and set(density) == {1.0, 0.125}
    assert "gamma_40" in table and np.all(pol > 0.75)  # flying one way, as gamma(n) needs
    top, met = kind == "topological", kind == "metric"
    dense, sparse = density == 1.0, density == 0.125
    # Eight times the density, half the distance to the nearest neighbour (0.65 and 1.4).
    assert np.all(r1[dense] < 0.6 * r1[sparse])
    # Topological (k = 6): the first neighbours are missing along the motion (gamma above 1/3),
    # and the anisotropy ends just past the 6th neighbour at either density.
    assert np.all(gamma_1[top] > 0.6)
    assert np.all((6.0 < n_c[top]) & (n_c[top] < 9.5))
    # Metric (r = 2): n_c follows the boids within r, 4.2 at density 1/8 and 33.5 at 1.
    assert 3.0 < n_c[met & sparse][0] < 7.0
    assert n_c[met & dense][0] > 15.0
    row = next(line for line in out.stdout.splitlines() if line.split()[:1] == ["1.000"])
    assert float(row.split()[4]) == pytest.approx(n_c[top & dense][0], abs=0.006)
    assert float(row.split()[5]) == pytest.approx(n_c[met & dense][0], abs=0.006)
    assert "Ballerini et al. 2008" in out.stdout


@pytest.mark.slow
def test_turning_waves_quick_the_ism_carries_the_turn_at_sqrt_j_and_alignment_lets_it_fade(tmp_path):
    out = flock3d("experiment", "turning-waves", "--out", tmp_path, "--quick")
    assert out.returncode == 0, out.stderr
    table = read_csv(tmp_path / "turning-waves.csv")
    assert imageio.imread(tmp_path / "turning-waves.png").shape[0] > 300
    row = {
        (model, network): k
        for k, (model, network) in enumerate(zip(table["model"], table["network"], strict=True))
    }
    models = {"ISM, J = 2", "ISM, J = 8", "Vicsek", "boids alignment"}
    assert set(row) == {(m, network) for m in models for network in ("moving", "frozen")}

    def value(model, network, key):
        return float(table[key][row[model, network]])

    for network in ("moving", "frozen"):
        # The inertial spin model at J = 8: every bird's paired response reaches 45 degrees, at a time
        # linear in its distance from the leaders (a wave: R^2 above 0.9, arrival ~ distance^1).
        ism = ("ISM, J = 8", network)
        assert value(*ism, "arrived") > 0.95 and value(*ism, "far_arrived") > 0.95
        assert value(*ism, "r2") > 0.9 and 0.8 < value(*ism, "exponent") < 1.2
        # The wave speed grows with J: on the frozen network, where it is the propagation alone, as
        # sqrt(J) (the exponent of c against J between J = 2 and 8); the moving flock adds its motion.
        exponent = np.log(value(*ism, "speed") / value("ISM, J = 2", network, "speed")) / np.log(4.0)
        assert 0.4 < exponent < 0.6 if network == "frozen" else 0.3 < exponent < 0.6
        # The largest group's polarization, in the stationary state: higher at larger J, 1 - P about
        # as 1 / J.
        disorder = [1.0 - value(f"ISM, J = {j}", network, "polarization") for j in (2, 8)]
        assert 2.5 < disorder[0] / disorder[1] < 5.0
        # The affine spin-wave speed sqrt(K / chi) overestimates the measured one.
        assert value(*ism, "speed") < 0.9 * value(*ism, "affine_speed")
        # Alignment alone: the turn reaches the birds near the leaders and fades before the far ones.
        for model in ("Vicsek", "boids alignment"):
            assert value(model, network, "arrived") < 0.6 and value(model, network, "far_arrived") < 0.05
            assert value(model, network, "rate_ratio") < 0.6
    # The flock moving with its leaders adds to the speed the frozen network carries the turn at.
    assert value("ISM, J = 8", "frozen", "speed") < value("ISM, J = 8", "moving", "speed")
    # The printed fit is the table's.
    fit = next(line for line in out.stdout.splitlines() if line.startswith("flock3d ISM, frozen"))
    speeds = [value(f"ISM, J = {j}", "frozen", "speed") for j in (2, 8)]
    assert f"c ~ J^{np.log(speeds[1] / speeds[0]) / np.log(4.0):.2f}" in fit
    line = next(
        line for line in out.stdout.splitlines() if line.split()[:5] == ["ISM,", "J", "=", "8", "moving"]
    )
    assert float(line.split()[9]) == pytest.approx(value("ISM, J = 8", "moving", "r2"), abs=0.006)
    assert "Attanasi et al. 2014" in out.stdout and "J^0.5" in out.stdout


@pytest.mark.slow
def test_flock_shape_quick_the_altitude_spring_makes_the_thin_vertical_axis(tmp_path):
    out = flock3d("experiment", "flock-shape", "--out", tmp_path, "--quick")
    assert out.returncode == 0, out.stderr
    table = read_csv(tmp_path / "flock-shape.csv")
    assert imageio.imread(tmp_path / "flock-shape.png").shape[0] > 300
    kind, flight, n = np.array(table["interaction"]), np.array(table["flight"]), np.array(table["n"], int)
    spring = np.array(table["roost_altitude"], float) > 0  # the altitude spring on
    thickness, width, length = (np.array(table[k], float) for k in ("thickness", "width", "length"))
    vertical = np.array(table["thin_from_vertical"], float)
    assert sorted(set(kind)) == ["metric", "topological"] and set(n) == {100, 300}
    assert np.all((thickness <= width) & (width <= length))  # the principal axes, thinnest first
    # With the roost's altitude spring, in aerodynamic flight, every flock is thin along gravity:
    # thickness well below the width, its axis near the vertical.
    for k in ("metric", "topological"):
        for size in (100, 300):
            at = (kind == k) & (n == size) & (flight == "aerodynamic") & spring
            assert np.mean(thickness[at] / width[at]) < 0.75
            assert np.mean(vertical[at]) < 25.0 and np.mean(vertical[at] < 30.0) > 0.8
    # The ablation: with the spring the kinematic flock is thin vertically too; without it the
    # thinnest axis lies horizontal in either flight.
    ablation = (kind == "topological") & (n == 300)
    assert np.mean(vertical[ablation & (flight == "kinematic") & spring]) < 25.0
    for f in ("aerodynamic", "kinematic"):
        assert np.mean(vertical[ablation & (flight == f) & ~spring]) > 60.0
    assert "the roost's altitude spring makes the thin vertical axis" in out.stdout
    row = next(
        line for line in out.stdout.splitlines() if line.split()[:4] == ["metric", "aerodynamic", "on", "300"]
    )
    at = (kind == "metric") & (n == 300)
    assert float(row.split()[6]) == pytest.approx(np.mean(width[at] / thickness[at]), abs=0.006)
    assert "Hemelrijk and Hildenbrandt 2011" in out.stdout


@pytest.mark.slow
@pytest.mark.gui
def test_agitation_waves_quick_bands_outrun_the_flock_and_fade_when_the_bank_decays_not_the_copying(tmp_path):
    # In a process of its own: it renders offscreen (EGL), and vispy binds one backend a process;
    # the window tests use Qt in the test processes, and one after it in this process could not.
    out = flock3d("experiment", "agitation-waves", "--out", tmp_path, "--quick", process=True)
    if out.returncode != 0 and "needs EGL" in out.stderr:
        pytest.skip("no EGL/OpenGL for offscreen rendering here")
    assert out.returncode == 0, out.stderr
    table = read_csv(tmp_path / "agitation-waves.csv")
    assert imageio.imread(tmp_path / "agitation-waves.png").shape[0] > 300
    assert (tmp_path / "agitation-waves.mp4").stat().st_size > 1000
    row = {name: k for k, name in enumerate(table["run"])}
    assert set(row) == {"copied as it was", "bank decays", "copying decays", "copying decays, 5 looks"}

    def value(run, key):
        return float(table[key][row[run]])

    # Seen from below, the bands travel away from the predator faster than the birds fly.
    assert value("copied as it was", "band_speed") > 2.0 * value("copied as it was", "flock_speed")
    assert value("copied as it was", "reach") > 0.8 and value("copied as it was", "damping") > 0.7
    # The 2019 control. The bank's decay weakens the pulse as it travels while every bird still
    # escapes (measured: x0.28 and x0.37 per 10 units at seeds 0 and 1, against x0.98 and x0.87).
    assert value("bank decays", "damping") < value("copied as it was", "damping") - 0.3
    assert value("bank decays", "escaped") == 1.0 and value("copying decays", "escaped") < 0.9
    # The copying's decay with one chance to copy leaves more and more birds out: the band thins
    # as it goes, and fades too (x0.17, x0.11). With a chance every reaction time while a neighbour
    # escapes, more birds copy and the pulse keeps its strength as it goes (x0.63, x0.60), as in the
    # paper's model, until too few copy.
    assert value("copying decays, 5 looks", "escaped") > value("copying decays", "escaped") + 0.1
    assert value("copying decays, 5 looks", "damping") > value("bank decays", "damping") + 0.15
    assert value("copying decays, 5 looks", "damping") > value("copying decays", "damping") + 0.2
    assert value("copying decays, 5 looks", "reach") < value("copied as it was", "reach")
    assert "it fades less than under the bank's decay, as in the paper's model" in out.stdout  # 5 looks
    assert "Hemelrijk" in out.stdout
