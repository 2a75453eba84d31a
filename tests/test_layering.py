"""The core needs no display and imports no graphics; imports flow one way."""

import ast
import pathlib
import subprocess
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "flock3d"


def imported_modules(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_imports_nothing_from_the_rest_of_flock3d():
    for path in (PACKAGE / "core").glob("*.py"):
        for name in imported_modules(path):
            if name.startswith("flock3d"):
                assert name.startswith("flock3d.core"), f"{path.name} imports {name}"


def test_no_module_outside_the_viewer_imports_graphics():
    graphics = ("vispy", "PySide6", "OpenGL", "glfw")
    for path in PACKAGE.rglob("*.py"):
        if "viewer" in path.parts or "render" in path.parts:
            continue
        for name in imported_modules(path):
            assert not name.startswith(graphics), f"{path.relative_to(PACKAGE)} imports {name}"


def test_flock_runs_without_vispy_qt_or_a_display():
    code = (
        "import sys\n"
        "for m in ('vispy', 'PySide6', 'OpenGL', 'scipy'): sys.modules[m] = None\n"
        "import flock3d\n"
        "f = flock3d.Flock(flock3d.Params(count=50)); f.step(5)\n"
        "print(flock3d.metrics.polarization(f.velocities))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(pathlib.Path.home())}  # no DISPLAY
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert 0.0 <= float(out.stdout) <= 1.0
