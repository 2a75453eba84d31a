"""The GPU engine (engine="gpu"): equal to the reference engine under numba's CUDA simulator,
the same bit for bit run after run, and one line for what it cannot run (here: no device).

The simulator must be chosen before numba is imported, and it hands the kernels' arrays to
flock3d's numba components as Python objects, which compiled code cannot take: so the cases run
in a process of their own with NUMBA_ENABLE_CUDASIM=1 and NUMBA_DISABLE_JIT=1
(``gpu_simulated.py``), a process for each batch of cases; the test processes keep their
compiled engines. At 60 to 120 boids and 3 steps a case takes 0.5 to 3 s there (a scene case
about 6 s: the scene's validation runs in Python too).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gpu_simulated import CASES, REPEATED, SCENE_CASES, SCRIPTED, apart, breeze
from helpers import assert_clean_failure, flock3d, once_per_run, process_env

from flock3d import Flock, Params, pair_rule
from flock3d.core.gpu.device import missing
from flock3d.core.params import Species
from flock3d.core.step.cuda_generate import DEFAULT_SHAPE
from flock3d.errors import EngineError, GpuError
from flock3d.gpu import kernel_source, refusal
from flock3d.rules import RuleError
from flock3d.scene import resolve_scene
from flock3d.step_errors import device_compile_error

HERE = Path(__file__).parent
needs_numba_cuda = pytest.mark.skipif(
    importlib.util.find_spec("numba_cuda") is None, reason="numba-cuda is not installed (flock3d[gpu])"
)
#: The cases run together in the quick suite; the rest are marked slow.
QUICK = ("defaults", "box, containment", "periodic", "periodic, 2 cells a side", "periodic 2D", "wander",
         "chain", "species", "predators", "forest (primitives, keep-out)", "rules: a pair rule and a force",
         "rules: a force fails", "rules, topological, adaptive", "topological, sphere",
         "topological, periodic", "perching", "adaptive radius", "vicsek 2D", "ism, topological", "couzin",
         "cucker-smale",
         "ism, topological (split+guard)", "aerodynamic, roost, perching", "escape", "attractors, one moving",
         "defaults (x1)",
         *SCRIPTED)  # fmt: skip


def python(*args: str, simulator: bool = True, cwd: Path = HERE) -> subprocess.CompletedProcess:
    """``python ARGS`` in a process of its own, under the CUDA simulator unless told (it must be
    chosen before numba is imported)."""
    simulate = {"NUMBA_ENABLE_CUDASIM": "1", "NUMBA_DISABLE_JIT": "1"} if simulator else {}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=900, cwd=cwd,
                          env=process_env(simulate))  # fmt: skip


def simulated(*cases: str) -> dict[str, dict]:
    """Each case's row of ``gpu_simulated.py``, run under the CUDA simulator."""
    out = python(str(HERE / "gpu_simulated.py"), *cases)
    assert out.returncode == 0, out.stderr[-3000:]
    return {row["case"]: row for row in map(json.loads, out.stdout.splitlines())}


