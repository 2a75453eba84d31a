"""[[objects]] in scene files: read, written back, and every mistake `flock3d check` names in one line."""

import textwrap

import pytest
from helpers import flock3d

from flock3d.core.objects import Motion
from flock3d.scene import SceneError, load_scene, parse_scene, shipped_scenes

EVERY_SHAPE = """
arena.shape = "none"
flock.init_radius = 10.0

[[objects]]
shape = "box"
size = [2, 4, 2]
position = [12, 0, 0]
rotation = [30, 0, 10]
scale = [1, 2, 1]
color = "#aa3300"

[[objects]]
shape = "sphere"
radius = 2
motion = { points = [[0, 12, 0], [0, 14, 0], [0, 12, 0]], times = [0, 1, 2], loop = true }

[[objects]]
shape = "cylinder"
radius = 1
height = 5
position = [-12, 0, 0]

[[objects]]
shape = "capsule"
radius = 1
height = 5
motion = { points = [[0, 0, 12], [3, 0, 12]], times = [0, 4], rotations = [[0, 0, 0], [90, 0, 0]] }

[[objects]]
shape = "torus"
radius = 4
tube = 1
position = [0, -12, 0]

[[objects]]
shape = "heightfield"
size = [100, 100]
height = 4
seed = 7
position = [0, -30, 0]

[[objects]]
shape = "plane"
position = [0, -40, 0]

[[objects]]
shape = "sphere"
radius = 60
role = "arena"
"""


def test_every_shape_is_read_and_written_back(tmp_path):
    scene = parse_scene(EVERY_SHAPE, "every.toml")
    objects = scene.params.objects
    assert [o.shape for o in objects] == ["box", "sphere", "cylinder", "capsule", "torus", "heightfield",
                                          "plane", "sphere"]  # fmt: skip
    assert objects[0].scale == (1.0, 2.0, 1.0) and objects[0].rotation == (30.0, 0.0, 10.0)
    assert objects[1].motion == Motion(
        ((0.0, 12.0, 0.0), (0.0, 14.0, 0.0), (0.0, 12.0, 0.0)), (0.0, 1.0, 2.0), True
    )
    assert objects[3].motion.rotations == ((0.0, 0.0, 0.0), (90.0, 0.0, 0.0))
    assert objects[-1].role == "arena" and objects[5].seed == 7
    again = load_scene(scene.save(tmp_path / "copy.toml"))
    assert again == scene
    assert scene.with_overrides(["flock.count=10"]).params.objects == objects


def test_an_objects_colour_is_kept_from_its_scene_file_to_its_copy(tmp_path):
    # The species' look keys (color, mesh) were dropped from every [[...]] table, objects' too:
    # every object of a world was drawn in its role's default colour.
    city = load_scene("worlds/city")
    colours = [o.color for o in city.params.objects]
    assert "#d04040" in colours and None not in colours[:5]  # the balloon's red, the buildings'
    assert [o.color for o in load_scene(city.save(tmp_path / "city.toml")).params.objects] == colours


