import math
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from flock3d import Flock, Params, metrics
from flock3d.core import neighbors
from flock3d.metrics.anisotropy import hull_depth
from flock3d.metrics.periodic import nearest_k


def brute_force_nn(p):
    d = np.linalg.norm(p[:, None] - p[None], axis=2)
    np.fill_diagonal(d, np.inf)
    return d.min(axis=1)


def brute_force_groups(p, r):
    n = len(p)
    adj = np.linalg.norm(p[:, None] - p[None], axis=2) <= r
    labels, count = -np.ones(n, int), 0
    for s in range(n):
        if labels[s] >= 0:
            continue
        stack = [s]
        labels[s] = count
        while stack:
            i = stack.pop()
            for j in np.flatnonzero(adj[i] & (labels < 0)):
                labels[j] = count
                stack.append(j)
        count += 1
    return count, labels


def test_polarization_closed_forms():
    assert metrics.polarization(np.tile([0.0, 3.0, 0.0], (10, 1))) == pytest.approx(1.0)
    assert metrics.polarization([[1.0, 0, 0], [-2.0, 0, 0]]) == pytest.approx(0.0)
    # Three boids at 120 degrees in a plane cancel; add a fourth along +z.
    v = [[1, 0, 0], [-0.5, math.sqrt(3) / 2, 0], [-0.5, -math.sqrt(3) / 2, 0], [0, 0, 5]]
    assert metrics.polarization(v) == pytest.approx(0.25)
    assert math.isnan(metrics.polarization(np.zeros((0, 3))))


def test_random_headings_are_not_polarized():
    flock = Flock(Params(count=10_000), seed=0)
    assert metrics.polarization(flock.velocities) < 0.03


def test_milling_of_a_ring_is_one_and_of_a_parallel_flock_zero():
    a = np.linspace(0, 2 * np.pi, 50, endpoint=False)
    p = np.c_[np.cos(a), np.sin(a), np.zeros_like(a)] * 7 + [3, 4, 5]
    v = np.c_[-np.sin(a), np.cos(a), np.zeros_like(a)] * 2
    assert metrics.milling(p, v) == pytest.approx(1.0)
    assert metrics.polarization(v) == pytest.approx(0.0, abs=1e-12)
    assert metrics.milling(p, np.tile([0, 0, 1.0], (50, 1))) == pytest.approx(0.0, abs=1e-12)


def test_nearest_neighbour_distances_match_brute_force():
    rng = np.random.default_rng(1)
    for p in [rng.normal(size=(500, 3)) * 10, rng.uniform(0, 1, (300, 3)) ** 6, np.zeros((3, 3))]:
        np.testing.assert_allclose(metrics.nearest_neighbour_distances(p), brute_force_nn(p), rtol=1e-12)
    assert metrics.nearest_neighbour_distances(np.zeros((1, 3)))[0] == math.inf
    stats = metrics.nearest_neighbour_stats([[0, 0, 0], [0, 0, 2], [0, 0, 5]])
    assert (stats.min, stats.max, stats.mean) == pytest.approx((2.0, 3.0, 7 / 3))


def test_the_nearest_searches_on_every_core_find_what_they_find_on_one(monkeypatch):
    # Large flocks search in parallel (PARALLEL_NEAREST), smaller ones on one core: the same
    # distances and neighbours, to the bit (a NaN and an infinite boid are nobody's nearest).
    rng = np.random.default_rng(2)
    p = rng.normal(size=(700, 3)) * 10
    p[5], p[9, 1] = np.nan, np.inf
    finite = np.delete(p, [5, 9], axis=0)
    alone, k_alone = metrics.nearest_neighbour_distances(p), neighbors.nearest_k(finite, 4)
    monkeypatch.setattr(neighbors, "PARALLEL_NEAREST", 100)
    assert neighbors.nearest_k_search(700) is not neighbors.nearest_k_search(99)
    np.testing.assert_array_equal(metrics.nearest_neighbour_distances(p), alone)
    for every, one in zip(neighbors.nearest_k(finite, 4), k_alone, strict=True):
        np.testing.assert_array_equal(every, one)
    assert alone[5] == math.inf and np.isfinite(np.delete(alone, [5, 9])).all()
    np.testing.assert_array_equal(np.delete(alone, [5, 9]), brute_force_nn(finite))
    np.testing.assert_array_equal(k_alone[1][:, 0], brute_force_nn(finite))
    idx, dist = neighbors.nearest_k(p, 4)
    assert (idx[5] == -1).all() and (dist[5] == math.inf).all() and not np.isin(idx, [5, 9]).any()


def test_groups_match_brute_force():
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 30, (400, 3))
    for r in [0.5, 2.0, 4.0, 10.0]:
        count, labels = metrics.groups(p, r)
        bf_count, bf_labels = brute_force_groups(p, r)
        assert count == bf_count
        np.testing.assert_array_equal(labels, bf_labels)  # both number groups by lowest member
    assert metrics.groups(p, math.inf)[0] == 1
    assert metrics.groups(np.zeros((0, 3)), 1.0)[0] == 0