#: Every case, in batches of at most BATCH (a simulator process each, made once a run and shared
#: by the suite's processes): a case in a process of its own paid about 2 s to start the simulator,
#: more than the case; a process that needs a batch another is making waits at most one batch.
BATCH = 8
ALL_CASES = [*CASES, *SCENE_CASES, *SCRIPTED]
_QUICK, _REST = [c for c in ALL_CASES if c in QUICK], [c for c in ALL_CASES if c not in QUICK]
BATCHES = {
    f"{kind}-{k}": tuple(map(str, part))
    for kind, cases in (("quick", _QUICK), ("rest", _REST))
    for k, part in enumerate(np.array_split(cases, -(-len(cases) // BATCH)))
}
MARKED = [c if c in QUICK else pytest.param(c, marks=pytest.mark.slow) for c in ALL_CASES]


def row_of(tmp_path_factory, case: str) -> dict:
    """Case ``case``'s row, from its batch (``BATCHES``), simulated once for the whole run."""
    name = next(name for name, cases in BATCHES.items() if case in cases)

    def make(path: Path) -> None:
        path.write_text(json.dumps(simulated(*BATCHES[name])))

    return json.loads(once_per_run(tmp_path_factory, f"gpu-{name}.json", make).read_text())[case]


@pytest.mark.slow
@needs_numba_cuda
@pytest.mark.parametrize("case", MARKED)
def test_the_gpu_engine_equals_the_reference_engine(case, tmp_path_factory):
    row = row_of(tmp_path_factory, case)
    assert row["positions"] < 1e-9 and row["velocities"] < 1e-9, row
    assert row["orientations"] < 1e-9 and row["predators"] < 1e-9, row  # as rotations (q and -q are one)
    assert row["carried"] < 1e-9, row  # the perching timers, adaptive radii, spins
    assert row["clock"] == [True, True], row
    assert row["same non-finite"] and row["same waypoints"], row
    gpu_error, ref_error = row["errors"]
    assert gpu_error == ref_error  # a failed step: the same message, the same state after it
    if case == "blow-up":
        assert gpu_error.startswith("SimulationError: step 2, boid 4: its position was already non-finite")
        assert row["steps"] == 2  # the call stopped after the step that failed
    elif case == "rules: a force fails":
        assert gpu_error.startswith("RuleError: step 1, boid ") and "force 'hole'" in gpu_error, gpu_error
        assert row["steps"] == 1
    else:
        assert row["steps"] == 3
    if case.startswith("perching"):  # some boids rest on the ground, others took off after resting
        resting, off = row["perched"]
        assert resting > 0 and off > 0, row
    if case == "escape":  # some birds saw the predator, others copied their neighbours' escapes
        escaped, copied = row["escaped"]
        assert escaped > copied > 0, row


@pytest.mark.slow
@needs_numba_cuda
@pytest.mark.parametrize("case", REPEATED)
def test_a_gpu_run_is_the_same_bit_for_bit_run_after_run(case, tmp_path_factory):
    # Each boid sums its neighbours in the order of (cell, index): the sort's atomic slots are
    # put back in that order, and no floating-point sum is atomic. The second run takes its
    # steps in two calls: the grid is sized at the same steps of the flock's count.
    assert row_of(tmp_path_factory, case)["repeatable"] is True


@pytest.mark.slow
@needs_numba_cuda
def test_the_device_sizes_its_grid_at_the_same_steps_of_the_flock_however_the_calls_fall():
    # Sized every 2 steps here: at steps 0, 2 and 4, whether the 6 steps come in calls of 1, 2
    # and 3 steps or in one call; a call does not size it again on its own account.
    out = python(str(HERE / "gpu_simulated.py"), "--sizings")
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout) == {"split": [1, 1, 1], "whole": [3]}


@pytest.mark.slow
@needs_numba_cuda
def test_the_scan_of_the_cells_counts_starts_each_cell_of_the_grid_in_use_as_numpy_does():
    # One cell; 35; a block's span exactly (256 under the simulator); one entry past it; 5,698
    # cells, 23 blocks whose totals one span holds (the counts sized for 6,064); and 600 blocks'
    # totals scanned by one block in three spans.
    out = python(str(HERE / "gpu_simulated.py"), "--scan")
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout) == [True] * 6


@needs_numba_cuda
def test_a_blocks_threads_share_its_shared_array_under_the_simulator_however_often_they_switch():
    # numba-cuda 0.30's simulator looks a block's shared array up with a check-then-insert: as
    # numba-cuda has it, 8 and 13 of 50 rounds split it. The engine locks it, and switches often.
    out = python(str(HERE / "gpu_simulated.py"), "--shared", "50")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "0"


@pytest.mark.slow
def test_recording_rendering_or_watching_a_gpu_flock_sends_nothing_back_to_the_device():
    # A recorded frame, a video's frame and a window's frame read the state (and the velocities,
    # for the banks): reads, so the device's state stays the one the next step runs from. Before,
    # each such frame uploaded the whole state again: 3 of a run's 4 frames, 4 for a video's 3.
    # A video's frame reads the velocities once, after its steps (its banks are their change since
    # the frame before): it read them before its last step too, two downloads a frame.
    out = python(str(HERE / "gpu_simulated.py"), "--transfers", "3")
    assert out.returncode == 0, out.stderr[-3000:]
    counts = json.loads(out.stdout.strip().splitlines()[-1])
    assert counts["run"] == {"upload": 1, "download": 3, "frames": 4}, counts  # the first upload only
    assert counts["render"] == {"upload": 1, "download": 2, "frames": 3}, counts  # one a frame stepped
    assert counts["session"] == {"upload": 0, "download": 3}, counts
    assert counts["acceleration_error"] < 1e-9  # the change of the velocities it copied, over the time


@pytest.mark.parametrize(
    "params, named",
    [
        (Params(count=20, update="sequential"), "update = 'sequential'"),
        (Params(count=20, update="per_rule", combine="chain"), "update = 'per_rule'"),
        (Params(count=20, model="pearce"), "the pearce model (its projection takes every candidate at once"),
    ],
)
def test_what_the_gpu_engine_does_not_run_yet_is_named_in_one_line(params, named):
    line = refusal(params)
    assert named in line and line.endswith("yet (engine 'fast' does)") and "\n" not in line
    with pytest.raises(GpuError, match="does not run"):
        kernel_source(params)


@pytest.mark.parametrize(
    "params",
    [
        Params(count=20, model="couzin", arena_shape="none"),
        Params(count=20, model="vicsek", neighbours=5, adaptive=True),
        Params(count=20, model="ism", neighbours=6),
        Params(count=20, model="cucker-smale"),
        resolve_scene("worlds/valley").params,  # perching on a heightfield
        Params(count=20, neighbours=7, adaptive=True),
        Params(count=20, flight="aerodynamic"),
        Params(count=20, neighbours=7, predator_count=1, escape_distance=5.0),
    ],
    ids=["couzin", "vicsek adaptive", "ism", "cucker-smale", "perching", "adaptive", "aerodynamic", "escape"],
)
def test_the_models_the_carried_state_and_aerodynamic_flight_run_on_the_gpu(params):
    assert refusal(params) == ""
    source, _ = kernel_source(params)
    assert "@_kernel\ndef advance(" in source
    if params.model != "boids":  # the model's own sums, over the candidates a part at a time
        assert "n_part = 0" in source


def test_the_gpu_chooses_at_most_16_topological_neighbours_and_says_so_in_one_line():
    assert refusal(Params(count=20, neighbours=16)) == ""
    line = refusal(Params(count=20, neighbours=17))
    assert line == (
        "the GPU engine chooses at most 16 topological neighbours (got neighbours = 17; "
        "engine 'fast' chooses any number)"
    )
    adaptive = refusal(Params(count=20, neighbours=17, adaptive=True))
    assert adaptive.startswith("the GPU engine chooses at most 16")


@pytest.mark.parametrize("k", [1, 7, 16])
def test_the_gpu_chooses_the_k_nearest_seen_as_the_cpu_does_in_any_order(k):
    from flock3d.core import components as C
    from flock3d.core.gpu.nearest import MAX_NEAREST, insert_nearest

    rng = np.random.default_rng(1)
    m = 60  # on a lattice: many candidates at equal distances, where the index decides
    bx, by, bz = rng.integers(-3, 4, (3, m)).astype(float)
    bid = rng.permutation(m).astype(float)
    r2, cone = 12.5, -0.5  # the view's squared radius and cone threshold (a 270 degree cone)

    def seen(j):
        d2, dot = bx[j] ** 2 + by[j] ** 2 + bz[j] ** 2, bx[j]
        return (d2 > 0.0) & (d2 < r2) & (dot * abs(dot) >= cone * d2), d2

    sel, sel_d2, seen_at, seen_d2 = np.zeros(m, np.int64), np.zeros(m), np.zeros(m, np.int64), np.zeros(m)
    n = C.nearest_seen.py_func(bx, by, bz, bid, m, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, r2, cone, k, np.zeros(0),
                               np.zeros(0), sel, sel_d2, seen_at, seen_d2)  # fmt: skip
    cpu = bid[sel[:n]]
    last = [d2 for sees, d2 in map(seen, range(m)) if sees and d2 == sel_d2[n - 1]]
    assert n == k and len(last) > np.sum(sel_d2[:n] == sel_d2[n - 1])  # the index chose among the k-th
    for order in (np.arange(m), rng.permutation(m), np.arange(m)[::-1]):  # the order the runs meet them
        gpu_sel, gpu_d2, chosen = np.zeros(MAX_NEAREST, np.int64), np.zeros(MAX_NEAREST), 0
        for j in order:
            sees, d2 = seen(j)
            if sees:
                chosen = insert_nearest.py_func(gpu_sel, gpu_d2, chosen, k, j, d2, bid)
        assert np.array_equal(bid[gpu_sel[:chosen]], cpu) and np.array_equal(gpu_d2[:chosen], sel_d2[:n])


def test_every_boids_term_without_world_data_runs_on_the_gpu():
    params = Params(count=20, wander=5.0, containment=10.0, combine="chain", predator_count=1,
                    roost_weight=1.0, species=[Species("a", 10), Species("b", 10, fov=120.0)])  # fmt: skip
    assert refusal(params) == ""
    source, names = kernel_source(params)
    terms = ("separation", "alignment", "cohesion", "confinement", "containment", "wander", "flee", "roost")
    assert all(f"{term}_term." in source for term in terms)
    assert "clamp_speed(" in source and "candidate_run(" in source and "reach" in names


def test_debug_step_prints_the_gpu_kernel_and_refuses_in_one_line(tmp_path):
    out = flock3d("debug", "step", "default", "--engine", "gpu")
    assert out.returncode == 0, out.stderr
    assert "@_kernel\ndef advance(" in out.stdout and "cuda.grid(1)" in out.stdout
    assert "separation_term.inverse(" in out.stdout and "# pv, the values it reads" in out.stdout
    rules = tmp_path / "rules.py"
    rules.write_text(
        "import flock3d\n\n@flock3d.pair_rule\ndef toward(p_i, v_i, p_j, v_j):\n"
        "    return p_j[0] - p_i[0], p_j[1] - p_i[1], p_j[2] - p_i[2]\n\n"
        "@flock3d.force\ndef lift(position, velocity, time):\n    return 0.0, 0.5, 0.0\n"
    )
    out = flock3d("debug", "step", "default", "--engine", "gpu", "--rules", rules, "--set",
                  "perception.neighbours=7")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "r = U_rule0(ro_p_i, ro_v_i, ro_p_j, ro_v_j)" in out.stdout and "U_force0(" in out.stdout
    assert "insert_nearest(sel, sel_d2, n_sel, n_pick, jj, d2, bid)" in out.stdout
    refused = flock3d("debug", "step", "default", "--engine", "gpu", "--set", "sim.update=sequential")
    assert_clean_failure(refused, "the GPU engine does not run update = 'sequential' yet")
    assert len(refused.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(missing() == "", reason="a CUDA device is at hand")
def test_without_a_device_the_gpu_engine_says_what_is_missing_and_how_to_install(tmp_path):
    # From empty caches, as on a fresh install: the refusal comes before anything compiles.
    cold = {"FLOCK3D_CACHE_DIR": str(tmp_path / "steps"), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    out = flock3d("run", "default", "--engine", "gpu", "--steps", "2", process=True, env=cold)
    assert_clean_failure(out, 'pip install "flock3d[gpu]"')
    assert len(out.stderr.strip().splitlines()) == 1 and "GPU" in out.stderr
    with pytest.raises(GpuError, match="flock3d\\[gpu\\]"):
        Flock(Params(count=10), engine="gpu")


def test_an_unknown_engine_lists_the_gpu():
    with pytest.raises(ValueError, match="'fast', 'reference' or 'gpu'"):
        Flock(Params(count=10), engine="cuda")


#: The kernels gpu_ptx.py compiles: the fixed ones (5 again in float32), the covering set's 10
#: steps (every arena, term, option and model at least once), two again in float32, and three
#: split (step and settle; one passes an adaptive radius and an aerodynamic turn between them)
#: (``gpu_ptx.py --all``: 45). In two parts: a process a part, one for each of two cores; each
#: process compiles the device functions its kernels call again.
PTX_KERNELS, PTX_PARTS = 13 + 5 + 10 + 2 + 3 * 2, 2
#: Layouts whose step reads nothing through a view: every load names its state space (the
#: candidates' columns are read from the kernel's argument, ``cols[j, c]``; a strided view's
#: element is a generic load, resolved at run time, 3-4 % of the bench scene's step on an H200).
DIRECT_READS = ("sphere, wander, containment", "box, mesh turn limit, roost", "periodic 2D", "vicsek 2D",
                "couzin", "open, cucker-smale")  # fmt: skip


@needs_numba_cuda
@pytest.mark.slow
@pytest.mark.parametrize("part", range(1, PTX_PARTS + 1))
def test_every_kernel_compiles_for_a_gpu(part):
    # The simulator runs kernels as Python: what numba-cuda cannot type or lower for a device
    # (np.rint had no lowering) shows only when they are compiled, which needs NVVM, not a GPU.
    out = python(str(HERE / "gpu_ptx.py"), "--part", f"{part}/{PTX_PARTS}", simulator=False)
    if out.returncode == 3:
        pytest.skip(out.stdout.strip())
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert out.stdout.count("ok ") == len(range(part - 1, PTX_KERNELS, PTX_PARTS))
    for line in out.stdout.splitlines():
        name, _, generic = line.partition(" [")
        assert not (name.startswith("ok step") and name.endswith(DIRECT_READS) and generic), line


@needs_numba_cuda
def test_a_rule_numba_cuda_cannot_compile_is_named_in_one_line(monkeypatch):
    import numba.cuda.dispatcher

    class Device:  # what numba-cuda asks of the device while it types (as gpu_ptx.py says): none here
        compute_capability = (9, 0)

    monkeypatch.setattr(numba.cuda.dispatcher, "get_current_device", Device)
    monkeypatch.setattr(numba.cuda, "get_current_device", Device)

    @pair_rule
    def whole_arrays(p_i, v_i, p_j, v_j):  # runs on the CPU engines: numba-cuda makes no array
        return p_i - p_j

    try:
        fine = device_compile_error([apart], [breeze], cc=(9, 0))
    except Exception as error:  # noqa: BLE001 - no NVVM (flock3d[gpu]'s CUDA wheels): nothing to compile with
        pytest.skip(f"no CUDA compiler: {type(error).__name__}")
    assert fine is None
    error = device_compile_error([apart, whole_arrays], [breeze], cc=(9, 0))
    assert isinstance(error, RuleError) and "\n" not in str(error), error
    assert str(error).startswith("rule 'whole_arrays' (test_gpu_engine.py:")
    assert "cannot be compiled for the GPU (Only accept returning of array passed" in str(error)
    assert str(error).endswith("return a tuple (x, y, z)")
    # what a GPU flock checks before any work (check_runs) and before its first step
    from flock3d import gpu, step_errors

    gpu._check_compiles([apart], [breeze])
    with pytest.raises(RuleError, match="^rule 'whole_arrays' .* cannot be compiled for the GPU"):
        gpu._check_compiles([apart, whole_arrays], [breeze])
    compiled = []  # a function compiled once is not compiled again
    monkeypatch.setattr(step_errors, "device_compile_error", lambda rules, forces: compiled.append(rules))
    gpu._check_compiles([apart], [breeze])
    assert compiled == []


@needs_numba_cuda
def test_a_float32_step_is_compiled_under_its_own_register_cap():
    # On an H200 a float32 step capped at 64 registers ran 2-4 % faster than at 72, float64 slower.
    from flock3d.gpu import _stepper

    caps = {"float64": DEFAULT_SHAPE.max_registers, "float32": DEFAULT_SHAPE.float32_registers}
    assert caps["float32"] < caps["float64"]
    for precision, cap in caps.items():
        step = _stepper(Params(count=10, precision=precision), (), ())
        assert f"MAX_REGISTERS = {cap} " in step.source
        assert step.module.advance.targetoptions["max_registers"] == cap


@needs_numba_cuda
@pytest.mark.slow
def test_a_float32_flock_keeps_the_invariants_and_the_statistics_of_float64():
    out = python(str(HERE / "gpu_simulated.py"), "--float32", "1", "2")
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    for row in rows:
        assert row["float32 values"], row  # kept in float32, not float64 written as float32
        # every step within the speed limits and the turn limit, to float32's rounding
        assert row["speed over max (relative)"] < 1e-6 and row["speed under min (relative)"] < 1e-6, row
        assert row["turn over the limit (rad)"] < 1e-6, row
        assert row["farthest from the centre"] < row["arena radius"], row
    # Polarization and nearest-neighbour distance over time: float32 against float64 differs by
    # far less than one seed's run differs from another's (the statistics' own noise).
    stats = [{k: np.array(v) for k, v in row["stats"].items()} for row in rows]
    between_precisions = np.max([np.abs(s["float32"] - s["float64"]).max(axis=0) for s in stats], axis=0)
    between_seeds = np.abs(stats[0]["float64"] - stats[1]["float64"]).max(axis=0)
    assert np.all(between_precisions < 0.01 * between_seeds), (between_precisions, between_seeds)


def test_float32_is_the_gpu_engines_and_a_cpu_engine_says_so_in_one_line():
    with pytest.raises(EngineError, match="runs on the GPU engine"):
        Flock(Params(count=10, precision="float32"), engine="fast")
    flock = Flock(Params(count=10), engine="reference")
    flock.params = flock.params.replace(precision="float32")
    with pytest.raises(EngineError, match="engine 'reference' keeps float64"):
        flock.step()
    out = flock3d("run", "default", "--steps", "2", "--set", "sim.precision=float32")
    assert_clean_failure(out, "sim.precision = 'float32' runs on the GPU engine")
    assert len(out.stderr.strip().splitlines()) == 1
    # indices ride in float32 with the positions: exact up to 2**24 boids
    assert "at most 16,777,216 boids" in refusal(Params(count=2**24 + 1, precision="float32"))
    assert refusal(Params(count=2**24, precision="float32")) == ""


BENCHMARKS = HERE.parent / "benchmarks"


@needs_numba_cuda
@pytest.mark.slow
def test_the_gpu_benchmark_checks_each_column_and_prints_its_table():
    shapes = ["split+guard/72", "fused/72@float32"]
    out = python(str(BENCHMARKS / "gpu.py"), "--tiny", "40", "--meshes", "40", "--shapes", *shapes)
    assert out.returncode == 0, out.stderr[-3000:]
    check = next(line for line in out.stdout.splitlines() if line.startswith("check:"))
    f64, f32 = (float(value) for value in re.findall(r"([0-9.e+-]+) \(float(?:64|32)\)", check))
    assert f64 < 1e-9 and 0 < f32 < 1e-4, check  # float32 differs, by its rounding only
    rows = [line for line in out.stdout.splitlines() if line.startswith(("| bench", "| circles", "| 5 mesh"))]
    header = next(line for line in out.stdout.splitlines() if line.startswith("| scene"))
    assert "GPU split+guard/72 |" in header and "GPU fused/72 float32 |" in header
    assert len(rows) == 3 and all(row.count(" ms (") == 3 for row in rows), rows  # the CPU and 2 GPU cells
    # the mesh row set against the bench row of the same size (the float64 column of each)
    assert re.search(r"5 mesh objects, 40 boids: [0-9.]+x the bench scene's steps/s", out.stdout), out.stdout


@needs_numba_cuda
@pytest.mark.slow
def test_the_frames_benchmark_times_each_phase_of_a_gpu_flocks_frames():
    out = python(str(BENCHMARKS / "gpu_frames.py"), "60", "--frames", "2", "--warm", "1", "--scene", "bench")
    assert out.returncode == 0, out.stderr[-3000:]
    row = next(line for line in out.stdout.splitlines() if line.startswith("| 60 |"))
    phases = [float(cell) for cell in row.strip("| ").split(" | ")[2:]]
    assert len(phases) == 6 and all(ms > 0.0 for ms in phases), row  # 5 phases and frames/s
    assert abs(1e3 / sum(phases[:5]) - phases[5]) < 0.05 * phases[5], row
    assert out.stdout.strip().splitlines()[-1].startswith("renderer: "), out.stdout


@needs_numba_cuda
@pytest.mark.slow
def test_a_register_cap_holds_each_step_kernel_to_it():
    out = python(str(BENCHMARKS / "gpu_registers.py"), "fused", "fused/64", "split/64", simulator=False)
    if out.returncode == 2 and "no ptxas" in out.stderr:
        pytest.skip(out.stderr.strip())
    assert out.returncode == 0, out.stderr[-3000:]
    used = {
        line.split(":")[0]: int(re.search(r"Used (\d+) registers", line)[1])
        for line in out.stdout.splitlines()
    }
    assert used["fused/64 (float64) advance"] <= 64 < used["fused (float64) advance"], used
    assert used["split/64 (float64) advance"] <= 64 and used["split/64 (float64) settle"] <= 255, used


@pytest.mark.skipif(missing() == "", reason="a CUDA device is at hand")
@pytest.mark.parametrize(
    "command",
    [
        ["view", "default"],
        ["render", "default", "--out", "{tmp}/frame.png"],
        ["bench"],
        ["bench", "--viewer"],
        ["sweep", "default", "--param", "perception.fov=90,180", "--steps", "3", "--out", "{tmp}/sweep.csv"],
        ["experiment", "vicsek-fig2a", "--quick", "--out", "{tmp}/vicsek"],
    ],
    ids=lambda command: " ".join(command[:2]) if command[1:2] == ["--viewer"] else command[0],
)
def test_every_command_that_steps_a_flock_takes_engine_gpu_and_says_in_one_line_what_is_missing(
    command, tmp_path
):
    out = flock3d(*(arg.format(tmp=tmp_path) for arg in command), "--engine", "gpu")
    assert_clean_failure(out, 'pip install "flock3d[gpu]"')
    assert len(out.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def simulated_command(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``flock3d ARGS`` in a process of its own under the CUDA simulator."""
    return python("-m", "flock3d.cli", *args, cwd=cwd)


@needs_numba_cuda
@pytest.mark.slow
def test_a_frame_rendered_with_the_gpu_engine_is_the_fast_engines_frame(tmp_path):
    import imageio.v3 as iio

    frame = ["--set", "flock.count=60", "--start", "0.1", "--size", "320x200"]
    gpu = simulated_command("render", "default", *frame, "--out", "gpu.png", "--engine", "gpu", cwd=tmp_path)
    assert gpu.returncode == 0, gpu.stderr[-2000:]
    fast = flock3d("render", "default", *frame, "--out", tmp_path / "fast.png")
    assert fast.returncode == 0, fast.stderr
    a, b = (iio.imread(tmp_path / name).astype(float) for name in ("gpu.png", "fast.png"))
    assert a.shape == b.shape == (200, 320, 3) and a.std() > 5  # a picture, not a blank
    assert np.abs(a - b).mean() < 0.05  # the same boids in the same places, to rounding


@needs_numba_cuda
def test_a_flock_the_gpu_engine_cannot_run_says_so_in_one_line(tmp_path):
    # (every experiment's flocks run on it: a run of an in-place update is refused instead)
    out = simulated_command(
        "run", "default", "--steps", "2", "--engine", "gpu", "--set", "sim.update=sequential", cwd=tmp_path
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.stderr.strip().endswith(
        "the GPU engine does not run update = 'sequential' yet (engine 'fast' does)"
    )
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_viewers_session_keeps_its_engine_across_scenes_and_respawns():
    from flock3d.scene import resolve_scene
    from flock3d.viewer.session import Session

    session = Session(resolve_scene("small-arena"), engine="reference")
    assert session.flock.engine == "reference"
    session.load(resolve_scene("default", overrides=["flock.count=30"]))
    assert session.flock.engine == "reference" and len(session.flock) == 30
    session.respawn(12)
    assert session.flock.engine == "reference" and len(session.flock) == 12


def test_a_scene_names_its_engine_and_a_command_overrides_it(tmp_path):
    from flock3d.scene import load_scene

    path = tmp_path / "ref.toml"
    path.write_text('[flock]\ncount = 20\n[sim]\nengine = "reference"\n')
    scene = load_scene(path)
    assert scene.engine == "reference" and Flock.from_scene(scene).engine == "reference"
    assert Flock.from_scene(scene, engine="fast").engine == "fast"
    assert load_scene(path).replace(engine="fast") == scene  # how a world runs is not what it is
    assert 'engine = "reference"' in scene.to_toml()
    path.write_text('[sim]\nengine = "cuda"\n')
    out = flock3d("check", path)
    assert_clean_failure(out, "sim.engine must be one of 'fast', 'reference', 'gpu' (got 'cuda')")
    if missing():  # no device: the scene's gpu is refused in one line, --engine fast runs it
        path.write_text('[flock]\ncount = 20\n[sim]\nengine = "gpu"\n')
        assert_clean_failure(flock3d("run", path, "--steps", "2"), 'pip install "flock3d[gpu]"')
        assert flock3d("run", path, "--steps", "2", "--engine", "fast").returncode == 0
