"""The core needs no display and imports no graphics; imports flow one way, through the layers
README.md states."""

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


def flock3d_without_extras(
    *args, cwd, hidden: tuple[str, ...] = EXTRA_MODULES
) -> subprocess.CompletedProcess:
    """``flock3d ARGS`` in a process where none of the extras' modules (or of ``hidden``) can be
    imported."""
    code = (
        "import sys\n"
        f"for m in {hidden!r}: sys.modules[m] = None\n"
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
    # An experiment that renders, where matplotlib is installed but the viewer is not: refused
    # before any work (it raised vispy's ModuleNotFoundError after its first run: the researcher's walk)
    out = flock3d_without_extras("experiment", "agitation-waves", "--quick", "--out", "exp", cwd=tmp_path,
                                 hidden=("vispy", "OpenGL", "PySide6", "imageio_ffmpeg"))  # fmt: skip
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(
        "flock3d experiment: agitation-waves renders its flocks: needs the "
        "viewer extra (missing vispy, OpenGL, imageio_ffmpeg): python -m pip install"
    )
    assert not (tmp_path / "exp").exists()


# fmt: off
#: The layers of flock3d, lowest first, as README.md ("Layers") states them: a module imports
#: from its own layer and the ones before it. A name is a module or a package of flock3d and
#: stands for everything under it; the longest name that matches a module places it.
LAYERS: list[tuple[str, ...]] = [
    ("core",),  # numpy/numba only
    ("errors", "_version", "_command", "extras"),  # what every layer above the core names; Ctrl-C; extras
    # the world's files: meshes, heightfield images, distance grids
    ("io.meshes", "io.mesh_files", "io.sdf_grid", "io.grid_cache", "io.recorded_files", "io.world_extra",
     "io.worlds"),
    ("look",),  # how a flock and its world look, numpy/numba only
    # the library and the science
    ("flock", "flock_views", "stepping", "step_errors", "gpu", "boid", "rules", "runner", "metrics",
     "inference", "opacity", "experiments", "plots"),
    ("scene", "io"),  # scene files; trajectories, videos, tables, exports
    ("sweep", "bench"),  # tools that run scenes
    ("viewer",),  # the only package importing vispy/Qt
    ("cli",),  # the flock3d command
]
# fmt: on

#: Imports inside a function that reach above their module's layer, each for one call that
#: needs it, with the reason. Any other such import fails :func:`test_imports_flow_one_way`.
LAZY_UPWARD = {
    ("flock", "io.export"): "Flock.export writes a live flock through the exporters",
    ("flock_views", "viewer.offscreen"): "Flock._repr_png_ draws the flock in a notebook",
    ("experiments.agitation", "viewer.offscreen"): "agitation-waves measures its bands in rendered frames",
    ("experiments.agitation", "io.video"): "agitation-waves writes the video of its bands",
    ("experiments.agitation", "scene"): "agitation-waves gives the renderer its scene and look",
}


ROOT_IMPORTED = "flock3d/__init__.py, which imports most of flock3d"


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module`` (a dotted name under flock3d), None for the
    package's root (its facade, which imports from every layer)."""
    name = module.removeprefix("flock3d").removeprefix(".")
    best = None
    for index, names in enumerate(LAYERS):
        for layer_name in names:
            if (name == layer_name or name.startswith(layer_name + ".")) and (
                best is None or len(layer_name) > len(best[1])
            ):
                best = (index, layer_name)
    if best is None and name:
        raise AssertionError(f"flock3d.{name} is in no layer: add it to LAYERS and to README.md")
    return None if best is None else best[0]


def imports_by_place(path: pathlib.Path) -> list[tuple[str, str]]:
    """(imported module, where) for every flock3d import of ``path``: where is "module" (run on
    import, class bodies included), "function" (run when called) or "typing" (under
    ``if TYPE_CHECKING``, never run). ``from package import name`` is the submodule ``name`` when
    there is one, else the package itself."""
    found = []

    def names_of(node) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        if not node.module or node.level:
            return []
        folder = PACKAGE.parent.joinpath(*node.module.split("."))
        return [f"{node.module}.{a.name}" if (folder / a.name).is_dir() or (folder / f"{a.name}.py").exists()
                else node.module for a in node.names]  # fmt: skip

    def visit(nodes, where: str) -> None:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.extend((name, where) for name in names_of(node) if name.split(".")[0] == "flock3d")
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.body, "typing")
                visit(node.orelse, where)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(ast.iter_child_nodes(node), "function")
            else:
                visit(ast.iter_child_nodes(node), where)

    visit(ast.parse(path.read_text()).body, "module")
    return found


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_violations() -> list[str]:
    """One line per import of a module of :data:`PACKAGE` that breaks :data:`LAYERS`."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        if module == "flock3d":
            continue  # the facade: `import flock3d` gives the library's names from every layer
        own = layer_of(module)
        for name, where in imports_by_place(path):
            if where == "typing":
                continue
            if name == "flock3d":
                wrong.append(f"{module} imports the package root ({ROOT_IMPORTED})")
                continue
            target = layer_of(name)
            if target <= own:
                continue
            short = (module.removeprefix("flock3d."), name.removeprefix("flock3d."))
            if where == "function" and short in LAZY_UPWARD:
                continue
            wrong.append(f"{module} ({where}) imports {name}, a layer above it")
    return wrong


def test_imports_flow_one_way():
    assert layer_violations() == []


#: The one import circle left in the package, run only when called: Params is assembled from the
#: declarations, and reading a mapping of values field by field needs Params' own fields and defaults.
CIRCLE_ALLOWED = {("flock3d.core.declarations", "flock3d.core.params")}


def import_circles(skip=CIRCLE_ALLOWED) -> list[list[str]]:
    """The import circles among flock3d's modules (imports inside functions count; those under
    ``if TYPE_CHECKING`` do not): each a list of modules that import one another round."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        graph[module] = {
            name for name, where in imports_by_place(path)
            if where != "typing" and name != module and (module, name) not in skip
        }  # fmt: skip
    reach: dict[str, set[str]] = {}

    def reached(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    for module in graph:
        reach[module] = reached(module)
    circles = {frozenset(m for m in reach[a] if a in reach[m]) | {a} for a in graph if a in reach[a]}
    return sorted(sorted(c) for c in circles)


def test_no_import_circle_but_the_one_declared():
    assert import_circles() == []
    # the check sees the declared one
    assert import_circles(skip=set()) != []


def test_nothing_below_the_viewer_imports_it_when_imported():
    viewer = layer_of("flock3d.viewer")
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        if module == "flock3d" or layer_of(module) >= viewer:
            continue
        for name, where in imports_by_place(path):
            at_import = where == "module"
            assert not (at_import and layer_of(name) == viewer), f"{module} imports {name} at module level"


def test_the_layer_check_catches_an_import_of_the_root_and_of_a_layer_above(tmp_path, monkeypatch):
    # The check must be able to fail: a module of io naming the package root for its version,
    # or metrics importing the scene package, are what it exists to catch.
    io = tmp_path / "flock3d" / "io"
    io.mkdir(parents=True)
    (io / "probe.py").write_text("from flock3d import __version__\nfrom flock3d import metrics\n")
    (tmp_path / "flock3d" / "metrics.py").write_text("from flock3d.scene import Scene\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "flock3d")
    assert layer_violations() == [
        f"flock3d.io.probe imports the package root ({ROOT_IMPORTED})",
        "flock3d.metrics (module) imports flock3d.scene, a layer above it",
    ]


def test_the_readme_states_the_layers_the_test_checks():
    readme = (PACKAGE.parent / "README.md").read_text()
    section = readme[readme.index("## Layers") :]
    for names in LAYERS:
        line = ", ".join(names)
        assert line in section, f"README.md's Layers section does not list: {line}"


def model_names_written_outside_their_modules(package: pathlib.Path) -> list[str]:
    """Where a model's name is written as a string in the package outside ``core/models/``."""
    from flock3d.core.models import MODELS

    names = {f'"{model.name}"' for model in MODELS if model.name != "boids"}
    models = package / "core" / "models"
    found = []
    for path in sorted(package.rglob("*.py")):
        if models in path.parents:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found += [f"{path.relative_to(package.parent)}:{number}: {n}" for n in names if n in line]
    return found


def test_a_models_name_is_written_only_in_its_own_module(tmp_path):
    # A model is one module (issue 36): everything else asks the registry, so adding a model
    # touches nothing outside it. The check must see a name written elsewhere.
    assert model_names_written_outside_their_modules(PACKAGE) == []
    (tmp_path / "flock3d" / "core" / "models").mkdir(parents=True)
    (tmp_path / "flock3d" / "core" / "models" / "vicsek.py").write_text('name = "vicsek"\n')
    (tmp_path / "flock3d" / "panel.py").write_text('if model == "vicsek":\n    pass\n')
    assert model_names_written_outside_their_modules(tmp_path / "flock3d") == ['flock3d/panel.py:1: "vicsek"']
