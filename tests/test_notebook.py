"""The notebook viewer (flock3d.show) driven headless, and Flock._repr_png_."""

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest
from helpers import foreground_mask
from test_render_pixels import probe

pytestmark = pytest.mark.gui


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("jupyter_rfb") is None, reason="jupyter_rfb is not installed")
def test_the_notebook_widget_shows_a_playing_flock_with_its_controls(tmp_path):
    data = probe("notebook", tmp_path)
    for name in ("first", "playing", "uniform", "followed"):
        image = data[name]
        assert image.shape == (240, 320, 3), name
        lit = foreground_mask(image)
        assert 100 < lit.sum() < 0.5 * lit.size, name  # boids, not an empty (or a filled) frame
    assert not np.array_equal(data["first"], data["playing"])  # the flock moved between frames
    stepped, paused_at, still = data["steps"]
    assert stepped > 20 and still == paused_at  # playing steps; the pause button stops it
    # The colour control reached the renderer: one warm colour for every boid.
    px = data["uniform"][foreground_mask(data["uniform"])].astype(int)
    bright = px[px.max(axis=1) > 120]
    assert len(bright) > 50 and np.mean(bright[:, 0] > bright[:, 2]) > 0.9
    # The frame buffer's own output area (its callbacks' errors) last, inside the box.
    assert list(data["widgets"]) == ["CanvasBackend", "HBox", "HBox", "RFBOutputContext"]


needs_rfb = pytest.mark.skipif(
    importlib.util.find_spec("jupyter_rfb") is None, reason="jupyter_rfb is not installed"
)


def python(code: str, tmp_path) -> str:
    """Run ``code`` in a fresh interpreter (vispy binds one backend a process); its stdout."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    if out.returncode != 0 and "needs EGL" in out.stderr:
        pytest.skip("no EGL/OpenGL for offscreen rendering here")
    assert out.returncode == 0, out.stderr
    return out.stdout


@needs_rfb
def test_show_in_plain_python_prints_nothing(tmp_path):
    code = "import flock3d\nviewer = flock3d.show('default', size=(64, 48), play=False)\nviewer.close()\n"
    assert python(code, tmp_path) == ""


@pytest.mark.slow
@needs_rfb
def test_show_in_a_notebook_displays_one_output_the_viewer(tmp_path):
    code = """
import json
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
published = []
shell.display_pub.publish = lambda data, metadata=None, **kwargs: published.append(data)
cell = "import flock3d\\nviewer = flock3d.show('default', size=(64, 48), play=False)\\nviewer"
shell.run_cell(cell).raise_error()
viewer = shell.user_ns["viewer"]
shown = [d.get("application/vnd.jupyter.widget-view+json", {}).get("model_id") for d in published]
print(json.dumps({"shown": shown, "box": viewer.widget.model_id}))
viewer.close()
"""
    stdout = python(code, tmp_path)
    outputs = json.loads(stdout[stdout.index("{") :])  # after the shell's "Out[0]: " prompt
    assert outputs["shown"] == [outputs["box"]]  # the cell's value, and nothing before it


def test_a_flock_shows_itself_as_a_png_in_notebooks(tmp_path):
    image = probe("repr_png", tmp_path)["image"]
    assert image.shape[:2] == (360, 480)
    lit = foreground_mask(image[..., :3])
    assert 300 < lit.sum() < 0.5 * lit.size


def test_show_is_loaded_only_when_asked_for():
    import subprocess
    import sys

    code = (
        "import sys, flock3d\n"
        "assert not any(m.split('.')[0] in ('vispy', 'PySide6', 'jupyter_rfb') for m in sys.modules)\n"
        "from flock3d import show\n"
        "assert callable(show) and 'vispy' not in sys.modules\n"  # still nothing drawn, nothing loaded
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.slow
@needs_rfb
def test_the_viewer_s_controls_from_code_match_its_buttons_and_refuse_what_they_cannot_do(tmp_path):
    code = """
import json
import flock3d

flock = flock3d.Flock(flock3d.Params(count=30), seed=1)
viewer = flock3d.show(flock, size=(64, 48), play=True)
out = {"passed": viewer.flock is flock}
viewer.set_playing(False)
out["paused"] = [viewer.session.paused, viewer.controls["play"].value, viewer.controls["play"].description]
viewer.controls["play"].value = True  # the button plays again once set_playing paused it
out["button"] = viewer.session.paused
viewer.set_playing(False)
viewer.reset()
out["reset"] = [viewer.flock is flock, viewer.flock.step_count]
errors = []
for call in (lambda: viewer.set_camera("bogus"), lambda: flock3d.show(flock, seed=5),
             lambda: flock3d.show("default", size=(0, 0))):
    try:
        call()
    except (TypeError, ValueError) as error:
        errors.append(str(error))
out["errors"] = errors
viewer.close()
print(json.dumps(out))
"""
    out = json.loads(python(code, tmp_path).strip().splitlines()[-1])
    assert out["passed"] and out["paused"] == [True, False, "Play"] and out["button"] is False
    assert out["reset"] == [False, 0]  # a new flock from the same seed, which .flock names
    assert out["errors"] == [
        "camera must be one of orbit, arcball, follow (got 'bogus')",
        "seed is for a scene: a Flock shows its own state (Flock(params, seed) draws it)",
        "size must be from 16 to 8,192 (got 0)",
    ]
