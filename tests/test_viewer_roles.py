"""The viewer's roles without a window: the HUD's text, picking a boid, a recording's pace."""

import math

import numpy as np
import pytest

from flock3d import Params
from flock3d.core.state import FlockState
from flock3d.scene.schema import COLOR_MODES
from flock3d.viewer.hud import (
    COMPILING_TEXT,
    HELP_TEXT,
    HUD_INTERVAL_S,
    HudMeter,
    Rates,
    notice_text,
    status_text,
)
from flock3d.viewer.picking import (
    CLICK_SLOP_PX,
    Clicks,
    focus_colors,
    pick,
    screen_positions,
    seen_by,
    thing_under,
)
from flock3d.viewer.recording import VideoClock, output_path, slug
from flock3d.viewer.session import Snapshot

IDENTITY = [1.0, 0.0, 0.0, 0.0]  # a boid heading +z


def snapshot(velocities, time=0.0, step_count=0, **params) -> Snapshot:
    v = np.asarray(velocities, dtype=float)
    n = len(v)
    state = FlockState(np.zeros((n, 3)), v, np.tile(IDENTITY, (n, 1)), time, step_count)
    return Snapshot(state, np.zeros((n, 3)), Params(count=max(n, 1), **params), 0)


# -- the HUD ----------------------------------------------------------------------------


def test_the_help_names_every_colour_mode_that_v_cycles_through():
    # It listed four while v cycled five (species was missing).
    line = next(line for line in HELP_TEXT.splitlines() if line.startswith("v "))
    assert line.endswith("(" + ", ".join(COLOR_MODES) + ")") and "species" in COLOR_MODES


def test_the_meter_measures_each_span_from_the_snapshots():
    meter = HudMeter(10.0, snapshot([[1, 0, 0]], time=2.0, step_count=120))
    for _ in range(15):
        meter.frame_drawn()
    assert not meter.due(10.0 + HUD_INTERVAL_S - 0.01) and meter.due(10.0 + HUD_INTERVAL_S)
    # Half a second: 15 frames, 30 steps of 1/60 s, a quarter of a simulated second at time scale 0.5.
    rates = meter.measure(10.5, snapshot([[1, 0, 0]], time=2.25, step_count=150), time_scale=0.5)
    assert rates == Rates(fps=30.0, steps_per_second=60.0, real_time_factor=pytest.approx(1.0))
    # The next span starts there: no frames yet; a reset's time going back counts as none passed.
    rates = meter.measure(11.0, snapshot([[1, 0, 0]], time=0.0, step_count=0), time_scale=1.0)
    assert rates.fps == 0.0 and rates.real_time_factor == 0.0
    assert meter.measure(11.5, snapshot([[1, 0, 0]]), time_scale=0.0).real_time_factor == 1.0


def test_a_flock_of_a_step_a_second_reads_one_step_a_second_and_a_fast_one_each_span():
    meter, now = HudMeter(0.0, snapshot([[1, 0, 0]], step_count=0)), 0.0
    rates = []
    for k in range(1, 41):  # ten seconds of quarter-second spans, a step at each whole second
        now = k * HUD_INTERVAL_S
        rates.append(meter.measure(now, snapshot([[1, 0, 0]], step_count=int(now)), 1.0).steps_per_second)
    assert all(r == pytest.approx(1.0, abs=0.34) for r in rates[12:])  # 0 and 4 by turns, per span alone
    # A fast flock: each span's own count (600 steps/s, then 120 once it slowed).
    assert (
        meter.measure(now + 0.25, snapshot([[1, 0, 0]], step_count=10 + 150), 1.0).steps_per_second == 600.0
    )
    assert meter.measure(now + 0.5, snapshot([[1, 0, 0]], step_count=10 + 180), 1.0).steps_per_second == 120.0
    slow = status_text(snapshot([[1, 0, 0]], dt=1.0), Rates(60, 1.0, 1.0), paused=False, first_step_done=True,
                       recording=False)  # fmt: skip
    assert slow.startswith("60 fps   1.0 steps/s   t ")


