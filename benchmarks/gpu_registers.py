"""Registers and spills a thread of the GPU step's kernels, by shape and precision, from ptxas.

    python benchmarks/gpu_registers.py fused fused/72 split/72 split+guard/64 [--precision float32]
    python benchmarks/gpu_registers.py fused/72 --layout "rules, topological"   # a layout of tests/gpu_ptx.py

No GPU needed: each kernel of ``flock3d bench``'s scene is compiled to PTX for sm_90 (numba-cuda's
NVVM) and assembled by ptxas (the ``nvidia-cuda-nvcc-cu12`` wheel that ``flock3d[gpu]`` brings,
or one on the PATH), which reports the registers it allotted and what it spilled. Occupancy, and
so the step's speed on the naive kernel, follows the registers (see benchmarks/NOTES.md).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]

import gpu_ptx  # noqa: E402  (the kernels' argument types, as the engine launches them)
from gpu import shape_of  # noqa: E402

from flock3d.bench import bench_params  # noqa: E402
from flock3d.core.assemble import layout_of  # noqa: E402


def ptxas() -> str | None:
    """The ptxas of the CUDA compiler wheel, else one on the PATH."""
    try:
        import nvidia.cuda_nvcc

        found = Path(nvidia.cuda_nvcc.__path__[0]) / "bin" / "ptxas"
        if found.exists():
            return str(found)
    except ImportError:
        pass
    return shutil.which("ptxas")


def assembled(fn, signature: tuple, cap: int | None, tool: str) -> str:
    """What ptxas says of ``fn`` compiled for ``signature``: its registers, stack and spills."""
    from numba import cuda

    ptx, _ = cuda.compile_ptx(fn, signature, cc=gpu_ptx.CC)
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "kernel.ptx"
        source.write_text(ptx)
        command = [tool, "-v", "--gpu-name", "sm_90", str(source), "-o", str(Path(folder) / "kernel.cubin")]
        if cap:
            command[1:1] = ["--maxrregcount", str(cap)]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stderr
    lines = [
        line.split(":", 1)[-1].strip() for line in out.splitlines() if "registers" in line or "spill" in line
    ]
    return "; ".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", type=shape_of, nargs="+", help="fused or split, +guard, +xK, /R")
    parser.add_argument("--precision", choices=("float64", "float32"), default="float64")
    parser.add_argument(
        "--layout",
        choices=sorted(gpu_ptx.SCENES),
        metavar="NAME",
        help="a layout of tests/gpu_ptx.py's SCENES (with its rules) instead of the bench scene",
    )
    args = parser.parse_args(argv)
    tool = ptxas()
    if tool is None:
        print("benchmarks/gpu_registers.py: no ptxas (pip install nvidia-cuda-nvcc-cu12)", file=sys.stderr)
        return 2
    import numba.cuda.dispatcher

    from flock3d.core.gpu import engine

    numba.cuda.dispatcher.get_current_device = gpu_ptx._Device  # no device: the target's capability
    S = gpu_ptx.PRECISIONS[args.precision]
    for shape in args.shapes:
        engine.SHAPE = shape
        params = gpu_ptx.SCENES[args.layout] if args.layout else bench_params(1000)
        rules, forces = gpu_ptx.RULES.get(args.layout, ((), ()))
        module = engine.stepper(layout_of(params, rules, forces), rules, forces).module
        name = f"{shape} ({args.precision})" + (f" [{args.layout}]" if args.layout else "")
        print(
            f"{name} advance: {assembled(module.advance.py_func, gpu_ptx.step(S), shape.max_registers, tool)}"
        )
        if shape.split:
            print(f"{name} settle: {assembled(module.settle.py_func, gpu_ptx.settle(S), None, tool)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
