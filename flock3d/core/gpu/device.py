"""numba-cuda, imported where it can be: the GPU engine's one door to it.

numba-cuda (the ``numba.cuda`` target, a package of its own since numba 0.61) is an extra,
``flock3d[gpu]``; without it :data:`cuda` is None and :func:`missing` says so. Under
``NUMBA_ENABLE_CUDASIM=1`` numba runs the same kernels on the CPU, as Python threads (slow:
for tests at a few hundred boids).
"""

from __future__ import annotations

import os
import sys
import threading

import numba
import numpy as np

__all__ = ["cuda", "missing", "simulated", "jit_options", "pin", "PIN_BYTES", "INSTALL"]

#: How a user gets what the GPU engine needs.
INSTALL = 'pip install "flock3d[gpu]"'

# numba-cuda 0.30 registers an overload of np.row_stack when it is imported, which numpy 2.5
# removed (np.vstack is what row_stack always was): without it the import fails.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack  # noqa: NPY201

try:
    from numba import cuda
except ImportError:  # the plain install: the engine says what is missing (missing())
    cuda = None


def _lower_rint() -> None:
    """Let kernels call np.rint, as :func:`flock3d.core.kernel.image` (periodic distances) does.

    numba-cuda 0.30 types np.rint in a kernel but has no lowering for it (a KeyError when the
    kernel compiles): libdevice's rint (half to even, as np.rint on the CPU) is given it here,
    only where numba-cuda lacks one, so that a version that has its own keeps it.
    """
    try:
        from numba.cuda import libdevice, ufuncs

        def lowered(context, builder, sig, args):
            single = sig.args[0] == numba.float32
            return context.compile_internal(
                builder,
                (lambda x: libdevice.rintf(x)) if single else (lambda x: libdevice.rint(x)),
                sig,
                args,
            )

        ufuncs.ufunc_db().setdefault(np.rint, {"f->f": lowered, "d->d": lowered})
    except (ImportError, AttributeError):  # laid out otherwise: a compile error would then name np.rint
        pass


def simulated() -> bool:
    """Whether kernels run in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _quicker_simulator() -> None:
    """Let numba's CUDA simulator hand the GIL over sooner, with its shared arrays made safe for it.

    The simulator runs each thread of a block as a Python thread, and a block manager that polls
    them in a loop holding the GIL: a thread it waits for runs only at the interpreter's next
    switch, so at Python's 5 ms between switches a test's kernels mostly wait, and at 0.2 ms
    they run (benchmarks/NOTES.md has the figures). But numba-cuda 0.30's simulator finds a
    block's shared array by the line that asks for it with a check-then-insert that no lock
    guards, so that two threads switched between the two get an array each and the block's
    threads no longer share it (the more often, the shorter the interval). So the interval is
    shortened only with that lookup locked; where the simulator is laid out otherwise, both
    stay as they are.
    """
    try:
        from numba.cuda.simulator.kernelapi import FakeCUDAShared
        from numba.np.numpy_support import as_dtype
    except ImportError:
        return
    allocate = FakeCUDAShared.array
    if not hasattr(FakeCUDAShared(0), "_allocations"):
        return
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # dynamic shared memory: one buffer, no lookup
            return allocate(self, shape, dtype, alignment)
        caller = sys._getframe(1)  # the kernel's line, as numba keys it
        key = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            found = self._allocations.get(key)
            if found is None:
                if isinstance(dtype, numba.types.Type):
                    dtype = as_dtype(dtype)
                found = self._allocations[key] = np.empty(shape, dtype)
        return found

    FakeCUDAShared.array = array
    sys.setswitchinterval(min(sys.getswitchinterval(), 2e-4))


if cuda is not None:
    if simulated():
        _quicker_simulator()
    else:
        _lower_rint()


def missing() -> str:
    """What keeps the GPU engine from running here, in words ("" when nothing does)."""
    if cuda is None:
        return f"the GPU engine needs numba-cuda, which is not installed ({INSTALL})"
    if simulated():  # it hands the kernels' arrays to flock3d's numba components as Python objects
        return (
            ""
            if numba.config.DISABLE_JIT
            else "numba's CUDA simulator runs the GPU engine with NUMBA_DISABLE_JIT=1"
        )
    try:
        available = cuda.is_available()
    except Exception as error:  # noqa: BLE001 - a broken driver or toolkit raises anything
        return f"the GPU engine cannot reach the CUDA driver ({str(error).splitlines()[0]}; {INSTALL})"
    if not available:
        return f"the GPU engine found no CUDA device: it needs an NVIDIA GPU and its driver ({INSTALL})"
    return ""


def jit_options(max_registers: int | None) -> dict:
    """``cuda.jit``'s keywords for a step's kernel: a cap on its registers a thread, if any (more
    threads resident, each with fewer registers; the simulator takes no cap)."""
    return {"max_registers": int(max_registers)} if max_registers and not simulated() else {}


#: Host arrays smaller than this are copied as they are, not page-locked (:func:`pin`).
PIN_BYTES = 1 << 20


def pin(array: np.ndarray) -> object | None:
    """Page-lock ``array``'s memory for the device's copies while the handle returned is held
    (the driver copies pageable memory through a buffer of its own, at a fraction of the bus's
    speed); None where it is not: an array under :data:`PIN_BYTES` or not contiguous, the
    simulator, or memory the driver refuses (a page another array already locked)."""
    if simulated() or array.nbytes < PIN_BYTES or not array.flags.c_contiguous:
        return None
    try:
        return cuda.current_context().mempin(array, array.ctypes.data, array.nbytes)
    except Exception:  # noqa: BLE001 - the driver's refusal: the copy is then a pageable one
        return None