def test_mean_pair_distance():
    assert metrics.mean_pair_distance([[0, 0, 0], [3, 4, 0]]) == pytest.approx(5.0)
    rng = np.random.default_rng(0)
    p = rng.normal(size=(3000, 3))
    exact = metrics.mean_pair_distance(p)
    sampled = metrics.mean_pair_distance(p, max_pairs=200_000)
    assert sampled == pytest.approx(exact, rel=0.01)
    assert sampled == metrics.mean_pair_distance(p, max_pairs=200_000)  # seeded


def test_summary_keys():
    flock = Flock(Params(count=50), seed=0)
    s = metrics.summary(flock.positions, flock.velocities, flock.params.view_distance)
    assert list(s) == list(metrics.COLUMNS)
    assert s["groups"] >= 1 and 0 <= s["group_polarization"] <= 1


# -- periodic boxes, k nearest, the table ------------------------------------------------


def minimum_image_distances(p, box):
    d = p[:, None] - p[None]
    for a in range(3):
        if box is not None and box[a] > 0:
            d[..., a] -= box[a] * np.rint(d[..., a] / box[a])
    return np.linalg.norm(d, axis=2)


def brute_force_groups_from(dist, r):
    n = len(dist)
    labels, count = -np.ones(n, int), 0
    for s in range(n):
        if labels[s] >= 0:
            continue
        stack, labels[s] = [s], count
        while stack:
            i = stack.pop()
            for j in np.flatnonzero((dist[i] <= r) & (labels < 0)):
                labels[j] = count
                stack.append(j)
        count += 1
    return count, labels


def test_k_nearest_match_brute_force_with_ties_by_index():
    rng = np.random.default_rng(3)
    for p in [rng.normal(size=(400, 3)) * 10, np.round(rng.uniform(0, 3, (200, 3))), np.zeros((4, 3))]:
        k = 7
        idx, dist = neighbors.nearest_k(p, k)
        d = minimum_image_distances(p, None)
        np.fill_diagonal(d, np.inf)
        kk = min(k, len(p) - 1)
        expected = np.array([np.lexsort((np.arange(len(p)), row))[:kk] for row in d])
        np.testing.assert_array_equal(idx[:, :kk], expected)
        np.testing.assert_allclose(dist[:, :kk], np.take_along_axis(d, expected, 1), rtol=1e-12)
        assert np.all(idx[:, kk:] == -1) and np.all(np.isinf(dist[:, kk:]))


def test_k_nearest_through_the_faces_of_a_periodic_box():
    rng = np.random.default_rng(12)
    box = np.array([5.0, 7.0, 6.0])
    p = rng.uniform(0, 1, (150, 3)) * box
    idx, dist = nearest_k(p, 10, box)
    d = minimum_image_distances(p, box)
    np.fill_diagonal(d, np.inf)
    expected = np.array([np.lexsort((np.arange(len(p)), row))[:10] for row in d])
    np.testing.assert_array_equal(idx, expected)
    np.testing.assert_allclose(dist, np.take_along_axis(d, expected, 1), rtol=1e-12)


@pytest.mark.parametrize("box", [(10.0, 10.0, 10.0), (6.0, 8.0, 0.0)])
def test_periodic_spacing_and_groups_use_the_minimum_image(box):
    rng = np.random.default_rng(4)
    box = np.array(box)
    p = rng.uniform(0, 1, (300, 3)) * np.where(box > 0, box, 1.0) - 0.5 * box
    d = minimum_image_distances(p, box)
    np.fill_diagonal(d, np.inf)
    np.testing.assert_allclose(metrics.nearest_neighbour_distances(p, box), d.min(axis=1), rtol=1e-12)
    for r in [0.6, 1.0, 2.5]:
        count, labels = metrics.groups(p, r, box)
        bf_count, bf_labels = brute_force_groups_from(d, r)
        assert count == bf_count
        np.testing.assert_array_equal(labels, bf_labels)
    np.fill_diagonal(d, 0.0)
    assert metrics.mean_pair_distance(p, period=box) == pytest.approx(d[np.triu_indices(len(p), 1)].mean())
    # Through the faces the groups are fewer than across the box.
    assert all(metrics.groups(p, r, box)[0] <= metrics.groups(p, r)[0] for r in [0.4, 0.6, 1.0])
    assert any(metrics.groups(p, r, box)[0] < metrics.groups(p, r)[0] for r in [0.4, 0.6, 1.0])


def test_periodic_box_of_params():
    assert metrics.periodic_box(Params()) is None
    np.testing.assert_array_equal(
        metrics.periodic_box(Params(arena_shape="periodic", arena_radius=7.0, dimensions=2)), [14, 14, 0]
    )


def reference_row(p, v, r, box=None):
    """Every column of the table from plain numpy, by brute force."""
    d = minimum_image_distances(p, box)
    np.fill_diagonal(d, np.inf)
    n = len(p)
    count, labels = brute_force_groups_from(d, r)
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    local = sum(np.linalg.norm(u[labels == g].sum(axis=0)) for g in range(count)) / n
    c = p - p.mean(axis=0)
    values = np.linalg.eigvalsh(c.T @ c / n)
    np.fill_diagonal(d, 0.0)
    row = {
        "polarization": np.linalg.norm(u.sum(axis=0)) / n,
        "milling": np.linalg.norm(np.cross(c / np.linalg.norm(c, axis=1)[:, None], u).sum(axis=0)) / n,
        "group_polarization": local,
        "mean_distance": d[np.triu_indices(n, 1)].mean(),
        "nn_mean": (d + np.diag([np.inf] * n)).min(axis=1).mean(),
        "nn_min": (d + np.diag([np.inf] * n)).min(),
        "groups": count,
        "size": d.max() if box is None else math.nan,
    }
    for name, value in zip(["thickness", "width", "length"], 2 * np.sqrt(5 * values), strict=True):
        row[name] = value if box is None else math.nan
    return row


