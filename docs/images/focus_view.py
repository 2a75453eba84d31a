"""Takes docs/images/focus.png: the viewer's whole window, one boid in focus.

    xvfb-run -s "-screen 0 1280x800x24" python docs/images/focus_view.py

(The others are offscreen renders: ``flock3d render default --start 20 --size 1280x800
--out docs/images/default.png``, the same for ``murmuration`` with ``--start 40``, and for
each world ``flock3d render worlds/NAME --start 15 --size 1280x800 --out
docs/images/NAME.png``.)
"""

import time
from pathlib import Path

import numpy as np
import vispy

vispy.use(app="pyside6", gl="gl+")
from vispy import app  # noqa: E402

from flock3d.scene import resolve_scene  # noqa: E402
from flock3d.viewer.app import ViewerWindow  # noqa: E402

HERE = Path(__file__).resolve().parent


def pump(application, seconds: float) -> None:
    end = time.time() + seconds
    while time.time() < end:
        application.process_events()
        time.sleep(0.01)


def main() -> None:
    application = app.use_app()
    application.create()
    window = ViewerWindow(resolve_scene("default"), output_dir=HERE, dialogs=False)
    window.window.showMaximized()
    pump(application, 12.0)  # the flock orders itself
    positions = window.snapshot.state.positions
    middle = int(np.argmin(np.linalg.norm(positions - positions.mean(axis=0), axis=1)))
    window.set_focus(middle)  # a boid in the middle of the picture, its neighbours around it
    pump(application, 3.0)
    window.window.grab().save(str(HERE / "focus.png"))
    window.close()


if __name__ == "__main__":
    main()
