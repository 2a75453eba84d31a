"""Editing the world in the viewer, without a window: every edit applied between steps, undone
exactly, and saved as a scene file that loads back as the same world."""

import textwrap

import numpy as np
import pytest

from flock3d.scene import load_scene, parse_scene
from flock3d.viewer.editing import Selection, WorldEditor
from flock3d.viewer.session import Session

WORLD = textwrap.dedent(
    """
    name = "edit me"
    arena.shape = "none"
    arena.radius = 30.0
    flock.count = 60
    flock.init_radius = 12.0

    [[objects]]
    shape = "plane"
    position = [0, -20, 0]

    [[objects]]
    shape = "box"
    size = [4, 4, 4]
    position = [16, 0, 0]
    color = "#aa3300"

    [[objects]]
    shape = "sphere"
    radius = 2
    motion = { points = [[0, 16, 0], [4, 16, 0], [0, 16, 0]], times = [0, 2, 4], loop = true }

    [[attractors]]
    position = [0, 0, 10]
    weight = 0.5
    """
)


@pytest.fixture
def editor() -> WorldEditor:
    return WorldEditor(Session(parse_scene(WORLD)))


@pytest.mark.slow
def test_edits_saved_load_back_as_the_same_world(editor, tmp_path):
    session = editor.session
    session.advance(0.2)  # the boids fly while the world is edited
    editor.move(Selection("object", 1), (10.0, 2.0, -3.0))
    editor.set_rotation(1, (30.0, 10.0, 0.0))
    editor.set_scale(1, 1.5)
    shift = np.subtract((0.0, 10.0, 0.0), editor.origin(2))
    editor.move(Selection("object", 2), (0.0, 10.0, 0.0))  # a moving object: its whole path moves
    np.testing.assert_allclose(editor.origin(2), (0.0, 10.0, 0.0))
    editor.add_object("torus", (0.0, -20.0, 8.0), size=6.0)
    editor.add_object("capsule", (-8.0, -20.0, 0.0), size=6.0)
    editor.add_attractor((5.0, 5.0, 5.0))
    editor.delete(Selection("object", 4))  # the capsule
    session.advance(0.2)
    assert session.snapshot().step_count > 0

    path = session.current_scene().save(tmp_path / "edited.toml")
    loaded = load_scene(path)
    assert loaded.params == session.params  # every object and attractor, exactly
    assert loaded.params.objects[1] == session.params.objects[1]._replace(
        position=(10.0, 2.0, -3.0), rotation=(30.0, 10.0, 0.0), scale=1.5
    )
    np.testing.assert_allclose(
        loaded.params.objects[2].motion.points, [[0, 16, 0], [4, 16, 0], [0, 16, 0]] + shift
    )
    assert [o.shape for o in loaded.params.objects] == ["plane", "box", "sphere", "torus"]
    torus = loaded.params.objects[3]
    assert torus.position == pytest.approx((0.0, -20.0 + torus.tube, 8.0))  # resting on the clicked ground
    assert (
        loaded.params.attractors[1].position == (5.0, 5.0, 5.0) and loaded.params.attractors[1].weight == 0.5
    )


def test_undo_restores_each_world_in_turn(editor):
    session = editor.session
    worlds = [session.world()]
    edits = [
        lambda: editor.move(Selection("object", 1), (1.0, 2.0, 3.0)),
        lambda: editor.add_object("sphere", (0.0, 0.0, 0.0), size=2.0, resting=False),
        lambda: editor.add_predator((3.0, 0.0, 0.0)),
        lambda: editor.move(Selection("attractor", 0), (0.0, 0.0, -10.0)),
        lambda: editor.delete(Selection("object", 0)),
        lambda: editor.set_scale(0, 2.0),
    ]
    for edit in edits:
        edit()
        worlds.append(session.world())
    assert session.params.predator_count == 1
    np.testing.assert_array_equal(session.flock.state.predator_positions, [[3.0, 0.0, 0.0]])
    for world in reversed(worlds[:-1]):
        assert editor.undo()
        assert session.world() == world
    assert not editor.undo() and session.params == parse_scene(WORLD).params