class Frame:
    def __init__(self, p, v, step):
        self.positions, self.velocities, self.step_count, self.time = p, v, step, step * 0.5


@pytest.mark.slow
@pytest.mark.parametrize("n,box", [(60, None), (60, (12.0, 12.0, 12.0)), (2500, None)])
def test_table_equals_brute_force_frame_by_frame(n, box):
    # 60 boids go through the compiled pass over all pairs; 2,500 through the cell grid.
    rng = np.random.default_rng(n)
    frames = [
        Frame(rng.normal(size=(n, 3)) * 4, rng.normal(size=(n, 3)), 7 * k)
        for k in range(3 if n > 100 else 40)
    ]
    if box is not None:
        for f in frames:
            f.positions = np.mod(f.positions, 12.0) - 6.0
    columns = metrics.table(iter(frames), 1.5, box)
    assert list(columns) == ["step", "time", *metrics.COLUMNS]
    np.testing.assert_array_equal(columns["step"], [f.step_count for f in frames])
    for k in [0, 1, len(frames) - 1]:
        f = frames[k]
        expected = reference_row(f.positions, f.velocities, 1.5, None if box is None else np.array(box))
        for name, value in expected.items():
            if name == "mean_distance" and n == 2500:
                assert columns[name][k] == pytest.approx(value, rel=2e-3), name  # 2,000,000 sampled pairs
            else:
                np.testing.assert_allclose(columns[name][k], value, rtol=1e-10, err_msg=name)
        assert metrics.summary(f.positions, f.velocities, 1.5, box) == {
            name: pytest.approx(columns[name][k], rel=1e-12, nan_ok=True) for name in metrics.COLUMNS
        }


def test_a_frame_with_a_nan_measures_nan_and_the_others_are_unharmed():
    rng = np.random.default_rng(9)
    frames = [Frame(rng.normal(size=(30, 3)), rng.normal(size=(30, 3)), k) for k in range(4)]
    frames[2].positions[5, 1] = np.nan
    frames[3].velocities[0, 0] = np.inf
    with pytest.warns(metrics.MeasurementWarning, match=r"^2 of 4 frames hold NaN, .* at step 2\)"):
        columns = metrics.table(frames, 1.0)
    for name in metrics.COLUMNS:
        assert np.all(np.isnan(columns[name][2:])), name
        assert np.all(np.isfinite(columns[name][:2])), name
    big = Frame(rng.normal(size=(2500, 3)), rng.normal(size=(2500, 3)), 0)
    big.positions[7] = np.nan
    with pytest.warns(metrics.MeasurementWarning, match="1 of 1 frames"):
        row = metrics.table([big], 1.0)  # the cell-grid path
    assert all(math.isnan(row[name][0]) for name in metrics.COLUMNS)


@pytest.mark.parametrize("n", [30, 2500])  # the pass over all pairs, and the cell grid
def test_values_too_large_to_square_measure_nan_without_overflowing(n):
    # Squared distances overflow float64 beyond 1e154: such a frame is not measurable.
    rng = np.random.default_rng(4)
    good = Frame(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), 0)
    huge = [Frame(good.positions.copy(), good.velocities.copy(), k) for k in (1, 2, 3)]
    huge[0].positions[:] = 1e308  # every coordinate
    huge[1].positions[0], huge[1].positions[1] = 1e300, -1e300  # the flock spread over 2e300
    huge[2].velocities[3] = 1e200
    edge = Frame(good.positions * 1e149, good.velocities, 4)  # within MAX_MEASURED: measured
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        with pytest.warns(metrics.MeasurementWarning) as caught:
            columns = metrics.table([good, *huge, edge], 1.0)
        assert len(caught) == 1
        assert str(caught[0].message) == (
            "3 of 5 frames hold NaN, infinite or huge (beyond 1e+150) positions or velocities "
            "(the first at step 1); their measurements are NaN"
        )
        for name in metrics.COLUMNS:
            assert np.all(np.isnan(columns[name][1:4])), name
        assert columns["polarization"][4] == pytest.approx(columns["polarization"][0], rel=1e-12)
        assert columns["size"][4] == pytest.approx(1e149 * columns["size"][0], rel=1e-12)
        for frame in huge[:2]:  # huge positions
            assert np.isnan(metrics.principal_axes(frame.positions).semi_axes).all()
            assert np.isnan(metrics.flock_size(frame.positions))
        for frame in huge:
            assert np.isnan(metrics.velocity_correlation(frame.positions, frame.velocities).xi_velocity)
            assert np.isnan(metrics.neighbour_anisotropy(frame.positions, frame.velocities, 3).gamma).all()


BAD_WHOLE_NUMBERS = [0, -3, 2.5, True, "4", None]


