"""Compile every GPU kernel to PTX (sm_90) without a GPU: what numba-cuda's typing and NVVM say
of them, which the CUDA simulator (Python) cannot tell.

Needs NVVM and NVRTC (flock3d[gpu]'s CUDA wheels), not a device; exits with status 3 where they
are missing. Run as a script, in a process of its own (numba-cuda as it is, no simulator):

    python tests/gpu_ptx.py             # the covering set: one line a kernel, ok or FAIL and why
    python tests/gpu_ptx.py --all       # every layout in every precision and shape (minutes more)
    python tests/gpu_ptx.py rules       # only the kernels whose names hold a word given
    python tests/gpu_ptx.py --part 2/2  # every second kernel from the second (the suite's share)

The covering set (what the test suite compiles) holds every fixed kernel in both precisions and
a step with each arena, term, option and model at least once (the world's objects, perching,
the adaptive radius, aerodynamic flight and escapes in one layout, fused and split); ``--all``
adds the layouts whose features the covering set compiles in other combinations. A step kernel
takes 3-23 s on one core, more the more code its layout holds.
"""

from __future__ import annotations

import re
import sys

import numba.cuda.dispatcher
from gpu_simulated import apart, breeze, follow
from numba import cuda
from numba import types as T

from flock3d import Params
from flock3d.core.assemble import layout_of
from flock3d.core.gpu import engine, kernels
from flock3d.core.objects import Motion
from flock3d.core.params import Attractor, Object, Obstacle, Species
from flock3d.core.step.cuda_generate import DEFAULT_SHAPE, Shape
from flock3d.core.terms.objects import KEEP_OUT

CC = (9, 0)
F1, F2, I1, I2, B1 = T.float64[::1], T.float64[:, ::1], T.int64[::1], T.int64[:, ::1], T.boolean[::1]
f8, i8 = T.float64, T.int64


def fixed(S: T.Array) -> dict[str, tuple]:
    """The fixed kernels' argument types, as the engine launches them, the state's arrays ``S``
    (2D, float64 or float32: sim.precision)."""
    return {
        "bounds_partial": (S, F2),
        "bounds_grid": (F2, f8, f8, i8, F1, I1),
        "count_cells": (S, F1, I1, I1, I1),
        "uncount": (I1, I1),
        "scan_blocks": (I1, I1, I1, i8, I1, i8),
        "scan_totals": (I1, I1, i8, I1, i8),
        "add_offsets": (I1, I1, i8, I1, i8),
        "scatter": (I1, I1, I1, I1),
        "sort_cells": (I1, I1, I1, I1),
        "gather": (I1, I1, S, S, S, I1, I1, I1, S, S, T.boolean),
        "unsort": (I1, S, S, S, I1, S, S, S, I1),
        "hunting": (F2, F2, F2, F2, S, I1, F1, B1, I1, i8, f8, f8, f8, f8, f8),
        "keeping_out": (F2, F2, F1, I1, i8, I1, i8, f8, f8, T.boolean),
    }


def kernel(name: str):
    """Fixed kernel ``name``'s Python function (the predators' keep-out: the world's objects')."""
    if name == "keeping_out":
        return kernels.keeping_out(KEEP_OUT.fn).py_func
    return getattr(kernels, name).py_func


def step(S: T.Array) -> tuple:
    """The generated step's argument types (flock3d.core.step.cuda_template.advance)."""
    return (S, S, I1, S, S, S, I1, I1, F1, I1, F1, B1, F1, F1, F1, I1, F2, I2, I1, i8, f8, i8, i8, F2, B1,
            I1, I1, I1, S)  # fmt: skip


def settle(S: T.Array) -> tuple:
    """A split step's second kernel's (flock3d.core.step.cuda_template.settle)."""
    return (F2, B1, S, I1, S, S, S, F1, I1, F1, B1, F1, F1, I1, I2, I1, i8, f8, I1, I1, I1, S)