def test_the_status_line_says_the_rates_the_flock_and_its_order():
    snap = snapshot([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0]], time=12.34, step_count=740, fov=270.0,
                    max_turn_rate=180.0)  # fmt: skip
    text = status_text(snap, Rates(59.6, 1234.4, 1.0), paused=False, first_step_done=True, recording=False)
    # Two boids each way: polarization |(2, 2, 0)| / 4 = 0.71.
    assert text == "60 fps   1,234 steps/s   t 12.3 s   N 4   FOV 270°   turn 180°/s   P 0.71   [h: help]"
    paused = status_text(snap, Rates(30, 0, 0.0), paused=True, first_step_done=True, recording=True)
    assert "paused   t 12.3 s" in paused and paused.endswith("P 0.71   ● REC   [h: help]")
    assert "cannot keep up" not in paused  # paused is not slow
    slow = Rates(4, 3.1, 0.05)
    assert "cannot keep up" in status_text(snap, slow, paused=False, first_step_done=True, recording=False)
    waiting = status_text(snap, slow, paused=False, first_step_done=True, recording=False, compiling=True)
    assert "cannot keep up" not in waiting  # a step waiting on a compile: the notice says it compiles
    # The turn rate in whole degrees a second, as the panel shows it (the = key made 1676.38).
    tuned = snapshot([[1, 0, 0]], max_turn_rate=1676.3818)
    assert "turn 1676°/s" in status_text(
        tuned, Rates(30, 30, 1.0), paused=False, first_step_done=True, recording=False
    )


def test_the_status_line_says_when_the_flock_cannot_keep_up():
    snap = snapshot([[1, 0, 0]], time=5.0, step_count=300)
    slow = status_text(snap, Rates(60, 30, 0.5), paused=False, first_step_done=True, recording=False)
    assert "30 steps/s  (x0.50 real time: cannot keep up)   t 5.0 s" in slow
    keeping_up = Rates(60, 57, 0.96)
    compiling = dict(paused=False, first_step_done=False, recording=False)
    running = dict(paused=False, first_step_done=True, recording=False)
    bursts = snapshot([[1, 0, 0]], 5.0, 5, dt=1.0)  # steps of a second come in bursts
    for kept_up in (
        status_text(snap, keeping_up, **running),
        status_text(snap, Rates(60, 0, 0.0), **compiling),
        status_text(bursts, Rates(60, 0, 0.0), **running),
    ):
        assert "cannot keep up" not in kept_up


def test_the_status_line_of_an_empty_flock_and_an_unlimited_turn_rate():
    text = status_text(snapshot(np.zeros((0, 3)), max_turn_rate=math.inf), Rates(60, 0, 1.0), paused=False,
                       first_step_done=True, recording=False)  # fmt: skip
    assert "N 0" in text and "turn ∞°/s" in text and "P –" in text  # no boids, no order: not "nan"


def test_the_notice_says_a_stopped_simulation_before_a_compile():
    assert notice_text(None, compiling=False) == ""
    assert notice_text(None, compiling=True) == COMPILING_TEXT
    assert notice_text(RuntimeError("boom"), compiling=True) == "the simulation stopped: boom"


# -- picking ----------------------------------------------------------------------------


class Camera:
    """A pinhole camera at the origin looking down -z, 90 degrees across, on a 400 x 200
    canvas (y down), as vispy's node transforms map points: to (x w, y w, z w, w), w = -z."""

    def map(self, points):
        p = np.asarray(points, dtype=float)
        w = -p[:, 2]
        x, y = 200.0 * w + 200.0 * p[:, 0], 100.0 * w - 100.0 * p[:, 1]
        return np.stack([x, y, p[:, 2] * w, w], axis=1)


def test_screen_positions_by_perspective_and_nothing_behind_the_camera():
    points = [[0, 0, -5], [1, 0, -2], [0, 1, -4], [0, 0, 5]]
    xy = screen_positions(Camera(), np.array(points, dtype=float))
    np.testing.assert_allclose(xy[:3], [[200, 100], [300, 100], [200, 75]])
    assert np.all(np.isnan(xy[3]))


def test_a_click_picks_the_boid_drawn_nearest_within_the_radius():
    screen = screen_positions(Camera(), np.array([[0, 0, -5], [1, 0, -2], [0, 0, 5]], dtype=float))
    assert pick(screen, (296, 103)) == 1
    assert pick(screen, (205, 100)) == 0
    assert pick(screen, (250, 100)) is None  # 50 pixels from either
    assert pick(screen, (250, 100), radius_px=60) == 0  # as far from both: the first
    assert pick(screen[2:], (200, 100)) is None  # only a boid behind the camera
    assert pick(np.zeros((0, 2)), (0, 0)) is None