@pytest.mark.parametrize("value", [*BAD_WHOLE_NUMBERS, metrics.MAX_BINS + 1])
def test_bins_outside_their_range_are_a_value_error(value):
    p = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(
        ValueError, match=re.escape(f"bins must be a whole number from 1 to 10,000 (got {value!r})")
    ):
        metrics.velocity_correlation(p, p, bins=value)
    with pytest.raises(ValueError, match="^bins must be"):
        metrics.correlation_table([Frame(p, p, 0)], bins=value)


@pytest.mark.parametrize("value", [*BAD_WHOLE_NUMBERS, metrics.MAX_NEIGHBOURS + 1])
def test_neighbours_outside_their_range_are_a_value_error(value):
    p = np.random.default_rng(0).normal(size=(20, 3))
    message = f"neighbours must be a whole number from 1 to 1,000 (got {value!r})"
    with pytest.raises(ValueError, match=re.escape(message)):
        metrics.neighbour_anisotropy(p, p, value)
    with pytest.raises(ValueError, match=re.escape(message)):
        metrics.anisotropy_table([Frame(p, p, 0)], neighbours=value)


@pytest.mark.parametrize(
    ("value", "words"),
    [(0, "must be > 0"), (-1.0, "must be > 0"), (math.nan, "must be a number > 0"),
     (math.inf, "must be finite and > 0"), ("2", "must be a number > 0")],
)  # fmt: skip
def test_an_r_max_given_is_a_finite_distance(value, words):
    # 0 and NaN measured an all-NaN correlation, as if the flock could not be measured.
    p = np.random.default_rng(0).normal(size=(20, 3))
    message = f"r_max {words} (got {value!r})"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        metrics.velocity_correlation(p, p, r_max=value)


@pytest.mark.parametrize(
    ("value", "words"),
    [(-1.0, "must be >= 0"), (math.nan, "must be a number >= 0"), ("2", "must be a number >= 0")],
)
def test_a_link_distance_is_a_number_of_zero_or_more(value, words):
    # NaN linked every boid into one group (and gave the whole flock's polarization).
    p = np.random.default_rng(0).normal(size=(20, 3))
    message = f"distance {words} (got {value!r})"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        metrics.groups(p, value)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        metrics.group_polarization(p, p, value)
    assert metrics.groups(p, 0.0)[0] == 20 and metrics.groups(p, math.inf)[0] == 1


def test_positions_and_velocities_are_n_by_3_arrays_of_as_many_boids():
    # An (N, 2) array or one vector was reshaped into rows of other numbers and measured.
    p = np.random.default_rng(0).normal(size=(20, 3))
    for bad, shape in ((p[:, :2], "(20, 2)"), (p[0], "(3,)"), (p[None], "(1, 20, 3)")):
        with pytest.raises(
            ValueError, match=f"^velocities must be an [(]N, 3[)] array, got shape {re.escape(shape)}$"
        ):
            metrics.polarization(bad)
        with pytest.raises(
            ValueError, match=f"^positions must be an [(]N, 3[)] array, got shape {re.escape(shape)}$"
        ):
            metrics.flock_size(bad)
    message = "^positions and velocities must hold as many boids, got 5 and 20$"
    for measure in (
        metrics.milling,
        metrics.velocity_correlation,
        metrics.neighbour_anisotropy,
        metrics.summary,
    ):
        args = (p[:5], p) + ((1.0,) if measure is metrics.summary else ())
        with pytest.raises(ValueError, match=message):
            measure(*args)
    assert math.isnan(metrics.polarization(np.zeros((0, 3)))) and math.isnan(metrics.polarization([]))
    assert metrics.polarization([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]) == 1.0


@pytest.mark.parametrize("value", [0, -1, 1.5])
def test_max_pairs_below_one_is_a_value_error(value):
    p = np.random.default_rng(0).normal(size=(20, 3))
    message = re.escape(f"max_pairs must be a whole number >= 1 (got {value!r})")
    with pytest.raises(ValueError, match=message):
        metrics.velocity_correlation(p, p, max_pairs=value)
    with pytest.raises(ValueError, match=message):
        metrics.mean_pair_distance(p, max_pairs=value)