def test_a_drag_moves_on_the_ground_plane_or_with_the_modifier_straight_up(editor):
    session = editor.session
    box = Selection("object", 1)
    start = editor.position_of(box)  # (16, 0, 0)
    grabbed = start + (0.0, 2.0, 0.0)  # its top face
    editor.begin_drag(box, grabbed)
    eye = np.array([16.0, 40.0, 30.0])
    into = -eye / np.linalg.norm(eye)

    def ray_to(point):
        d = np.asarray(point) - eye
        return eye, d / np.linalg.norm(d)

    assert editor.drag_to(*ray_to((20.0, 2.0, 5.0)), into)
    np.testing.assert_allclose(editor.position_of(box), (20.0, 0.0, 5.0))  # the grabbed point followed, level
    assert editor.drag_to(*ray_to((20.0, 9.0, 5.0)), into, vertical=True)
    np.testing.assert_allclose(
        editor.position_of(box), (20.0, 7.0, 5.0), atol=1e-9
    )  # only its height changed
    editor.end_drag()
    assert len(editor.undo_stack) == 1  # one entry for the whole drag
    editor.undo()
    np.testing.assert_allclose(editor.position_of(box), start)
    assert session.params.objects[1].position == (16.0, 0.0, 0.0)


def test_a_refused_edit_changes_nothing(editor):
    session = editor.session
    before = session.world()
    with pytest.raises(ValueError, match="scale"):
        editor.set_scale(1, 0.0)
    with pytest.raises(ValueError, match="covers every spawn point"):
        editor.add_object("sphere", (0.0, 0.0, 0.0), size=80.0, resting=False)
    assert session.world() == before and editor.undo_stack == [] and editor.selection is None


@pytest.mark.slow
def test_a_mesh_keeps_its_grid_when_the_objects_before_it_go(tmp_path, monkeypatch):
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("igl")
    monkeypatch.setenv("FLOCK3D_CACHE_DIR", str(tmp_path / "cache"))
    trimesh.creation.box(extents=(4.0, 4.0, 4.0)).export(tmp_path / "rock.obj")
    scene_file = tmp_path / "rocks.toml"
    scene_file.write_text(
        WORLD.replace('shape = "plane"', 'shape = "mesh"\nfile = "rock.obj"').replace(
            "[0, -20, 0]", "[-16, 0, 0]"
        )
    )
    editor = WorldEditor(Session(load_scene(scene_file)))
    session = editor.session
    grid = session.current_scene().fields[0]
    editor.delete(Selection("object", 1))  # renumbers nothing before the mesh
    editor.move(Selection("object", 0), (-14.0, 1.0, 0.0))  # moved: the same grid
    editor.add_object("box", (0.0, -10.0, 0.0), size=3.0)
    editor.set_rotation(0, (45.0, 0.0, 0.0))
    assert session.current_scene().fields == {0: grid}
    world = session.world()
    session.set_world(world._replace(objects=(world.objects[2], world.objects[0], world.objects[1])))
    assert set(session.current_scene().fields) == {1} and session.current_scene().fields[1] is grid
    objects = list(session.params.objects)
    objects[1] = editor.rescaled(1, 2.0)
    session.read_fields(objects)  # as the window reads it, beside its event loop, before the edit
    import flock3d.io.meshes

    monkeypatch.setattr(flock3d.io.meshes, "object_fields", lambda *a, **k: pytest.fail("read again"))
    editor.set_scale(1, 2.0)  # rescaled: a grid of its own, read above
    assert session.current_scene().fields[1].cell == pytest.approx(2.0 * grid.cell)
    session.reset()  # a new flock from the edited world starts outside its mesh
    session.advance(0.1)


@pytest.mark.slow
def test_undoing_an_object_edit_leaves_the_predators_flying(editor):
    session = editor.session
    editor.add_predator((0.0, 5.0, 0.0))
    editor.move(Selection("object", 1), (18.0, 0.0, 0.0))
    session.advance(0.2)  # the predator flies on
    flown = session.world().predators[0].copy()
    assert editor.undo()  # the object's move, not the predator's flight
    assert session.params.objects[1].position == (16.0, 0.0, 0.0)
    np.testing.assert_array_equal(session.world().predators[0], flown)
    # A press and release on a still object while the predator flies is no edit.
    editor.begin_drag(Selection("object", 1), (16.0, 0.0, 0.0))
    session.advance(0.2)
    editor.end_drag()
    assert len(editor.undo_stack) == 1  # the predator's adding alone


def test_an_edit_that_leaves_no_room_in_a_mesh_world_is_refused(tmp_path):
    pytest.importorskip("trimesh")
    pytest.importorskip("igl")
    from flock3d.scene import resolve_scene

    editor = WorldEditor(Session(resolve_scene("worlds/cave")))
    with pytest.raises(ValueError, match="covers every spawn point"):
        editor.add_object("sphere", (0.0, 0.0, 0.0), size=400.0, resting=False)
    assert editor.undo_stack == []
