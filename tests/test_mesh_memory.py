"""What meshes cost in memory is bounded before it is spent: identical meshes share one grid (in
the fields and in the packed world), a world whose distinct grids would pass MAX_GRID_BYTES is
refused before any is sampled, and a mesh file larger than MAX_MESH_BYTES is refused from its
size, unread."""

from __future__ import annotations

import time

import numpy as np
import pytest

trimesh = pytest.importorskip("trimesh")
pytest.importorskip("igl")

from flock3d import Params  # noqa: E402
from flock3d.core.objects import Object, clearances, pack_objects  # noqa: E402
from flock3d.io import meshes  # noqa: E402
from flock3d.io.meshes import MeshError, grid_lattice, object_fields, read_mesh  # noqa: E402

RESOLUTION = 24


#: Each test's grids and steps in a cache of its own (conftest.own_cache).
pytestmark = pytest.mark.usefixtures("own_cache")


@pytest.fixture
def sampled(monkeypatch):
    """The meshes mesh_grid samples, as (vertex count, first vertex) per call."""
    calls = []
    real = meshes.mesh_grid

    def counting(vertices, faces, resolution=meshes.GRID_RESOLUTION):
        calls.append(len(vertices))
        return real(vertices, faces, resolution)

    monkeypatch.setattr(meshes, "mesh_grid", counting)
    return calls


def world(file, scales, **extra) -> Params:
    objects = [
        {"shape": "mesh", "file": str(file), "position": [12.0 * k, 0, 0], "scale": s}
        for k, s in enumerate(scales)
    ]
    return Params(
        count=10, arena_shape="none", init_radius=1.0, arena_center=[0, 40, 0], objects=objects, **extra
    )


def test_identical_meshes_share_one_grid_in_the_fields_and_the_packed_world(tmp_path, sampled):
    trimesh.creation.box(extents=(2.0, 3.0, 4.0)).export(tmp_path / "box.stl")
    params = world(tmp_path / "box.stl", [1.0, 1.0, 2.0, 1.0, 2.0])
    fields = object_fields(params, RESOLUTION)
    assert fields[0] is fields[1] is fields[3] and fields[2] is fields[4] and fields[0] is not fields[2]
    assert len(sampled) == 2  # one grid per distinct (mesh, scale)
    data, offsets = pack_objects(params.objects, fields)
    grid_floats = fields[0].values.size + fields[2].values.size
    assert grid_floats <= len(data) < grid_floats + 200 * len(params.objects)
    # The shared blocks are read as private copies would be: the same distances everywhere.
    copies = {k: v._replace(values=v.values.copy()) for k, v in fields.items()}
    alone, separate = pack_objects(params.objects, copies)
    assert len(alone) > len(data) + 2 * fields[0].values.size
    rng = np.random.default_rng(5)
    points = rng.uniform((-6.0, -6.0, -6.0), (54.0, 6.0, 6.0), (3000, 3))
    for k in range(len(params.objects)):
        np.testing.assert_array_equal(
            clearances(data, offsets[k : k + 2], points, 0.0),
            clearances(alone, separate[k : k + 2], points, 0.0),
        )


def test_two_hundred_copies_of_a_box_cost_one_grid(tmp_path, sampled):
    trimesh.creation.box(extents=(1.0, 1.0, 1.0)).export(tmp_path / "box.obj")
    params = world(tmp_path / "box.obj", [1.0] * 200)
    fields = object_fields(params, RESOLUTION)
    assert len({id(f) for f in fields.values()}) == 1 and len(sampled) == 1
    data, _ = pack_objects(params.objects, fields)
    assert data.nbytes < 2 * fields[0].values.nbytes


def test_the_grids_size_is_known_before_sampling():
    vertices = np.array([[0.0, 0.0, 0.0], [10.0, 1.0, 4.0]])
    origin, h, nodes = grid_lattice(vertices, 33)
    assert h == pytest.approx(10.0 * 1.25 / 32)
    assert nodes[0] == 33 and nodes[1] < nodes[2] < 33
    box = trimesh.creation.box(extents=(10.0, 1.0, 4.0))
    assert meshes.mesh_grid(box.vertices, box.faces, 33).values.shape == tuple(
        grid_lattice(np.asarray(box.vertices), 33)[2]
    )


def test_a_world_over_the_grid_bound_is_refused_before_any_grid_is_made(tmp_path, sampled, monkeypatch):
    trimesh.creation.box(extents=(1.0, 1.0, 1.0)).export(tmp_path / "box.obj")
    one = 8 * RESOLUTION**3  # a cube's grid fills the lattice
    monkeypatch.setattr(meshes, "MAX_GRID_BYTES", 2 * one)
    # Two distinct grids, 100 objects: at the bound.
    object_fields(world(tmp_path / "box.obj", [1.0, 2.0] * 50), RESOLUTION)
    assert len(sampled) == 2
    sampled.clear()
    entries = sorted(meshes.grid_cache_dir().iterdir())
    with pytest.raises(MeshError) as error:
        object_fields(world(tmp_path / "box.obj", [1.0, 2.0, 3.0]), RESOLUTION)
    assert str(error.value) == (
        "the 3 distinct meshes of this world need 0.3 MiB of distance grids; a world's distinct grids may "
        "take at most 0.2 MiB (use fewer distinct meshes or scales, or a lower resolution)"
    )
    assert not sampled and sorted(meshes.grid_cache_dir().iterdir()) == entries


def test_the_stated_bound_holds_at_the_default_resolution(tmp_path):
    # 64 distinct cubes' grids fit, a 65th does not: the bound the docs state.
    full = 8 * meshes.GRID_RESOLUTION**3
    assert meshes.MAX_GRID_BYTES // full == 64
    trimesh.creation.box(extents=(1.0, 1.0, 1.0)).export(tmp_path / "box.obj")
    with pytest.raises(MeshError, match=r"the 65 distinct meshes of this world need 1,040.0 MiB"):
        object_fields(world(tmp_path / "box.obj", [1.0 + k / 100 for k in range(65)]))


def test_a_huge_mesh_file_is_refused_from_its_size_unread(tmp_path, monkeypatch):
    path = tmp_path / "huge.ply"
    with open(path, "wb") as handle:  # sparse: 1 GB that takes no room and no time to write
        handle.write(b"ply\nformat binary_little_endian 1.0\n")
        handle.truncate(1 << 30)

    def no_reading(*args, **kwargs):
        raise AssertionError("the file was read")

    monkeypatch.setattr(trimesh, "load", no_reading)
    monkeypatch.setattr(meshes, "_content_digest", no_reading)
    start = time.perf_counter()
    with pytest.raises(MeshError) as error:
        read_mesh(path)
    assert time.perf_counter() - start < 0.5
    assert str(error.value) == (
        f"{path}: holds 1,073,741,824 bytes; a mesh file may hold at most {meshes.MAX_MESH_BYTES:,} "
        "(simplify the mesh)"
    )
    obj = Object("mesh", file=str(path))
    with pytest.raises(MeshError, match=r"^objects\[0\]: .*holds 1,073,741,824 bytes"):
        object_fields(Params(count=10, arena_shape="none", arena_center=[0, 40, 0], objects=[obj]))
