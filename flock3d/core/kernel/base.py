"""What every piece of the fast engine's runtime shares: its fast-math flags, its two ways of
compiling (:data:`shared`, :data:`inlined`), the size of a chunk of work and the cone test's threshold."""

from __future__ import annotations

import numba

from flock3d.core.no_entry import no_entry

# No 'nnan'/'ninf': view distances and turn rates may legitimately be inf, and a blown-up
# state must be seen as NaN to be reported. 'reassoc' lets LLVM vectorise the per-boid
# sums; each boid's summation order is still fixed, so results do not depend on threads.
FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}

#: Compiled once, cached, and called (not inlined) by every assembled stepper, with no entry
#: point from Python (:mod:`flock3d.core.no_entry`: a first run compiles dozens of them, and
#: their wrappers cost about as much as a small function). Python calls them through their
#: twins (:func:`~flock3d.core.no_entry.from_python`).
shared = no_entry(fastmath=FAST, error_model="numpy", cache=True, nogil=True)

#: Inlined where it is called (at numba's level), so compiled as part of the caller: for the
#: small functions a SIMD loop calls, and for code that must round as its caller's own code.
#: Compiled on its own only where it is called at its address (:class:`Called`) or from Python.
#: A compiled function calls a :data:`shared` one by its symbol: the process that compiled
#: the caller runs the shared function's own code, and one that loaded the caller from
#: numba's cache runs the copy linked into it, which LLVM optimised again with the caller.
#: With fast-math the two may round differently (the batch turn's did, an ulp a step), and
#: a run that compiled its step drifted apart from one that loaded it.
inlined = no_entry(fastmath=FAST, error_model="numpy", cache=True, nogil=True, inline="always")


#: Boids per unit of parallel work: large enough to amortise a candidate buffer,
#: small enough to balance two to a few dozen threads.
BOIDS_PER_CHUNK = 256

#: A coordinate or velocity component beyond this is a blown-up state, not a flock: the
#: step that produces it stops with an error (float64 keeps ~1e-4 resolution here).
MAX_COORDINATE = 1e12

# What a step reports (the first field of a status row): flock3d.core.status, re-exported for the
# generated step's template.


def threads() -> int:
    """Number of threads the kernel runs on (set with ``numba.set_num_threads``)."""
    return numba.get_num_threads()
