"""What `flock3d view` checks before Qt opens a window: the system libraries of Qt's X11 plugin."""

import os
import shutil
import subprocess
import sys

import pytest

from flock3d.errors import Flock3dError
from flock3d.viewer import xcb

PySide6 = pytest.importorskip("PySide6")


def qt_libraries() -> str:
    from PySide6.QtCore import QLibraryInfo

    return QLibraryInfo.path(QLibraryInfo.LibraryPath.LibrariesPath)


@pytest.fixture(scope="module")
def plugin():
    found = xcb.xcb_plugin({})
    if found is None:
        pytest.skip("this PySide6 has no xcb plugin")
    return found


@pytest.mark.skipif(shutil.which("readelf") is None, reason="no readelf to compare with")
def test_the_needed_libraries_are_the_ones_readelf_lists(plugin):
    for path in (plugin, os.path.join(qt_libraries(), "libQt6XcbQpa.so.6")):
        out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
        listed = [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]
        assert xcb.needed_libraries(path) == listed and len(listed) > 10


def test_a_file_that_is_not_a_library_needs_nothing(tmp_path):
    (tmp_path / "text.so").write_text("not an ELF file")
    assert xcb.needed_libraries(tmp_path / "text.so") == []
    assert xcb.needed_libraries(tmp_path / "absent.so") == []


def test_the_plugins_system_libraries_include_those_of_qts_xcb_library(plugin):
    names = xcb.system_libraries(plugin, qt_libraries())
    # The two a fresh Debian lacks, and libxcb-cursor, which only Qt's xcb library names.
    assert {"libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-cursor.so.0"} <= set(names)
    assert not any(name.startswith("libQt") for name in names)  # Qt's own are followed, not loaded


def test_a_library_that_does_not_load_is_named():
    assert xcb.missing_libraries(["libc.so.6", "libflock3d-absent.so.7", "libm.so.6"]) == [
        "libflock3d-absent.so.7"
    ]


def test_the_check_names_each_missing_library_and_its_package_in_one_line(plugin):
    def load(name):
        if name in ("libxcb-icccm.so.4", "libxcb-keysyms.so.1"):
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    with pytest.raises(Flock3dError) as error:
        xcb.check_xcb_libraries(plugin, load=load)
    message = str(error.value)
    assert "\n" not in message
    assert "libxcb-icccm.so.4, libxcb-keysyms.so.1" in message
    assert message.endswith("sudo apt-get install libxcb-icccm4 libxcb-keysyms1")
    xcb.check_xcb_libraries(plugin, load=lambda name: None)  # all there: nothing to say


@pytest.mark.parametrize(
    ("soname", "package"),
    [
        ("libxcb-icccm.so.4", "libxcb-icccm4"),
        ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
        ("libxcb-render-util.so.0", "libxcb-render-util0"),
        ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),  # a name ending in a digit: a hyphen
        ("libX11-xcb.so.1", "libx11-xcb1"),
        ("libdbus-1.so.3", "libdbus-1-3"),
        ("libglib-2.0.so.0", "libglib2.0-0"),
        ("libz.so.1", "zlib1g"),
    ],
)
def test_debian_package_names(soname, package):
    assert xcb.debian_package(soname) == package


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dpkg") is None, reason="not a Debian system")
def test_every_package_named_is_the_one_dpkg_says_ships_the_library(plugin):
    names = xcb.system_libraries(plugin, qt_libraries())
    out = subprocess.run(["dpkg", "-S", *names], capture_output=True, text=True).stdout
    owners: dict[str, set[str]] = {}
    for line in out.splitlines():
        packages, path = line.split(": ", 1)
        owners.setdefault(os.path.basename(path), set()).update(p.split(":")[0] for p in packages.split(", "))
    known = [name for name in names if name in owners]
    assert len(known) > 15
    for name in known:
        assert xcb.debian_package(name) in owners[name], name


@pytest.mark.parametrize(
    ("environ", "platform"),
    [
        ({"DISPLAY": ":0"}, "xcb"),
        ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "xcb"}, "xcb"),
        ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, "wayland"),
        ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "QT_QPA_PLATFORM": "xcb"}, "xcb"),
        ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, "offscreen"),
        ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "wayland;xcb"}, "wayland"),
        ({}, ""),
    ],
)
def test_the_platform_qt_starts_with(environ, platform):
    assert xcb.qt_platform(environ) == platform


def test_view_without_the_xcb_libraries_says_which_to_install(plugin, tmp_path):
    if not os.environ.get("DISPLAY"):
        pytest.skip("no X display: install xvfb (the pytest-xvfb plugin then starts one)")
    # A file that is not a library, found first on the loader's path, hides the real one: what
    # Qt met on a fresh Debian machine (it then blamed libxcb-cursor0 and aborted, exit 134).
    for name in ("libxcb-icccm.so.4", "libxcb-keysyms.so.1"):
        (tmp_path / name).write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("LD_LIBRARY_PATH")]))
    out = subprocess.run(
        [sys.executable, "-m", "flock3d.cli", "view"], capture_output=True, text=True, timeout=300, env=env
    )
    assert out.returncode == 2, (out.returncode, out.stderr)
    [line] = out.stderr.strip().splitlines()
    assert "libxcb-icccm.so.4, libxcb-keysyms.so.1" in line
    assert line.endswith("sudo apt-get install libxcb-icccm4 libxcb-keysyms1")