def test_bins_zero_raises_rather_than_crashing_the_interpreter():
    # bins=0 would write before the start of the bins' array in compiled code (a SIGSEGV): it is
    # refused before that code runs.
    code = (
        "import numpy as np\nfrom flock3d import metrics\n"
        "p = np.random.default_rng(0).normal(size=(50, 3))\n"
        "metrics.velocity_correlation(p, p, bins=0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, (out.returncode, out.stderr)  # an exception, not a signal
    assert out.stderr.strip().splitlines()[-1] == (
        "ValueError: bins must be a whole number from 1 to 10,000 (got 0)"
    )


@pytest.mark.slow
def test_empty_and_single_boid_frames():
    columns = metrics.table([Frame(np.zeros((0, 3)), np.zeros((0, 3)), 0)], 1.0)
    assert columns["groups"][0] == 0 and math.isnan(columns["polarization"][0])
    one = metrics.table([Frame(np.ones((1, 3)), np.ones((1, 3)), 0)], 1.0)
    assert one["polarization"][0] == pytest.approx(1.0) and one["groups"][0] == 1
    assert math.isnan(one["nn_mean"][0]) and one["size"][0] == 0.0


# -- correlations (Cavagna et al. 2010) ---------------------------------------------------


def direct_correlation(p, v, bins, r_max, box=None):
    """C(r) of the three kinds by a direct double loop over all ordered pairs i != j."""
    n = len(p)
    speed = np.linalg.norm(v, axis=1)
    e = v / speed[:, None]
    kinds = [v - v.mean(0), e - e.mean(0), (speed - speed.mean())[:, None]]
    sums = np.zeros((3, bins))
    count, rsum = np.zeros(bins), np.zeros(bins)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            d = p[j] - p[i]
            if box is not None:
                d = d - box * np.rint(d / np.where(box > 0, box, 1.0))
            r = math.sqrt(d @ d)
            if r > r_max * (1.0 + 1e-12):  # [0, r_max], the last bin closed (d @ d rounds its own way)
                continue
            b = min(int(r / (r_max / bins)), bins - 1)
            count[b] += 1
            rsum[b] += r
            for k, f in enumerate(kinds):
                sums[k, b] += f[i] @ f[j]
    c0 = [np.mean(np.sum(f * f, axis=1)) for f in kinds]
    with np.errstate(invalid="ignore"):
        return rsum / count, count / 2, [sums[k] / count / c0[k] for k in range(3)]


@pytest.mark.slow
@pytest.mark.parametrize("box", [None, np.array([9.0, 9.0, 9.0])])
def test_correlation_equals_a_direct_double_loop(box):
    rng = np.random.default_rng(11)
    p = rng.uniform(-4.5, 4.5, (120, 3))
    # Velocities with a smooth component, so that the curves have structure.
    v = np.c_[3 + 0.3 * p[:, 0], 0.5 * np.sin(p[:, 1]), rng.normal(0, 0.4, 120)]
    c = metrics.velocity_correlation(p, v, bins=12, period=box)
    r_max = 4.5 if box is not None else np.max(minimum_image_distances(p, None))
    assert c.r_max == pytest.approx(r_max) and c.centres == 120
    r, pairs, curves = direct_correlation(p, v, 12, r_max, box)
    np.testing.assert_array_equal(c.pairs, pairs)
    np.testing.assert_allclose(c.r, r, rtol=1e-12)
    for got, want in zip([c.velocity, c.orientation, c.speed], curves, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    for xi, want in zip([c.xi_velocity, c.xi_orientation, c.xi_speed], curves, strict=True):
        assert xi == pytest.approx(metrics.correlation_length(r, want))
        assert 0 < xi < r_max


def test_correlation_length_closed_forms():
    assert metrics.correlation_length([1.0, 2.0, 3.0], [0.5, -0.5, -1.0]) == pytest.approx(1.5)
    assert metrics.correlation_length([1.0, 2.0], [-1.0, 0.5]) == pytest.approx(0.5)  # from C(0) = 1
    assert metrics.correlation_length([1.0, np.nan, 3.0], [0.5, np.nan, -0.5]) == pytest.approx(2.0)
    assert math.isnan(metrics.correlation_length([1.0, 2.0], [0.9, 0.1]))


@pytest.mark.slow
def test_a_linear_velocity_field_has_a_scale_free_correlation_length():
    # Fluctuations u(x) proportional to x - <x> on a line of length L: for pairs r apart
    # <u_i u_j> is ((L - r)^2 / 12 - r^2 / 4) up to a factor, zero at r = L / (1 + sqrt 3)
    # whatever L; independent noise instead is correlated over one spacing only.
    rng = np.random.default_rng(0)
    for n in (300, 1200):
        x = np.linspace(0, n, n)
        p = np.c_[x, np.zeros(n), np.zeros(n)]
        v = np.c_[np.full(n, 5.0), 0.01 * (x - x.mean()), np.zeros(n)]
        c = metrics.velocity_correlation(p, v, bins=200)
        assert c.xi_velocity / c.size == pytest.approx(1 / (1 + math.sqrt(3)), rel=0.01)
        noisy = metrics.velocity_correlation(
            p, v * [1, 0, 0] + rng.normal(0, 1, (n, 3)) * [0, 1, 1], bins=200
        )
        assert noisy.xi_velocity < 2.5 * n / 200  # within the first bins: short-ranged


def test_removing_rotation_and_dilation_leaves_the_members_fluctuations():
    # A turning, contracting flock: its fluctuations are the rigid field w x r + k r,
    # correlated over the whole flock; each member adds independent noise.
    rng = np.random.default_rng(2)
    p = rng.uniform(-10, 10, (1500, 3))
    r = p - p.mean(axis=0)
    noise = rng.normal(0, 0.05, p.shape)
    v = [4.0, 0, 0] + np.cross([0.0, 0.05, 0.02], r) - 0.03 * r + noise
    whole = metrics.velocity_correlation(p, v, bins=40)
    members = metrics.velocity_correlation(p, v, bins=40, remove_modes=True)
    assert whole.xi_velocity > 0.2 * whole.size
    assert members.xi_velocity < 2 * whole.size / 40  # the noise's: within the first bins
    np.testing.assert_array_equal(members.speed, whole.speed)  # a scalar: untouched
    with pytest.raises(ValueError, match="periodic"):
        metrics.velocity_correlation(p, v, remove_modes=True, period=[30.0, 30.0, 30.0])


def test_sampled_correlation_estimates_the_exact_one():
    rng = np.random.default_rng(5)
    p = rng.uniform(0, 20, (3000, 3))
    v = np.c_[np.full(3000, 4.0), 0.05 * (p[:, 0] - 10), 0.05 * (p[:, 1] - 10)] + rng.normal(
        0, 0.1, (3000, 3)
    )
    exact = metrics.velocity_correlation(p, v, bins=20)
    sampled = metrics.velocity_correlation(p, v, bins=20, max_pairs=300 * 2999)
    assert exact.centres == 3000 and sampled.centres == 300
    # Up to 3/4 of L; beyond, the bins hold the few pairs between opposite corners.
    np.testing.assert_allclose(sampled.velocity[:15], exact.velocity[:15], atol=0.05)
    assert sampled.xi_velocity == pytest.approx(exact.xi_velocity, rel=0.03)
    assert sampled.r_max == exact.r_max == pytest.approx(metrics.flock_size(p))


def test_correlation_of_degenerate_flocks_is_nan():
    assert math.isnan(metrics.velocity_correlation(np.zeros((1, 3)), np.ones((1, 3))).xi_velocity)
    same_speed = metrics.velocity_correlation(
        np.random.default_rng(0).normal(size=(50, 3)), np.eye(3)[np.arange(50) % 3]
    )
    assert np.all(np.isnan(same_speed.speed)) and math.isnan(same_speed.xi_speed)
    assert np.isfinite(same_speed.xi_orientation)
    # A constant-speed model's speeds differ by rounding alone (1e-16 of them): no fluctuation
    # either, where correlating the rounding drew a curve and a length out of noise.
    rng = np.random.default_rng(1)
    directions = rng.normal(size=(300, 3))
    rounded = 4.0 * directions / np.linalg.norm(directions, axis=1, keepdims=True)
    assert np.ptp(np.linalg.norm(rounded, axis=1)) > 0.0
    constant = metrics.velocity_correlation(rng.normal(size=(300, 3)), rounded)
    assert np.all(np.isnan(constant.speed)) and math.isnan(constant.xi_speed)
    assert np.isfinite(constant.xi_velocity) and np.isfinite(constant.xi_orientation)
    # A real spread, however small, still counts.
    slower = rounded * (1.0 + 1e-9 * rng.random((300, 1)))
    spread = metrics.velocity_correlation(rng.normal(size=(300, 3)), slower)
    assert np.all(np.isfinite(spread.speed[spread.pairs > 0]))


def test_flock_size_is_the_largest_pair_distance():
    rng = np.random.default_rng(8)
    shell = rng.normal(size=(400, 3))
    shell /= np.linalg.norm(shell, axis=1, keepdims=True)
    for p in [rng.normal(size=(500, 3)), rng.uniform(0, 1, (400, 3)) * [50, 1, 1], shell, np.ones((3, 3))]:
        assert metrics.flock_size(p) == pytest.approx(minimum_image_distances(p, None).max(), rel=1e-12)
    assert math.isnan(metrics.flock_size(np.zeros((0, 3))))


# -- shape and anisotropy (Ballerini et al. 2008) -----------------------------------------


def rotation(seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    return q


def uniform_ellipsoid(n, semi_axes, seed):
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    ball = d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(0, 1, (n, 1)) ** (1 / 3)
    return ball * semi_axes


@pytest.mark.slow
def test_principal_axes_of_an_ellipsoid_cloud():
    semi = np.array([1.0, 2.8, 5.6])  # thickness : width : length
    rot = rotation(1)
    p = uniform_ellipsoid(200_000, semi, 2) @ rot.T + [10, -3, 7]
    shape = metrics.principal_axes(p)
    np.testing.assert_allclose(shape.semi_axes, semi, rtol=0.01)
    np.testing.assert_allclose(shape.extents, 2 * semi, rtol=0.01)
    np.testing.assert_allclose(np.abs(np.sum(shape.axes * rot.T, axis=1)), 1.0, atol=1e-3)
    np.testing.assert_allclose(shape.centroid, [10, -3, 7], atol=0.02)
    row = metrics.summary(p[:2000], np.ones((2000, 3)), 1.0)
    assert row["thickness"] < row["width"] < row["length"]


def clusters(directions, weights, n, seed):
    """Pairs of boids far apart from each other, each pair's offset one of ``directions``."""
    rng = np.random.default_rng(seed)
    which = rng.choice(len(directions), n, p=weights)
    centres = (
        np.stack(np.meshgrid(*[np.arange(int(np.ceil(n ** (1 / 3))))] * 3), -1).reshape(-1, 3)[:n] * 100.0
    )
    offsets = np.asarray(directions, float)[which] * rng.uniform(0.5, 1.5, (n, 1))
    return np.concatenate([centres, centres + offsets])


def test_anisotropy_of_a_hand_built_flock():
    # Each boid's nearest neighbour is its partner: along x in half the pairs, y in 30%,
    # z in 20%. M = diag(0.5, 0.3, 0.2): the neighbour is least found along z, W = z.
    p = clusters(np.eye(3), [0.5, 0.3, 0.2], 3000, 0)
    for motion, gamma in [([0, 0, 1], 1.0), ([1, 0, 0], 0.0), ([0, 3, 4], 0.64)]:
        v = np.tile(np.asarray(motion, float), (len(p), 1)) + 1e-3 * np.random.default_rng(1).normal(
            size=p.shape
        )
        a = metrics.neighbour_anisotropy(p, v, neighbours=3, interior=False)
        assert a.gamma[0] == pytest.approx(gamma, abs=0.01)
        assert a.boids[0] == len(p)
    np.testing.assert_array_equal(a.n, [1, 2, 3])
    # In a plane the isotropic value is 1/2.
    flat = p.copy()
    flat[:, 2] = 0.0
    assert (
        metrics.neighbour_anisotropy(flat, np.tile([1.0, 0, 0], (len(p), 1)), 3, interior=False).isotropic
        == 0.5
    )


def test_depth_is_the_distance_to_the_border_of_a_ball():
    p = uniform_ellipsoid(20_000, np.array([10.0, 10.0, 10.0]), 3)
    depth = hull_depth(p, 3)
    np.testing.assert_allclose(depth, 10.0 - np.linalg.norm(p, axis=1), atol=0.35)


def test_the_border_correction_removes_the_anisotropy_of_the_outline():
    # An isotropic random flock shaped as a thin slab moving across it: near the faces the
    # neighbours all lie on one side, so without the correction they seem to be missing
    # along the motion; counting only boids whose neighbour is nearer than the border,
    # that bias is gone.
    rng = np.random.default_rng(6)
    p = rng.uniform(0, 1, (20_000, 3)) * [60, 60, 6]
    v = np.tile([0, 0, 1.0], (len(p), 1))
    raw = metrics.neighbour_anisotropy(p, v, 20, interior=False)
    fixed = metrics.neighbour_anisotropy(p, v, 20)
    assert np.all(raw.gamma[9:] > 0.95)
    assert np.mean(fixed.gamma[9:]) < 0.7 and np.all(fixed.boids < raw.boids)


def test_no_range_is_read_off_neighbours_found_alike_in_every_direction():
    # A Poisson cloud of 4,000 points gave n_c = 1.318 (the science walk): its gamma(n) is the
    # sampling noise's, 0 to 1 at random. So in a plane, where the noise's gap is larger (a first
    # threshold let 28 % of planar clouds through). Neighbours paired side by side are measured.
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n, planar = (4000, 400)[seed % 2], seed % 4 >= 2
        cloud = rng.uniform(0.0, 20.0, (n, 3)) * ([1.0, 1.0, 0.0] if planar else 1.0)
        velocities = rng.normal(size=(n, 3)) * ([1.0, 1.0, 0.0] if planar else 1.0) + [0.2, 0.0, 0.0]
        a = metrics.neighbour_anisotropy(cloud, velocities, 10)
        assert a.isotropic == (0.5 if planar else 1 / 3)
        assert math.isnan(a.n_c) and np.isfinite(a.gamma).all(), (seed, a.n_c)
    # Each point's nearest neighbour beside it, across the motion (+z), as starlings' are: gamma(1)
    # is 1, and the range is read off the curve as before, where it falls past 1/3 (rank 1 to 2).
    rng = np.random.default_rng(0)
    centres, turn = rng.uniform(0.0, 60.0, (2000, 3)), rng.uniform(0.0, 2.0 * np.pi, 2000)
    beside = np.concatenate([centres, centres + 0.3 * np.c_[np.cos(turn), np.sin(turn), np.zeros(2000)]])
    a = metrics.neighbour_anisotropy(beside, np.tile([0.0, 0.0, 1.0], (4000, 1)), 8, interior=False)
    assert a.gamma[0] == pytest.approx(1.0, abs=1e-3)
    assert 1.0 < a.n_c < 2.0 and a.n_c == metrics.topological_range(a.gamma)


def test_topological_range_closed_forms():
    gamma = 1 / 3 + 0.6 * np.exp(-np.arange(20) / 2.0)  # 0.6 e^{-(n-1)/2} above 1/3
    expected = 1 + 2 * math.log(0.6 / 0.02)
    assert metrics.topological_range(gamma) == pytest.approx(expected, abs=0.1)
    assert metrics.topological_range(2 / 3 - gamma) == pytest.approx(expected, abs=0.1)  # from below
    assert math.isnan(metrics.topological_range(np.full(10, 0.9)))
    assert math.isnan(metrics.topological_range(np.full(10, 1 / 3)))


def test_finite_mean_leaves_out_what_is_undefined():
    assert metrics.finite_mean([1.0, np.nan, 3.0, np.inf, -np.inf]) == 2.0
    assert math.isnan(metrics.finite_mean([np.nan, np.nan])) and math.isnan(metrics.finite_mean([]))
    a = np.array([[1.0, np.nan, 5.0], [3.0, np.nan, np.nan]])
    np.testing.assert_array_equal(metrics.finite_mean(a, axis=0), [2.0, np.nan, 5.0])
    np.testing.assert_array_equal(metrics.finite_mean(a, axis=1), [3.0, 3.0])


def test_mean_anisotropy_averages_each_rank_over_the_frames_that_measured_it():
    # Three frames of gamma(n) = 1/3 + 0.6 e^{-(n-1)/2}, noise of +d, -d and 0 on top: the
    # average is the clean curve, whose n_c is 1 + 2 ln(0.6 / 0.02). A rank no boid
    # qualified for in one frame (NaN) averages the others.
    ranks = 20
    clean = 1 / 3 + 0.6 * np.exp(-np.arange(ranks) / 2.0)
    noise = 0.05 * np.sin(np.arange(ranks))
    frames = np.stack([clean + noise, clean - noise, clean])
    frames[2, 3] = np.nan
    frames[0, 3], frames[1, 3] = clean[3] + 0.1, clean[3] - 0.1
    curves = {
        "n": np.tile(np.arange(1, ranks + 1), 3),
        "gamma": frames.ravel(),
        "boids": np.tile(np.arange(ranks), 3),
    }
    a = metrics.mean_anisotropy(curves)
    np.testing.assert_allclose(a.gamma, clean, rtol=1e-12)
    np.testing.assert_array_equal(a.n, np.arange(1, ranks + 1))
    np.testing.assert_array_equal(a.boids, 3 * np.arange(ranks))
    assert a.isotropic == 1 / 3 and a.n_c == metrics.topological_range(clean)
    assert a.n_c == pytest.approx(1 + 2 * math.log(0.6 / 0.02), abs=0.1)
    # A planar flock's isotropic value is 1/2: the same curve shifted up by 1/6 reaches it alike.
    planar = metrics.mean_anisotropy({**curves, "gamma": curves["gamma"] + 1 / 6}, isotropic=0.5)
    assert planar.n_c == pytest.approx(a.n_c, abs=1e-9)
    # Read only where at least half the frames resolved the nearest neighbours' direction
    for each, read in (([1, 1, 0], True), ([1, 0, 0], False), ([0, 0, 0], False)):
        judged = metrics.mean_anisotropy({**curves, "resolved": np.repeat(each, ranks)})
        assert judged.resolved is read and (judged.n_c == a.n_c if read else math.isnan(judged.n_c))
        np.testing.assert_allclose(judged.gamma, clean, rtol=1e-12)  # gamma averaged all the same


def test_mean_anisotropy_of_a_real_table_and_of_none():
    rng = np.random.default_rng(4)
    frames = [Frame(rng.normal(size=(300, 3)), rng.normal(size=(300, 3)) + [2.0, 0, 0], k) for k in range(3)]
    _, curves = metrics.anisotropy_table(frames, neighbours=6)
    a = metrics.mean_anisotropy(curves)
    single = [metrics.neighbour_anisotropy(f.positions, f.velocities, 6).gamma for f in frames]
    np.testing.assert_allclose(a.gamma, np.mean(single, axis=0), rtol=1e-12)
    # Gaussian clouds: their neighbours are alike in every direction, frame after frame, so no
    # range is read off the average of three frames' noise (the researcher's walk: n_c = 2.57
    # from one disordered frame).
    assert not a.resolved and math.isnan(a.n_c) and not curves["resolved"].any()
    empty = metrics.mean_anisotropy(metrics.anisotropy_table([], neighbours=6)[1])
    assert len(empty.gamma) == 0 and math.isnan(empty.n_c)
    with pytest.raises(ValueError, match="ranks 1 to 6"):
        metrics.mean_anisotropy({k: v[:-1] for k, v in curves.items()})


def test_a_boid_not_finite_makes_the_order_parameters_nan_not_a_smaller_number():
    # Its direction used to count as none: P of the others times 19/20.
    rng = np.random.default_rng(0)
    positions, velocities = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
    velocities[0, 0] = np.nan
    assert math.isnan(metrics.polarization(velocities))
    assert math.isnan(metrics.milling(positions, velocities))


def test_every_pair_is_binned_the_farthest_one_too():
    # The bins span [0, L]; the pair at distance L went uncounted, so two boids had no curve.
    rng = np.random.default_rng(5)
    p, v = rng.normal(size=(300, 3)), rng.normal(size=(300, 3))
    c = metrics.velocity_correlation(p, v)
    assert c.pairs.sum() == 300 * 299 // 2
    # Summed over every pair (i != j) the fluctuations cancel: sum_ij u_i.u_j = -sum_i |u_i|^2.
    np.testing.assert_allclose(np.nansum(c.velocity * c.pairs) / c.pairs.sum(), -1.0 / 299, rtol=1e-9)
    two = metrics.velocity_correlation([[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert two.pairs[-1] == 1 and two.velocity[-1] == pytest.approx(-1.0)


def test_polarization_and_milling_never_exceed_one_however_the_sum_rounds():
    # 60 copies of one direction whose unit vector rounds up: the sum came to 1 + 7e-16.
    v = np.tile([0.1, 0.7, -0.3], (60, 1))
    assert metrics.polarization(v) == 1.0
    angles = np.linspace(0.0, 2.0 * np.pi, 1000, endpoint=False)
    ring = np.c_[np.cos(angles), np.sin(angles), np.zeros(1000)]
    assert metrics.milling(ring, np.c_[-ring[:, 1], ring[:, 0], np.zeros(1000)]) <= 1.0
