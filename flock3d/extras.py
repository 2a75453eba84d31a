"""The optional extras of ``pyproject.toml``: the modules each brings (by import name), and the
one line a call gets where one it needs is missing, naming the extra to install.

Checked before anything of the extra is imported: a missing vispy or Dask would otherwise fail
with a traceback, part way into the work.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from flock3d.errors import Flock3dError

__all__ = ["EXTRAS", "missing", "require"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "viewer": ("vispy", "OpenGL", "PySide6", "imageio", "imageio_ffmpeg"),
    "plot": ("matplotlib",),
    "sweep": ("dask", "distributed", "pandas", "pyarrow"),
    "world": ("trimesh", "igl", "imageio"),
}


def missing(extra: str, modules: Sequence[str] | None = None) -> list[str]:
    """The modules of ``extra`` (or those of it named in ``modules``) this install lacks."""
    return [m for m in modules or EXTRAS[extra] if importlib.util.find_spec(m) is None]


def require(
    extra: str, what: str = "", modules: Sequence[str] | None = None, error: type[Flock3dError] = Flock3dError
) -> None:
    """Raise ``error`` in one line where a module ``what`` needs is missing: "WHAT needs the
    EXTRA extra (missing M, ...): python -m pip install 'flock3d[EXTRA]'".

    Args:
        extra: the extra's name, a key of :data:`EXTRAS`.
        what: who needs it (a command, an option, a file), or "" where the caller says so.
        modules: the ones needed, if not all of the extra's.
        error: the class raised, a :class:`~flock3d.errors.Flock3dError`.
    """
    lacking = missing(extra, modules)
    if lacking:
        raise error(
            f"{what + ' ' if what else ''}needs the {extra} extra (missing {', '.join(lacking)}): "
            f"python -m pip install 'flock3d[{extra}]'"
        )
