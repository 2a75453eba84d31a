"""The system libraries Qt's X11 platform plugin (xcb) needs, checked before a window opens.

The PySide6 wheel ships Qt but not the X11 libraries its xcb plugin links to. When one is
missing, Qt blames libxcb-cursor0 whatever the missing one is, then aborts the process
(exit 134). So the window's start-up reads which libraries the plugin needs (the ELF file's
own list, read with pyelftools as the dynamic loader reads it: no ``ldd`` needed), tries to
load each one, and names those that fail with the Debian/Ubuntu packages that ship them.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from flock3d.errors import Flock3dError

__all__ = [
    "qt_platform",
    "xcb_plugin",
    "needed_libraries",
    "system_libraries",
    "missing_libraries",
    "debian_package",
    "check_xcb_libraries",
]

PLUGIN_NAME = "libqxcb.so"

#: Libraries whose Debian package breaks the naming rule of :func:`debian_package`.
_DEBIAN_PACKAGE_OF = {
    "libglib-2.0": "libglib2.0-0",
    "libgthread-2.0": "libglib2.0-0",
    "libgobject-2.0": "libglib2.0-0",
    "libgio-2.0": "libglib2.0-0",
    "libz": "zlib1g",
    "libgcc_s": "libgcc-s1",
    "libc": "libc6",
    "libm": "libc6",
    "libdl": "libc6",
    "libpthread": "libc6",
}


def qt_platform(environ: Mapping[str, str] = os.environ) -> str:
    """The platform plugin Qt will start with: ``QT_QPA_PLATFORM``'s first choice, else xcb
    under X11 (``DISPLAY`` set, no ``WAYLAND_DISPLAY``), else wayland (or "" without a display)."""
    chosen = environ.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip()
    if chosen:
        return chosen
    if environ.get("WAYLAND_DISPLAY"):
        return "wayland"
    return "xcb" if environ.get("DISPLAY") else ""


def xcb_plugin(environ: Mapping[str, str] = os.environ) -> Path | None:
    """Where Qt finds its xcb plugin: ``QT_QPA_PLATFORM_PLUGIN_PATH`` (which Qt honours too),
    else the ``platforms`` folder of PySide6's plugins; None if there is none."""
    folder = environ.get("QT_QPA_PLATFORM_PLUGIN_PATH")
    if not folder:
        try:
            from PySide6.QtCore import QLibraryInfo
        except ImportError:
            return None
        folder = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)) / "platforms"
    plugin = Path(folder) / PLUGIN_NAME
    return plugin if plugin.is_file() else None


def needed_libraries(path: str | Path) -> list[str]:
    """The libraries the ELF file ``path`` names as needed (its DT_NEEDED entries), in order.

    Read from its dynamic segment, as the dynamic loader reads them (pyelftools). An
    unreadable or non-ELF file needs nothing that can be told: [].
    """
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
    except ImportError:  # not on Linux, where the viewer extra does not bring it
        return []
    try:
        with open(path, "rb") as f:
            for segment in ELFFile(f).iter_segments():
                if segment.header.p_type == "PT_DYNAMIC":
                    return [tag.needed for tag in segment.iter_tags("DT_NEEDED")]
    except (OSError, ELFError):
        pass
    return []


def system_libraries(plugin: str | Path, qt_libraries: str | Path) -> list[str]:
    """The libraries ``plugin`` needs from the system, directly or through Qt's own libraries
    in the folder ``qt_libraries`` (which are followed; anything found there is Qt's)."""
    qt_libraries = Path(qt_libraries)
    found: list[str] = []
    seen: set[str] = set()
    pending = [Path(plugin)]
    while pending:
        for name in needed_libraries(pending.pop()):
            if name in seen:
                continue
            seen.add(name)
            bundled = qt_libraries / name
            if bundled.is_file():
                if name.startswith("libQt"):
                    pending.append(bundled)
            else:
                found.append(name)
    return found


def missing_libraries(names: Iterable[str], load: Callable[[str], object] = ctypes.CDLL) -> list[str]:
    """Those of the libraries ``names`` (sonames) that ``load`` (the dynamic loader) cannot load."""
    missing = []
    for name in names:
        try:
            load(name)
        except OSError:
            missing.append(name)
    return missing


def debian_package(soname: str) -> str:
    """The Debian/Ubuntu package that ships the library ``soname``, by Debian's rule: the
    library's name and its major version, with a hyphen between them when the name ends in
    a digit (libxcb-icccm.so.4 -> libxcb-icccm4, libxkbcommon-x11.so.0 -> libxkbcommon-x11-0)."""
    name, _, version = soname.partition(".so")
    name = name.lower()
    if name.startswith("ld-linux"):  # the dynamic loader itself
        return "libc6"
    if name in _DEBIAN_PACKAGE_OF:
        return _DEBIAN_PACKAGE_OF[name]
    major = version.lstrip(".").split(".")[0]
    if not major:
        return name
    return f"{name}-{major}" if name[-1].isdigit() else f"{name}{major}"


def check_xcb_libraries(
    plugin: str | Path | None = None, load: Callable[[str], object] = ctypes.CDLL
) -> None:
    """Raise a one-line :class:`Flock3dError` naming the libraries Qt's xcb plugin needs and
    cannot load, and the ``apt-get install`` that brings them.

    Args:
        plugin: the plugin to check; by default the one Qt would load (:func:`xcb_plugin`).
            Nothing to check (no plugin, no PySide6) raises nothing: Qt then reports for itself.
        load: the loader to try each library with.
    """
    if plugin is None:
        plugin = xcb_plugin()
        if plugin is None:
            return
    try:
        from PySide6.QtCore import QLibraryInfo
    except ImportError:
        qt_libraries = Path(plugin).parent
    else:
        qt_libraries = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.LibrariesPath))
    missing = missing_libraries(system_libraries(plugin, qt_libraries), load)
    if missing:
        packages = " ".join(dict.fromkeys(debian_package(name) for name in missing))
        raise Flock3dError(
            f"no window: Qt's X11 plugin cannot load {', '.join(missing)}; "
            f"on Debian or Ubuntu install them with: sudo apt-get install {packages}"
        )