class Scenery:
    """Drawn objects that the ray meets: object 1 at depth 5 along it."""

    def pick(self, origin, direction):
        return 1, 5.0


def test_a_press_on_the_selected_object_looks_through_a_boid_flying_across_it():
    # A boid drawn in front of the object at the pixel is what a click picks; a press that
    # would drag the selected object looks through it (it flaked the window's drag test).
    from flock3d.viewer.editing import Selection

    state = FlockState(
        np.array([[0.0, 0.0, -2.0]]), np.array([[0.0, 0.0, 1.0]]), np.array([IDENTITY]), 0.0, 0
    )
    ray = (np.zeros(3), np.array([0.0, 0.0, -1.0]))
    args = (ray, (200, 100), Camera(), Scenery(), state, Params(count=1), (np.zeros(3), 10.0))
    thing, point, surface = thing_under(*args)
    assert thing == ("boid", 0) and not surface
    thing, point, surface = thing_under(*args, boids=False)
    assert thing == Selection("object", 1) and surface
    np.testing.assert_allclose(point, [0.0, 0.0, -5.0])


def test_a_click_on_a_predator_among_the_flock_picks_the_predator_not_a_nearer_boid():
    # In the walk, a click on the hawk among the birds focused a boid a little nearer the camera,
    # and a drag from there orbited the camera instead of moving the hawk.
    from flock3d.viewer.editing import Selection

    state = FlockState(
        np.array([[0.0, 0.0, -2.0]]), np.array([[0.0, 0.0, 1.0]]), np.array([IDENTITY]), 0.0, 0
    )
    state.predator_positions = np.array([[0.0, 0.0, -3.0]])
    ray = (np.zeros(3), np.array([0.0, 0.0, -1.0]))
    args = (ray, (200, 100), Camera(), Scenery(), state, Params(count=1), (np.zeros(3), 10.0))
    thing, point, _ = thing_under(*args)
    assert thing == Selection("predator", 0)
    np.testing.assert_allclose(point, [0.0, 0.0, -3.0])
    state.predator_positions = np.array([[0.0, 0.0, -8.0]])  # behind the object: the object
    assert thing_under(*args)[0] == Selection("object", 1)


def test_a_click_over_nothing_is_a_point_within_what_is_framed():
    # Right-click "Add box here" inside a sphere's outline put the box where the ray met the
    # level plane, outside the arena (x = -64 for a world of radius 55): an edit that then said
    # "outside the arena". The point over nothing is now within the framed sphere.
    state = FlockState(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 4)), 0.0, 0)

    class Nothing:
        def pick(self, origin, direction):
            return -1, np.inf

    eye = np.array([0.0, 20.0, 100.0])
    framed = (np.zeros(3), 30.0)
    # Rays meeting the level plane inside the sphere, beyond it (40 and 32 from the centre, where
    # the old bound of 4 radii took the plane's point), and above the eye's height (not at all).
    targets = ([0.0, 0.0, 0.0], [25.0, 0.0, 0.0], [0.0, 0.0, -40.0], [28.0, 0.0, -12.0], [0.0, 28.0, 0.0])
    for target in targets:
        direction = (np.asarray(target) - eye) / np.linalg.norm(np.asarray(target) - eye)
        args = ((eye, direction), (0, 0), Camera(), Nothing(), state, Params(count=0), framed)
        thing, point, surface = thing_under(*args)
        assert thing is None and not surface
        assert np.linalg.norm(point) <= 30.0 + 1e-9, (target, point)
        assert np.linalg.norm(np.cross(point - eye, direction)) < 1e-9  # on the ray under the pixel


def test_a_drag_is_not_a_click():
    clicks = Clicks()
    assert not clicks.release((10, 10), 1)  # no press
    clicks.press((10, 10))
    assert not clicks.release((10, 10), 2)  # another button: still waiting for button 1
    assert clicks.release((10 + CLICK_SLOP_PX, 10), 1)
    clicks.press((10, 10))
    assert not clicks.release((10, 10 + CLICK_SLOP_PX + 1), 1)  # a drag orbits the camera


