"""A mesh's cached grid is trusted only when it is what its inputs make: an entry damaged,
negated, swapped for another mesh's, or a folder in its place is computed again with one line
logged, never used and never fatal, read-only cache included; and a mesh file rewritten in
place is read again, whatever its stat says."""

from __future__ import annotations

import logging
import os
import shutil

import numpy as np
import pytest

trimesh = pytest.importorskip("trimesh")
pytest.importorskip("igl")

from helpers import read_only  # noqa: E402

from flock3d.core.objects import Object  # noqa: E402
from flock3d.io import meshes  # noqa: E402
from flock3d.io.meshes import object_grid, read_mesh  # noqa: E402

RESOLUTION = 20


#: Each test's grids and steps in a cache of its own (conftest.own_cache).
pytestmark = pytest.mark.usefixtures("own_cache")


@pytest.fixture
def ball(tmp_path):
    """A mesh object, its grid computed once (and cached), and its cache entry."""
    trimesh.creation.icosphere(2, radius=2.0).export(tmp_path / "ball.obj")
    obj = Object("mesh", file=str(tmp_path / "ball.obj"))
    first = object_grid(obj, RESOLUTION)
    (entry,) = meshes.grid_cache_dir().glob("*.npz")
    return obj, first, entry


def _rewrite(entry, **changes) -> None:
    """The entry with some of its arrays replaced, every other array (its key, its checksum) kept."""
    with np.load(entry) as stored:
        arrays = {name: stored[name] for name in stored.files}
    arrays.update(changes)
    with open(entry, "wb") as handle:
        np.savez(handle, **arrays)


def _rebuilt(obj, first, caplog) -> list[str]:
    """Compute the grid again, check it is the true one, and return the lines logged."""
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="flock3d"):
        again = object_grid(obj, RESOLUTION)
    assert np.array_equal(again.values, first.values)
    assert again.origin == first.origin and again.cell == first.cell
    return [r.getMessage() for r in caplog.records]


def _served_from_cache(obj, first, monkeypatch) -> None:
    """The entry now in the cache is sound: it is read without sampling."""

    def no_sampling(*args, **kwargs):
        raise AssertionError("sampled again despite a sound cache entry")

    with monkeypatch.context() as patch:
        patch.setattr(meshes, "mesh_grid", no_sampling)
        assert np.array_equal(object_grid(obj, RESOLUTION).values, first.values)


def test_a_negated_entry_is_caught_by_its_checksum(ball, caplog, monkeypatch):
    obj, first, entry = ball
    with np.load(entry) as stored:
        values = stored["values"]
    _rewrite(entry, values=-values)  # a valid file under the right key: the world turned inside out
    assert _rebuilt(obj, first, caplog) == [
        f"flock3d: the cached grid {entry.name} was damaged (its contents do not match their checksum); "
        "computing it again"
    ]
    _served_from_cache(obj, first, monkeypatch)


@pytest.mark.parametrize("field", ["origin", "cell"])
def test_an_entry_moved_or_rescaled_is_caught_by_its_checksum(ball, caplog, field):
    obj, first, entry = ball
    with np.load(entry) as stored:
        _rewrite(entry, **{field: stored[field] * 1.5})
    (line,) = _rebuilt(obj, first, caplog)
    assert "its contents do not match their checksum" in line


def test_an_entry_swapped_for_another_meshs_is_not_used(ball, tmp_path, caplog, monkeypatch):
    obj, first, entry = ball
    trimesh.creation.box(extents=(1.0, 2.0, 3.0)).export(tmp_path / "box.obj")
    object_grid(Object("mesh", file=str(tmp_path / "box.obj")), RESOLUTION)
    # Another mesh's whole, valid entry (its own key and checksum), copied under this one's name,
    # and one of the same lattice (the ball twice as large: the same nodes, other distances).
    others = [p for p in meshes.grid_cache_dir().glob("*.npz") if p != entry]
    object_grid(obj._replace(scale=2.0), RESOLUTION)
    larger = [p for p in meshes.grid_cache_dir().glob("*.npz") if p != entry and p not in others]
    for other, reason in (
        (others[0], "it holds a "),
        (larger[0], "it was made from another mesh or resolution"),
    ):
        shutil.copyfile(other, entry)
        (line,) = _rebuilt(obj, first, caplog)
        assert line.startswith(f"flock3d: the cached grid {entry.name} was damaged ({reason}"), line
    _served_from_cache(obj, first, monkeypatch)


def test_a_folder_in_an_entrys_place_is_replaced(ball, caplog, monkeypatch):
    obj, first, entry = ball
    entry.unlink()
    (entry / "inside").mkdir(parents=True)
    assert _rebuilt(obj, first, caplog) == [
        f"flock3d: the cached grid {entry.name} was damaged (a folder in its place); computing it again"
    ]
    assert entry.is_file()
    _served_from_cache(obj, first, monkeypatch)


def test_a_giant_array_in_an_entry_is_refused_from_its_header(ball, caplog):
    obj, first, entry = ball
    with open(entry, "wb") as handle:  # 8 TB of zeros, were it read
        np.savez(handle, values=np.lib.stride_tricks.as_strided(np.zeros(1), (10**6, 10**6), (0, 0))[:1, :1])
    with np.load(entry) as stored:
        assert stored["values"].shape == (1, 1)
    (line,) = _rebuilt(obj, first, caplog)
    assert "it holds a 1x1 float64 grid, not " in line


@pytest.mark.parametrize("damage", ["truncated", "negated", "folder"])
def test_a_damaged_entry_in_a_read_only_cache_is_computed_without_caching(ball, caplog, damage):
    obj, first, entry = ball
    if damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:1000])
    elif damage == "negated":
        with np.load(entry) as stored:
            _rewrite(entry, values=-stored["values"])
    else:
        entry.unlink()
        entry.mkdir()
    with read_only(entry.parent):
        (line,) = _rebuilt(obj, first, caplog)
        assert line.startswith(f"flock3d: the cached grid {entry.name} was damaged (")
        assert line.endswith(
            "cannot be replaced (Read-only file system); computing it again without caching it"
        ) or (line.endswith("cannot be replaced (Permission denied); computing it again without caching it"))
        (line,) = _rebuilt(obj, first, caplog)  # every run pays the sampling, and runs
    assert entry.exists()  # left as it was


def test_a_read_only_cache_costs_the_sampling_in_one_line(tmp_path, caplog):
    trimesh.creation.icosphere(2, radius=2.0).export(tmp_path / "ball.obj")
    obj = Object("mesh", file=str(tmp_path / "ball.obj"))
    folder = meshes.grid_cache_dir()
    with read_only(folder):
        first = object_grid(obj, RESOLUTION, cache=False)
        (line,) = _rebuilt(obj, first, caplog)
    assert line.startswith(f"flock3d: could not cache the grid of {obj.file} (")
    assert not list(folder.iterdir())


TETRAHEDRON = "v 0 0 0\nv {a} 0 0\nv 0 {a} 0\nv 0 0 {a}\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


def test_a_mesh_rewritten_at_the_same_size_and_mtime_is_read_again(tmp_path):
    path = tmp_path / "tetrahedron.obj"
    path.write_text(TETRAHEDRON.format(a=1))
    before = path.stat()
    assert np.ptp(read_mesh(path).vertices, axis=0) == pytest.approx([1, 1, 1])
    path.write_text(TETRAHEDRON.format(a=2))  # at once: within the clock's tick that stamps the ctime
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    assert np.ptp(read_mesh(path).vertices, axis=0) == pytest.approx([2, 2, 2])