#: The state's precisions: float64, and float32 (each kernel compiles again for it).
PRECISIONS = {"float64": F2, "float32": T.float32[:, ::1]}
#: The step's shapes compiled: the engine's, and every option of the others in one (on SPLIT_SCENES).
SHAPES = (DEFAULT_SHAPE, Shape(max_registers=64, split=True, guard=True))
SPLIT_SCENES = ("sphere, wander, containment", "periodic", "species", "rules, topological")  # and float32
#: A scene the covering set compiles split too (float64 only): what a boid keeps if it moves (its
#: adaptive radius) and how a bird in aerodynamic flight turned, passed from the first kernel to
#: the second.
KEPT_SPLIT = "objects, obstacles, wind, attractors, perching, adaptive, aerodynamic, escape"
#: The layouts only ``--all`` compiles: the covering set has each of their features in another
#: (periodic in "periodic 2D", chain and species in "rules, chain, periodic, species, 16
#: topological"); it compiles the split shape and float32 on the first and last of SPLIT_SCENES.
ALL_ONLY = ("periodic", "chain", "species")
#: Layouts whose generated step is compiled: each arena, term, option and model the GPU engine runs
#: is in at least one; features that can share a layout share one (the world's terms, the box's
#: options, an open arena with a model that takes it).
SCENES = {
    "sphere, wander, containment": Params(count=50, wander=5.0, containment=40.0),
    "box, mesh turn limit, roost": Params(
        count=50, arena_shape="box", containment=40.0, turn_limit="mesh", roost_weight=2.0
    ),
    "periodic": Params(count=50, arena_shape="periodic", arena_radius=8.0),
    "periodic 2D": Params(count=50, arena_shape="periodic", arena_radius=8.0, dimensions=2),
    "chain": Params(count=50, combine="chain"),
    "species": Params(species=[Species("a", 10), Species("b", 10, fov=120.0, sees=("b",))]),
    "rules, topological": Params(count=50, neighbours=7),
    "rules, chain, periodic, species, 16 topological": Params(
        arena_shape="periodic",
        arena_radius=8.0,
        combine="chain",
        neighbours=16,
        species=[Species("a", 10), Species("b", 10, fov=120.0, sees=("b",))],
    ),  # fmt: skip
    "objects, obstacles, wind, attractors, perching, adaptive, aerodynamic, escape": Params(
        count=50,
        attractors=[
            Attractor((2.0, 0.0, 0.0), 1.0),
            Attractor(weight=2.0, motion=Motion(((0.0, -3.0, 0.0), (0.0, 3.0, 0.0)), (0.0, 1.0))),
        ],
        obstacles=[Obstacle((3.0, 0.0, 0.0), 1.0)],
        wind=(1.5, 0.0, 0.0),
        objects=[
            Object("plane", position=(0.0, -3.0, 0.0)),
            Object("box", position=(0.0, -4.0, 0.0), size=(1.0, 2.0, 1.0)),
            Object("torus", position=(0.0, 4.0, 0.0), radius=1.5, tube=0.3),
        ],
        neighbours=7,
        adaptive=True,
        flight="aerodynamic",
        perching_height=1.0,
        predator_count=2,
        escape_distance=5.0,
    ),  # fmt: skip
    "vicsek 2D": Params(
        model="vicsek", count=50, arena_radius=3.0, dimensions=2, view_distance=1.0, noise_eta=1.0
    ),
    "ism, topological": Params(model="ism", count=50, neighbours=6, view_distance=2.0),
    "couzin": Params(model="couzin", count=50),
    "open, cucker-smale": Params(model="cucker-smale", count=50, arena_shape="none"),
}
#: The rules and forces of yours each scene runs (each a device function of its Python function).
RULES = {
    "rules, topological": ([apart], [breeze]),
    "rules, chain, periodic, species, 16 topological": ([apart, follow], [breeze]),
}


#: A load from generic memory (no state space named: ``ld.f64``, ``ld.v2.u32``), which the device
#: resolves at run time; a kernel argument's elements load as ``ld.global``.
GENERIC_LOAD = re.compile(r"^\s*ld(?:\.v\d)?\.[bfsu]\d+\s", re.MULTILINE)


class _Device:
    compute_capability = CC


def main(words: list[str]) -> int:
    every = "--all" in words
    share = words[words.index("--part") + 1] if "--part" in words else "1/1"
    part, parts = (int(k) for k in share.split("/"))
    only = [w for w in words if w not in ("--all", "--part", share)]
    float32_scenes = SPLIT_SCENES if every else (SPLIT_SCENES[0], SPLIT_SCENES[-1])
    split_scenes = (*float32_scenes, KEPT_SPLIT)
    # A device function asks the current device for its compute capability: there is none here.
    numba.cuda.dispatcher.get_current_device = _Device
    try:
        cuda.compile_ptx(kernels.add_offsets.py_func, fixed(F2)["add_offsets"], cc=CC)
    except Exception as error:  # noqa: BLE001 - no NVVM or NVRTC: nothing to compile with
        print(f"no CUDA compiler: {type(error).__name__}: {str(error).splitlines()[0]}")
        return 3
    failed = 0
    jobs = [
        (f"{name} ({precision})", kernel(name), sig)
        for precision, S in PRECISIONS.items()
        for name, sig in fixed(S).items()
        if precision == "float64" or S in sig
    ]
    for shape in SHAPES:
        engine.SHAPE = shape
        for name, p in SCENES.items():
            if (shape != DEFAULT_SHAPE and name not in split_scenes) or (name in ALL_ONLY and not every):
                continue
            rules, forces = RULES.get(name, ((), ()))
            module = engine.stepper(layout_of(p, rules, forces), rules, forces).module
            for precision, S in PRECISIONS.items():
                if precision == "float32" and (shape != DEFAULT_SHAPE or name not in float32_scenes):
                    continue  # one shape and a few scenes show the float32 step types
                jobs.append((f"step ({shape}, {precision}): {name}", module.advance.py_func, step(S)))
                if shape.split:
                    jobs.append((f"settle ({shape}, {precision}): {name}", module.settle.py_func, settle(S)))
    jobs = [job for job in jobs if not only or any(word in job[0] for word in only)][part - 1 :: parts]
    for name, fn, sig in jobs:
        try:
            ptx, _ = cuda.compile_ptx(fn, sig, cc=CC)
            generic = len(GENERIC_LOAD.findall(ptx))
            print(f"ok {name}" + (f" [{generic} generic loads]" if generic else ""), flush=True)
        except Exception as error:  # noqa: BLE001 - each kernel's own verdict
            failed += 1
            print(f"FAIL {name}: {type(error).__name__}: {str(error)[:2000]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
