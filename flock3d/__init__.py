"""flock3d: 3D flocking with object-oriented boids, a fast parallel kernel and a vispy viewer.

The model is described in ``docs/model.md``: boids in a spherical arena that see
neighbours within a view distance and a field-of-view cone, steer by
separation, alignment, cohesion and confinement, and turn at a limited rate. Your own
rules and forces (:func:`pair_rule`, :func:`force`) run in the same compiled step.

>>> import flock3d
>>> flock = flock3d.Flock(flock3d.Params(count=200), seed=1)
>>> flock.step(120)
>>> round(flock3d.metrics.polarization(flock.velocities), 2)  # doctest: +SKIP
0.41
"""

from flock3d import (
    _command,  # noqa: F401 - first: the command's Ctrl-C while the rest loads
    metrics,
)
from flock3d._version import __version__
from flock3d.boid import Boid
from flock3d.core import compiling
from flock3d.core.params import Params
from flock3d.core.state import FlockState
from flock3d.errors import Flock3dError, SimulationError
from flock3d.flock import Flock
from flock3d.rules import RuleError, force, load_rules, pair_rule
from flock3d.scene import Scene, load_scene

compiling.watch()  # a compile of seconds says so, from Python as from the command line

__all__ = [
    "Boid",
    "Flock",
    "FlockState",
    "Flock3dError",
    "Params",
    "RuleError",
    "Scene",
    "SimulationError",
    "experiments",
    "force",
    "inference",
    "io",
    "load_rules",
    "load_scene",
    "metrics",
    "opacity",
    "pair_rule",
    "show",
    "__version__",
]


def __getattr__(name: str):
    # flock3d.show loads the notebook viewer (vispy, jupyter_rfb) only when asked for:
    # the library itself imports no graphics.
    if name == "show":
        from flock3d.viewer.notebook import show

        return show
    # The modules the README names as flock3d.NAME, imported on first use as `import flock3d.io`
    # would: a plain `import flock3d` loads neither the experiments' registry nor h5py.
    if name in ("experiments", "inference", "io", "opacity"):
        import importlib

        return importlib.import_module(f"flock3d.{name}")
    raise AttributeError(f"module 'flock3d' has no attribute {name!r}")
