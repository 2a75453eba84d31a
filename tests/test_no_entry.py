"""Compiled functions without entry points (flock3d.core.no_entry): Python's calls reach a twin,
compiled code calls the function itself, and numba's cache keeps the two apart."""

import math

import numba
import numpy as np

from flock3d.core import geometry as g
from flock3d.core.no_entry import NoEntry, from_python, no_entry


@no_entry(cache=True, nogil=True, error_model="numpy")
def _hypot_plus(x, y, z):
    return math.sqrt(x * x + y * y) + z


@numba.njit  # compiled in each run, so that it compiles (or loads) _hypot_plus here
def _calls_it(points):
    out = np.empty(points.shape[0])
    for i in range(points.shape[0]):
        out[i] = _hypot_plus(points[i, 0], points[i, 1], points[i, 2])
    return out


def test_python_calls_a_no_entry_function_through_its_twin_and_gets_what_compiled_code_gets():
    # numba itself ends the interpreter with a segmentation fault on such a call.
    points = np.array([[3.0, 4.0, 0.5], [0.0, 0.0, -1.0], [1e-3, 0.0, 2.0]])
    assert isinstance(_hypot_plus, NoEntry)
    by_python = [_hypot_plus(*p) for p in points]
    assert by_python == [5.5, -1.0, 2.001]
    assert list(_calls_it(points)) == by_python
    assert from_python(_hypot_plus) is from_python(_hypot_plus)  # one twin, compiled once
    # Compiled code called the function itself: its own overload exists, the twin's is separate.
    assert _hypot_plus.signatures and from_python(_hypot_plus).signatures
    assert from_python(_hypot_plus) is not _hypot_plus


def test_the_project_compiles_its_shared_pieces_and_distances_without_entry_points():
    from flock3d.core import kernel
    from flock3d.core.objects.distance import clearance
    from flock3d.core.objects.keep_out import keep_out

    for fn in (g.sdf_box, clearance, keep_out, kernel.fill_row, kernel.turn_rows):
        assert isinstance(fn, NoEntry), fn
        assert fn.targetoptions["no_cpython_wrapper"] and fn.targetoptions["no_cfunc_wrapper"]


def test_a_no_entry_function_and_its_wrapped_twin_have_cache_files_of_their_own():
    # A flock3d that expects an entry point (an older one, sharing the cache) never loads an entry
    # compiled without it: the file names differ, for the twin as for the plain function.
    plain = numba.njit(cache=True, nogil=True, error_model="numpy")(_hypot_plus.py_func)
    names = {d._cache._cache_file._index_name for d in (_hypot_plus, from_python(_hypot_plus), plain)}
    assert len(names) == 3
    assert ".no-entry" in _hypot_plus._cache._cache_file._index_name
