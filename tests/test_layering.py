"""The core needs no display and imports no graphics; imports flow one way."""

import ast
import pathlib
import subprocess
import sys

import pytest

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


def test_every_package_is_in_the_wheel():
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        ".".join(init.parent.relative_to(PACKAGE.parent).parts) for init in PACKAGE.rglob("__init__.py")
    }
    assert set(config["packages"]) == folders | set(config["package-dir"])


def test_core_imports_nothing_from_the_rest_of_flock3d():
    for path in (PACKAGE / "core").rglob("*.py"):
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


#: What `pip install flock3d` without extras leaves out (import names).
EXTRA_MODULES = ("vispy", "OpenGL", "PySide6", "imageio", "imageio_ffmpeg", "jupyter_rfb",
                 "matplotlib", "dask", "distributed", "pandas", "pyarrow", "trimesh", "igl", "pxr",
                 "pygltflib")  # fmt: skip


def flock3d_without_extras(*args, cwd) -> subprocess.CompletedProcess:
    """``flock3d ARGS`` in a process where none of the extras' modules can be imported."""
    code = (
        "import sys\n"
        f"for m in {EXTRA_MODULES!r}: sys.modules[m] = None\n"
        "from flock3d.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.mark.slow
def test_the_library_commands_need_no_extra(tmp_path):
    for args in (["run", "default", "--steps", "10", "--out", "x.h5"], ["metrics", "x.h5"],
                 ["check", "default"], ["scenes"]):  # fmt: skip
        out = flock3d_without_extras(*args, cwd=tmp_path)
        assert out.returncode == 0, (args, out.stderr)


@pytest.mark.slow
def test_a_command_needing_a_missing_extra_says_which_in_one_line(tmp_path):
    assert (
        flock3d_without_extras("run", "default", "--steps", "2", "--out", "x.h5", cwd=tmp_path).returncode
        == 0
    )
    cases = [
        (["view"], "flock3d view: needs the viewer extra (missing vispy, OpenGL, PySide6, imageio, "
                   "imageio_ffmpeg): python -m pip install 'flock3d[viewer]'"),
        (["render", "x.h5", "--out", "x.mp4"], "python -m pip install 'flock3d[viewer]'"),
        (["bench", "--viewer"], "flock3d bench: --viewer needs the viewer extra"),
        (["sweep", "default", "--param", "rules.alignment=1,2", "--steps", "2", "--out", "s.parquet"],
         "flock3d sweep: needs the sweep extra (missing dask, distributed, pandas, pyarrow): "
         "python -m pip install 'flock3d[sweep]'"),
        (["export", "x.h5", "--out", "x.usdc"],
         "flock3d export: x.usdc: .usdc export needs the export extra (missing pxr): "
         "python -m pip install 'flock3d[export]'"),
        (["export", "default", "--out", "x.glb"], "python -m pip install 'flock3d[export]'"),
        (["metrics", "x.h5", "--plot", "m.png"],
         "flock3d metrics: --plot needs the plot extra (missing matplotlib): "
         "python -m pip install 'flock3d[plot]'"),
    ]  # fmt: skip
    for args, message in cases:
        out = flock3d_without_extras(*args, cwd=tmp_path)
        assert out.returncode == 2 and "Traceback" not in out.stderr, (args, out.stderr)
        assert out.stderr.strip().splitlines() == [out.stderr.strip()] and message in out.stderr, out.stderr
    assert not (tmp_path / "s.parquet").exists() and not (tmp_path / "m.png").exists()