def test_the_focus_sees_what_the_step_sees_and_singles_it_out():
    # Boid 0 at the origin heading +z with a 180 degree cone of radius 5: boid 1 ahead is
    # seen, boid 2 behind and boid 3 beyond the view distance are not.
    positions = np.array([[0, 0, 0], [0, 1, 2], [0, 0, -1], [0, 0, 9.0]])
    state = FlockState(positions, np.tile([0, 0, 1.0], (4, 1)), np.tile(IDENTITY, (4, 1)), 0.0, 0)
    params = Params(count=4, view_distance=5.0, separation_distance=1.0, fov=180.0)
    np.testing.assert_array_equal(seen_by(state, params, 0), [1])
    np.testing.assert_array_equal(seen_by(state, params.replace(fov=360.0), 0), [1, 2])
    np.testing.assert_array_equal(seen_by(state, params.replace(fov=360.0, neighbours=1), 0), [2])  # nearest
    base = np.tile(np.array([1.0, 0.0, 0.0, 1.0], np.float32), (4, 1))
    colors = focus_colors(base, 0, seen_by(state, params, 0))
    assert tuple(colors[0]) == (1.0, 1.0, 1.0, 1.0) and tuple(colors[1]) == pytest.approx(
        (1.0, 0.95, 0.35, 1.0)
    )
    assert np.all(colors[2:, :3] != base[2:, :3]) and np.all(colors[2:, 3] == 1.0)  # faded, still opaque
    np.testing.assert_array_equal(base[:, 0], 1.0)  # the mode's colours are left alone


# -- recording --------------------------------------------------------------------------


def test_the_video_clock_keeps_the_simulations_pace_whatever_the_frame_rate():
    clock = VideoClock(t0=1.0, fps=30.0)
    assert clock.due(1.0) == 1  # the first frame, at once
    assert clock.due(1.0) == 0  # paused: nothing more
    assert clock.due(1.5) == 15  # a slow frame: repeated for the video frames it covers
    # Window frames at 120 per simulated second for 2 s: 60 video frames, whatever the step.
    assert sum(clock.due(1.5 + k / 120) for k in range(1, 241)) == 60
    # A reset sends the flock back to 0: the video goes on from there, at once.
    assert clock.due(0.0) == 1 and clock.due(1 / 30) == 1


def test_files_are_named_after_the_scene_and_the_time(tmp_path):
    assert slug("Couzin: torus (N = 300)") == "couzin-torus-n-300" and slug("§§") == "scene"
    path = output_path(tmp_path, "Default", ".png")
    assert path.parent == tmp_path and path.suffix == ".png"
    assert path.name.startswith("flock3d-default-") and len(path.stem) == len(
        "flock3d-default-20250101-120000"
    )
    # Several in one second: each a name of its own, none replacing one taken before.
    taken = []
    for _ in range(3):
        taken.append(output_path(tmp_path, "Default", ".png"))
        taken[-1].write_bytes(b"")
    stems = [p.stem for p in taken]
    if len({stem[:31] for stem in stems}) == 1:  # the same second (a tick between is possible)
        assert [stem[31:] for stem in stems] == ["", "-2", "-3"]
    assert len(set(taken)) == 3


# -- the panel's controls, by model ---------------------------------------------------------


def test_each_model_s_controls_apply_to_it_alone():
    pytest.importorskip("PySide6")
    from flock3d.core.models.ism import DEFAULTS as ISM_DEFAULTS
    from flock3d.viewer.panel import applies

    ism, boids = Params(**ISM_DEFAULTS), Params()
    own = ("ism_coupling", "ism_friction", "ism_temperature")
    assert all(applies(ism, f) for f in (*own, "speed", "view_distance", "arena_radius"))
    assert not any(applies(ism, f) for f in ("alignment", "separation", "noise_eta", "zone_repulsion"))
    assert not any(applies(boids, f) for f in own)
    assert all(applies(boids, f) for f in ("alignment", "arena_radius", "view_distance", "fov"))


def test_the_walls_controls_are_offered_only_where_there_are_walls():
    # In the cave (open space, an arena object) arena radius 3, confinement 90 and containment 200
    # changed nothing, yet their controls were offered.
    pytest.importorskip("PySide6")
    from flock3d.viewer.panel import applies

    walls = ("arena_radius", "confinement", "confinement_start", "containment")
    for shape, offered in (("sphere", walls), ("box", walls), ("periodic", ("arena_radius",)), ("none", ())):
        params = Params(arena_shape=shape)
        assert tuple(f for f in walls if applies(params, f)) == offered, shape
    # A box given its sides (as the worlds' are): its radius sets no wall (the game-developer walk)
    sided = Params(arena_shape="box", arena_size=(80.0, 40.0, 80.0))
    assert tuple(f for f in walls if applies(sided, f)) == walls[1:]
