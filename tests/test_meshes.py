"""Meshes and heightfield images: every format read, bad files refused in one line, the grid's
error against exact distances within its stated bound, and its cache."""

import json
import logging
import math
import warnings

import numpy as np
import pytest

trimesh = pytest.importorskip("trimesh")
pytest.importorskip("igl")

from flock3d import Params  # noqa: E402
from flock3d.core import geometry as g  # noqa: E402
from flock3d.core.objects import Object, clearances, pack_objects  # noqa: E402
from flock3d.core.state import random_state  # noqa: E402
from flock3d.io import meshes  # noqa: E402
from flock3d.io.meshes import MeshError, object_fields, object_grid, read_heights, read_mesh  # noqa: E402

RNG = np.random.default_rng(11)


#: Each test's grids and steps in a cache of its own (conftest.own_cache).
pytestmark = pytest.mark.usefixtures("own_cache")


@pytest.mark.parametrize("suffix", [".obj", ".stl", ".ply", ".glb", ".gltf"])
def test_every_format_is_read(tmp_path, suffix):
    path = tmp_path / f"box{suffix}"
    trimesh.creation.box(extents=(1.0, 2.0, 3.0)).export(path)
    mesh = read_mesh(path, role="arena")
    assert len(mesh.faces) == 12 and mesh.is_watertight
    assert mesh.volume == pytest.approx(6.0)
    assert np.ptp(mesh.vertices, axis=0) == pytest.approx([1, 2, 3])


def test_an_inside_out_closed_mesh_is_turned_outwards(tmp_path):
    box = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    box.invert()
    box.export(tmp_path / "inverted.obj")
    assert read_mesh(tmp_path / "inverted.obj").volume == pytest.approx(8.0)


def refusal(path, role="obstacle") -> str:
    with pytest.raises(MeshError) as error:
        read_mesh(path, role)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_bad_mesh_files_are_refused_in_one_line(tmp_path, monkeypatch):
    assert refusal(tmp_path / "none.obj") == f"{tmp_path / 'none.obj'}: no such mesh file"
    (tmp_path / "words.obj").write_text("hello world\n")
    assert refusal(tmp_path / "words.obj").endswith("holds no triangles; a mesh needs at least one")
    (tmp_path / "junk.glb").write_bytes(b"glTF\x02\x00\x00\x00")
    assert "not a mesh trimesh can read" in refusal(tmp_path / "junk.glb")
    (tmp_path / "notes.txt").write_text("v 0 0 0\n")
    assert "not a mesh file: its name must end in .obj, .stl" in refusal(tmp_path / "notes.txt")
    (tmp_path / "folder.obj").mkdir()
    assert "not a regular file" in refusal(tmp_path / "folder.obj")
    (tmp_path / "nan.obj").write_text(
        "v nan 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 3 4\nf 1 4 2\nf 2 4 3\n"
    )
    assert "has vertices that are not finite numbers (NaN or inf)" in refusal(tmp_path / "nan.obj")
    trimesh.creation.icosphere(2).export(tmp_path / "ball.stl")
    monkeypatch.setattr(meshes, "MAX_TRIANGLES", 100)
    assert "has 320 triangles; a mesh may have at most 100" in refusal(tmp_path / "ball.stl")


def test_an_open_mesh_may_be_an_obstacle_but_not_an_arena(tmp_path):
    box = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    trimesh.Trimesh(box.vertices, box.faces[:-2]).export(tmp_path / "open.obj")
    assert len(read_mesh(tmp_path / "open.obj").faces) == 10
    assert "is open (not watertight): an arena mesh must be closed" in refusal(tmp_path / "open.obj", "arena")


def grid_points(grid, n=4000):
    top = np.asarray(grid.origin) + (np.array(grid.values.shape) - 1) * grid.cell
    return RNG.uniform(grid.origin, top, (n, 3))