def test_mesh_files_are_found_beside_the_scene_and_saved_relative_to_the_copy(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("igl")
    (tmp_path / "assets").mkdir()
    trimesh.creation.box(extents=(2.0, 2.0, 2.0)).export(tmp_path / "assets" / "crate.stl")
    (tmp_path / "world.toml").write_text(
        '[[objects]]\nshape = "mesh"\nfile = "assets/crate.stl"\nposition = [20, 0, 0]\n'
    )
    scene = load_scene(tmp_path / "world.toml")
    assert scene.params.objects[0].file == str(tmp_path / "assets" / "crate.stl")
    (tmp_path / "elsewhere").mkdir()
    copy = scene.save(tmp_path / "elsewhere" / "copy.toml")
    assert 'file = "../assets/crate.stl"' in copy.read_text()
    assert load_scene(copy) == scene


def write(folder, name, text):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def test_check_names_each_mistake_in_one_line(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("igl")
    box = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    trimesh.Trimesh(box.vertices, box.faces[:-2]).export(tmp_path / "open.obj")
    (tmp_path / "nan.obj").write_text("v nan 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    (tmp_path / "notes.obj").write_text("these are notes\n")
    trimesh.creation.icosphere(3, radius=40.0).export(tmp_path / "boulder.ply")
    mesh = '[[objects]]\nshape = "mesh"\nfile = "{}"\n'
    sphere = '[[objects]]\nshape = "sphere"\nradius = {}\n'
    moving = sphere.format(1) + "motion = {{ points = [[20, 0, 0], [25, 0, 0]], times = {} }}\n"
    covers = "objects[0] with the avoidance.margin covers every spawn point"
    cases = {
        "shape.toml": ('[[objects]]\nshape = "spehre"\nradius = 1\n',
                       "objects[0].shape must be one of 'mesh', 'box', 'sphere', 'cylinder', 'capsule', "
                       "'torus', 'plane', 'heightfield' (got 'spehre'); did you mean 'sphere'?"),
        "key.toml": ('[[objects]]\nshape = "sphere"\nraduis = 1\n',
                     "objects[0].raduis: unknown key; did you mean objects[0].radius?"),
        "size.toml": ('[[objects]]\nshape = "torus"\nradius = 3\n',
                      "objects[0].tube is required for a torus: the radius of its tube"),
        "scale.toml": (sphere.format(1) + "position = [20, 0, 0]\nscale = 0\n",
                       "objects[0].scale must be a number or 3 numbers, each from 1e-06 to 1e+06 (got 0.0)"),
        "nan.toml": (sphere.format("nan"), "objects[0].radius must be a number > 0 (got nan)"),
        "motion.toml": (moving.format("[2, 1]"),
                        "objects[0].motion.times must increase from each keyframe to the next (got 2 then 1"),
        "lengths.toml": (moving.format("[0, 1, 2]"),
                         "objects[0].motion.times has 3 values but .motion.points has 2; they go in pairs"),
        "covers.toml": ('[[objects]]\nshape = "box"\nsize = [40, 40, 40]\n',
                        covers + ": the initial ball of radius 15"),
        "missing.toml": (mesh.format("nowhere.obj"), f"objects[0].file: {tmp_path}/nowhere.obj: no such"),
        "notmesh.toml": (mesh.format("notes.obj"), "notes.obj: holds no triangles"),
        "nanmesh.toml": (mesh.format("nan.obj"), "nan.obj: has vertices that are not finite numbers"),
        "open.toml": ('arena.shape = "none"\n' + mesh.format("open.obj") + 'role = "arena"\n',
                      "open.obj: is open (not watertight): an arena mesh must be closed"),
        "boulder.toml": (mesh.format("boulder.ply"), covers),
        # its size said, for a mesh made in other units (millimetres): the game-developer walk
        "boulder-across.toml": (mesh.format("boulder.ply"),
                                "; the mesh is 81.36 units across (scale it to the world's units)"),
    }  # fmt: skip
    for name, (text, _) in cases.items():
        write(tmp_path, name, text)
    out = flock3d("check", *cases, cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == len(cases), out.stderr
    for (name, (_, message)), line in zip(cases.items(), lines, strict=True):
        assert line.startswith(f"{name}: ") and message in line, (name, line)


def test_check_passes_a_world_and_names_its_arena(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("igl")
    trimesh.creation.box(extents=(50.0, 30.0, 50.0)).export(tmp_path / "hall.glb")
    trimesh.creation.capsule(height=6.0, radius=1.5).export(tmp_path / "pillar.obj")
    write(tmp_path, "hall.toml", """
        arena.shape = "none"
        [[objects]]
        shape = "mesh"
        file = "hall.glb"
        role = "arena"
        [[objects]]
        shape = "mesh"
        file = "pillar.obj"
        position = [5, 0, 0]
        [[objects]]
        shape = "box"
        size = [2, 2, 2]
        position = [-5, 0, 0]
        """)  # fmt: skip
    out = flock3d("check", "hall.toml", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "a mesh arena, with 2 objects" in out.stdout


def test_old_obstacles_stay_spheres_beside_objects():
    text = '[[obstacles]]\ncenter = [20, 0, 0]\nradius = 2\n[[objects]]\nshape = "sphere"\nradius = 2\n'
    scene = parse_scene(text + "position = [-20, 0, 0]\n")
    assert scene.params.obstacles[0].radius == 2.0 and scene.params.objects[0].position == (-20.0, 0.0, 0.0)
    with pytest.raises(SceneError, match=r"objects\[0\] is the arena: it needs arena.shape 'none'"):
        parse_scene('[[objects]]\nshape = "box"\nsize = [90, 90, 90]\nrole = "arena"\n')


def test_the_readme_world_is_a_valid_scene():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    text = readme.split("A world is made of", 1)[1].split("```toml", 1)[1].split("```", 1)[0]
    scene = parse_scene(text, "README world")
    assert [o.shape for o in scene.params.objects] == ["capsule", "box", "torus"]


def test_a_flock_made_from_a_mesh_scene_starts_outside_its_meshes(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("igl")
    import numpy as np

    from flock3d import Flock

    trimesh.creation.icosphere(3, radius=4.0).export(tmp_path / "rock.obj")
    write(tmp_path, "rock.toml", '[[objects]]\nshape = "mesh"\nfile = "rock.obj"\nposition = [6, 0, 0]\n')
    scene = load_scene(tmp_path / "rock.toml")
    flock = Flock.from_scene(scene)
    assert flock.fields is scene.fields and set(scene.fields) == {0}
    assert (
        np.linalg.norm(flock.positions - (6, 0, 0), axis=1).min() >= 4.0 + 0.9
    )  # the margin, less the grid's error
    with pytest.raises(ValueError, match=r"objects\[0\] \(mesh\) needs its mesh's distance grid"):
        Flock(scene.params)
    out = flock3d("run", "rock.toml", "--steps", "5", "--no-progress", cwd=tmp_path)
    assert out.returncode == 0, out.stderr


def test_a_mesh_scene_without_the_world_extra_says_which_to_install(tmp_path):
    import subprocess
    import sys

    (tmp_path / "rock.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    write(tmp_path, "rock.toml", '[[objects]]\nshape = "mesh"\nfile = "rock.obj"\nposition = [20, 0, 0]\n')
    code = (
        "import sys\n"
        "for m in ('trimesh', 'igl', 'imageio'): sys.modules[m] = None\n"
        "from flock3d.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, "check", "rock.toml"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip() == (
        f"rock.toml: objects[0].file: {tmp_path / 'rock.obj'}: a mesh needs the world extra (missing "
        "trimesh, igl, imageio): python -m pip install 'flock3d[world]'"
    )


def test_the_scene_browser_lists_the_worlds_it_cannot_read_without_the_world_extra():
    import json
    import subprocess
    import sys

    code = (
        "import sys, json\n"
        "for m in ('trimesh', 'igl'): sys.modules[m] = None\n"
        "from flock3d.viewer.scene_browser import scene_entries\n"
        "print(json.dumps(scene_entries()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    entries = {name: description for name, _, description in json.loads(out.stdout)}
    assert set(entries) == set(shipped_scenes())
    needing = {name for name, description in entries.items() if "flock3d[world]" in description}
    assert {"worlds/canyon", "worlds/cave", "worlds/valley"} <= needing
    assert "default" not in needing and "worlds/city" not in needing  # primitives need no extra


def test_a_world_read_from_files_is_checked_without_compiling(tmp_path):
    # Its start region's check measures the objects by the readable distances: on a fresh install
    # (an empty numba cache) the scene is judged at once, without the 3-4 s compile of the compiled
    # distances, which placing the boids then compiles beside the step (flock3d.core.assemble).
    import subprocess
    import sys

    from helpers import process_env

    code = (
        "from flock3d.core import compiling\n"
        "from flock3d.scene import resolve_scene\n"
        "with compiling.forbidden():\n"
        "    scene = resolve_scene('worlds/canyon')\n"
        "print(scene.fields is not None)\n"
    )
    empty = {"NUMBA_CACHE_DIR": str(tmp_path / "numba"), "FLOCK3D_CACHE_DIR": str(tmp_path / "steps")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=process_env(empty)
    )
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr[-2000:]
