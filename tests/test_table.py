"""Tables of measurements written as CSV: read back exactly, refused when ragged."""

import csv

import numpy as np
import pytest

from flock3d import metrics
from flock3d.io import write_csv


def test_a_table_reads_back_exactly(tmp_path):
    reals = np.array([0.1, 1 / 3, np.nan, -np.inf, 1e-310])
    columns = {
        "step": np.array([0, 6, 12, 18, 24], dtype=np.int64),
        "groups": np.array([1, 2, 3, 4, 5], dtype=np.uint8),
        "ok": np.array([True, False, True, True, False]),
        "interaction": np.array(["topological", "metric", "a,b", 'say "x"', ""]),
        "value": reals,
    }
    path = write_csv(tmp_path / "t.csv", columns)
    rows = list(csv.reader(path.open(newline="")))
    assert rows[0] == list(columns) and len(rows) == 6
    assert [r[0] for r in rows[1:]] == ["0", "6", "12", "18", "24"]  # whole numbers as integers
    assert [r[2] for r in rows[1:]] == ["1", "0", "1", "1", "0"]
    assert [r[3] for r in rows[1:]] == list(columns["interaction"])  # quoted where needed, read back
    np.testing.assert_array_equal([float(r[4]) for r in rows[1:]], reals)  # every bit of every real


def test_a_measured_table_writes_and_reads_back(tmp_path):
    rng = np.random.default_rng(2)

    class Frame:
        def __init__(self, k):
            self.positions, self.velocities = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
            self.step_count, self.time = 10 * k, 0.5 * k

    columns = metrics.table([Frame(k) for k in range(3)], 1.5)
    rows = list(csv.DictReader(write_csv(tmp_path / "m.csv", columns).open()))
    for name, values in columns.items():
        np.testing.assert_array_equal([float(r[name]) for r in rows], values)


def test_ragged_columns_are_refused_before_anything_is_written(tmp_path):
    path = tmp_path / "ragged.csv"
    with pytest.raises(ValueError, match=r"columns must be of one length .*'a': 3, 'b': 2"):
        write_csv(path, {"a": np.zeros(3), "b": np.zeros(2)})
    assert not path.exists()