def test_the_grid_is_within_its_bound_of_the_exact_distance(tmp_path):
    # An icosphere approximates a sphere of radius 2: its own error is how far its faces sink
    # inside, at most 2 minus the distance from the centre to the nearest face plane.
    ball = trimesh.creation.icosphere(subdivisions=4, radius=2.0)
    tessellation = 2.0 - np.min(np.abs(np.einsum("ij,ij->i", ball.face_normals, ball.triangles[:, 0])))
    ball.export(tmp_path / "ball.ply")
    grid = object_grid(Object("mesh", file=str(tmp_path / "ball.ply"), scale=1.5), resolution=48)
    h = grid.cell
    points = grid_points(grid)
    got = np.array([g.grid_sdf(grid.values, *grid.origin, h, *p)[0] for p in points])
    exact = np.linalg.norm(points, axis=1) - 3.0
    error = np.abs(got - exact)
    near = np.abs(exact) < (meshes.EXACT_BAND - math.sqrt(3)) * h
    assert near.sum() > 500 and (~near).sum() > 500
    assert error[near].max() <= math.sqrt(3) / 2 * h + 1.5 * tessellation
    assert error.max() <= math.sqrt(3) / 2 * (meshes._STRIDE + 1) * h + 1.5 * tessellation
    assert np.all(np.sign(got[np.abs(exact) > h]) == np.sign(exact[np.abs(exact) > h]))
    # A box mesh is its shape exactly: only the interpolation's error remains.
    trimesh.creation.box(extents=(4.0, 1.0, 2.0)).export(tmp_path / "box.stl")
    grid = object_grid(Object("mesh", file=str(tmp_path / "box.stl")), resolution=40)
    points = grid_points(grid)
    got = np.array([g.grid_sdf(grid.values, *grid.origin, grid.cell, *p)[0] for p in points])
    exact = np.array([g.sdf_box(*p, 2.0, 0.5, 1.0)[0] for p in points])
    near = np.abs(exact) < (meshes.EXACT_BAND - math.sqrt(3)) * grid.cell
    assert np.abs(got - exact)[near].max() <= math.sqrt(3) / 2 * grid.cell


def test_a_grid_sampled_in_another_thread_leaves_this_one_running_and_is_the_same_grid(monkeypatch):
    # libigl holds the GIL through a call: a window waiting on a world's read in another thread
    # froze for nearly all of it (the cave's mesh: 1.5 of 1.7 s on two slow cores). The nodes go
    # to libigl in parts, and the values are those of one call.
    import pathlib
    import threading
    import time

    from flock3d.io import sdf_grid

    rock = trimesh.load(pathlib.Path(__file__).parents[1] / "scenes/worlds/assets/cave.obj", force="mesh")
    v, f = np.asarray(rock.vertices, float), np.asarray(rock.faces, np.int64)
    parts: dict = {}
    worker = threading.Thread(target=lambda: parts.setdefault("grid", sdf_grid.mesh_grid(v, f)))
    ticks = [time.monotonic()]
    worker.start()
    while worker.is_alive():
        time.sleep(0.002)
        ticks.append(time.monotonic())
    assert np.diff(ticks).max() < 0.25 * (ticks[-1] - ticks[0]), (np.diff(ticks).max(), ticks[-1] - ticks[0])
    monkeypatch.setattr(sdf_grid, "_PART_NODES", 2**62)  # every node in one call
    whole = sdf_grid.mesh_grid(v, f)
    assert np.array_equal(whole.values, parts["grid"].values) and whole[:2] == parts["grid"][:2]


def test_the_cache_serves_the_same_grid_and_rebuilds_a_damaged_one(tmp_path, monkeypatch, caplog):
    trimesh.creation.icosphere(2).export(tmp_path / "ball.obj")
    obj = Object("mesh", file=str(tmp_path / "ball.obj"))
    first = object_grid(obj, resolution=24)
    entries = list(meshes.grid_cache_dir().glob("*.npz"))
    assert len(entries) == 1

    def no_sampling(*args, **kwargs):
        raise AssertionError("sampled again despite the cache")

    with monkeypatch.context() as patch:
        patch.setattr(meshes, "mesh_grid", no_sampling)
        hit = object_grid(obj, resolution=24)
    assert np.array_equal(hit.values, first.values) and hit.origin == first.origin and hit.cell == first.cell
    # Another size or scale is another entry.
    object_grid(obj, resolution=20)
    object_grid(obj._replace(scale=2.0), resolution=24)
    assert len(list(meshes.grid_cache_dir().glob("*.npz"))) == 3
    # A truncated entry is dropped, sampled again and replaced, with one line said.
    entries[0].write_bytes(entries[0].read_bytes()[:1000])
    with caplog.at_level(logging.WARNING, logger="flock3d"):
        again = object_grid(obj, resolution=24)
    assert np.array_equal(again.values, first.values)
    assert [r.getMessage() for r in caplog.records] == [
        f"flock3d: the cached grid {entries[0].name} was damaged (BadZipFile); computing it again"
    ]
    hit = object_grid(obj, resolution=24)  # the rebuilt entry reads back
    assert np.array_equal(hit.values, first.values)


def test_heightfield_images_are_read_as_heights(tmp_path):
    iio = pytest.importorskip("imageio.v3")
    pixels = np.zeros((3, 5), dtype=np.uint8)  # 5 columns along x, 3 rows along z
    pixels[:, 4] = 255
    pixels[2, 0] = 51
    iio.imwrite(tmp_path / "ground.png", pixels)
    heights = read_heights(tmp_path / "ground.png")
    assert heights.shape == (5, 3) and heights[4, 1] == 1.0 and heights[0, 2] == pytest.approx(0.2)
    iio.imwrite(tmp_path / "colour.png", np.dstack([pixels, pixels, 255 - pixels]))
    with pytest.raises(MeshError, match="colour.png: not a greyscale image"):
        read_heights(tmp_path / "colour.png")
    (tmp_path / "text.png").write_text("no image here")
    with pytest.raises(MeshError, match="text.png: not an image imageio can read"):
        read_heights(tmp_path / "text.png")
    with pytest.raises(MeshError, match="missing.png: no such image file"):
        read_heights(tmp_path / "missing.png")


@pytest.mark.parametrize("limit", [300, 100])  # Pillow warns past the limit and refuses past twice it
def test_an_image_too_large_to_decode_is_one_line_naming_its_size(tmp_path, monkeypatch, limit):
    # A 12,000-pixel square printed Pillow's two-line DecompressionBombWarning before the refusal,
    # and a 14,000 one read "not an image imageio can read" (the hostile-input walk). The limits
    # are lowered here, so that a small image stands for a huge one.
    iio = pytest.importorskip("imageio.v3")
    from PIL import Image

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", limit)
    iio.imwrite(tmp_path / "big.png", np.zeros((20, 20), dtype=np.uint8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing printed beside the one line
        with pytest.raises(MeshError) as info:
            read_heights(tmp_path / "big.png")
    said = "400 pixels in all, more than Pillow decodes safely (a heightfield takes 2 to 8,192 a side)"
    assert str(info.value) == f"{tmp_path / 'big.png'}: {said}"


def test_boids_start_outside_mesh_obstacles_and_inside_a_mesh_arena(tmp_path):
    trimesh.creation.icosphere(3, radius=6.0).export(tmp_path / "rock.obj")
    trimesh.creation.box(extents=(30.0, 12.0, 30.0)).export(tmp_path / "room.glb")
    params = Params(
        count=2000,
        arena_shape="none",
        init_radius=20.0,
        objects=[
            {"shape": "mesh", "file": str(tmp_path / "rock.obj"), "position": [3, 0, 0]},
            {"shape": "mesh", "file": str(tmp_path / "room.glb"), "role": "arena", "rotation": [20, 0, 0]},
        ],
    )
    with pytest.raises(ValueError, match=r"objects\[0\] \(mesh\) needs its mesh's distance grid"):
        random_state(params, seed=1)
    fields = object_fields(params, resolution=40)
    positions = random_state(params, seed=1, fields=fields).positions
    data, offsets = pack_objects(params.objects, fields)
    assert clearances(data, offsets, positions, 0.0).min() >= params.avoidance_margin
    # Checked against the meshes' exact shapes: outside the rock's ball, inside the turned room.
    assert np.linalg.norm(positions - (3, 0, 0), axis=1).min() >= 6.0
    q = g.euler_quaternion(20.0, 0.0, 0.0)
    local = np.array([g.rotate_inverse(*q, *p) for p in positions])
    assert np.all(np.abs(local) <= (15.0, 6.0, 15.0))


def box_with_faces(change) -> trimesh.Trimesh:
    """A 12-triangle box whose faces ``change(faces)`` edited, unchecked (as a damaged file holds them)."""
    box = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    faces = box.faces.copy()
    change(faces)
    return trimesh.Trimesh(box.vertices, faces, process=False, validate=False)


def past_the_end(faces):
    faces[3, 1] = 200


def negative(faces):
    faces[3, 1] = -1  # numpy would wrap it round to the last vertex


TETRAHEDRON = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n"
TETRAHEDRON_FACES = "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


#: Damaged mesh files, by name: how each is written and the start of its one line.
DAMAGED = {
    "far.ply": (lambda p: box_with_faces(past_the_end).export(p),
                "has a triangle naming vertex 200 (numbered from 0), but it holds 8 vertices"),
    "negative.ply": (lambda p: box_with_faces(negative).export(p, encoding="ascii"),
                     "has a triangle naming vertex -1 (numbered from 0)"),
    "far.glb": (lambda p: box_with_faces(past_the_end).export(p), "has a triangle naming vertex 200"),
    # glTF indices are unsigned: -1 arrives as 2**32 - 1.
    "negative.glb": (lambda p: box_with_faces(negative).export(p), "has a triangle naming vertex 4294967295"),
    "flat.obj": (lambda p: p.write_text("v 0 0 0\nv 1 0\nv 0 1 0\nv 0 0 1\n" + TETRAHEDRON_FACES),
                 "line 2: has a vertex of fewer than 3 coordinates"),
    "zero.obj": (lambda p: p.write_text(TETRAHEDRON + "f 1 3 2\nf 0 2 4\nf 1 4 3\nf 2 3 4\n"),
                 "line 6: has a face with index 0; an OBJ's indices count from 1"),
    "zero-slash.obj": (lambda p: p.write_text(TETRAHEDRON + "vt 0 0\nf 1/1 3/1 2/1\nf 2/1 0/1 4/1\n"),
                       "line 7: has a face with index 0"),
    "huge.obj": (lambda p: p.write_text(TETRAHEDRON.replace("v 1 0 0", "v 1e308 0 0") + TETRAHEDRON_FACES),
                 "has a coordinate of 1e+308; a mesh's coordinates must be at most 1e+09 in size"),
    # Once called "a single point": merging its vertices overflowed.
    "large.stl": (lambda p: trimesh.creation.box(extents=(2e11, 2e11, 2e11)).export(p),
                  "has a coordinate of 1e+11; a mesh's coordinates must be at most 1e+09"),
    "latin-1.obj": (lambda p: p.write_bytes("# café\n".encode("latin-1") + TETRAHEDRON.encode()),
                    "is not UTF-8 text (byte 0xe9 at offset 5); save it as UTF-8"),
    "latin-1.stl": (lambda p: p.write_bytes(
        trimesh.creation.box().export(file_type="stl_ascii").replace("solid", "solid café", 1)
        .encode("latin-1")), "is not UTF-8 text (byte 0xe9 at offset 9)"),
    # A cut or random binary STL was called text that is not UTF-8.
    "cut.stl": (lambda p: p.write_bytes(trimesh.creation.icosphere(2).export(file_type="stl")[:1000]),
                "is a binary STL of 320 triangles, which takes 16,084 bytes, but it has 1,000: the file is "
                "truncated or damaged"),
    "short.stl": (lambda p: p.write_bytes(b"\xd7" * 50),
                  "is too short for a binary STL (50 bytes; its header alone takes 84)"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(DAMAGED))
def test_damaged_meshes_are_refused_in_one_line_without_warnings(tmp_path, name):
    write, message = DAMAGED[name]
    path = tmp_path / name
    write(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings once came first
        assert refusal(path).startswith(f"{path}: {message}")


def test_negative_obj_indices_still_count_back_from_the_last_vertex(tmp_path):
    (tmp_path / "back.obj").write_text(TETRAHEDRON + "f -4 -2 -3\nf -4 -3 -1\nf -4 -1 -2\nf -3 -2 -1\n")
    mesh = read_mesh(tmp_path / "back.obj", role="arena")
    assert mesh.is_watertight and mesh.volume == pytest.approx(1 / 6)


def test_a_name_holding_nul_is_refused(tmp_path):
    with pytest.raises(MeshError, match=r"a\\x00b.obj': a file name cannot hold a NUL character"):
        read_mesh(str(tmp_path / "a\0b.obj"))
    with pytest.raises(MeshError, match=r"a\\x00b.png': a file name cannot hold a NUL character"):
        read_heights(str(tmp_path / "a\0b.png"))


def test_the_files_a_gltf_names_must_be_regular_files_in_its_folder(tmp_path):
    trimesh.creation.box().export(tmp_path / "box.gltf")
    text = (tmp_path / "box.gltf").read_text()
    buffer = json.loads(text)["buffers"][0]["uri"]
    # A FIFO, which would block its reader forever, is refused the same way (test_hostile_input
    # reads one in a process it can stop).
    (tmp_path / "folder.bin").mkdir()
    (tmp_path / "folder.gltf").write_text(text.replace(buffer, "folder.bin"))
    (tmp_path / "out.gltf").write_text(text.replace(buffer, "../../../../etc/passwd"))
    assert refusal(tmp_path / "folder.gltf").endswith("('folder.bin' is not a regular file)")
    outside = refusal(tmp_path / "out.gltf")
    assert "('../../../../etc/passwd' lies outside the mesh's folder)" in outside
    assert read_mesh(tmp_path / "box.gltf").volume == pytest.approx(1.0)  # its own buffers are read


def test_a_scale_may_not_take_a_mesh_past_the_largest_size(tmp_path):
    trimesh.creation.box(extents=(2e3, 2e3, 2e3)).export(tmp_path / "box.obj")
    assert read_mesh(tmp_path / "box.obj", scale=(1e6, 1e6, 1e6)) is not None  # reaches 1e9: allowed
    with pytest.raises(MeshError, match=r"box.obj: scaled by \[1, 2e\+06, 1\], its coordinates reach 2e\+09; "
                       r"a mesh may reach at most 1e\+09"):  # fmt: skip
        read_mesh(tmp_path / "box.obj", scale=(1.0, 2e6, 1.0))
