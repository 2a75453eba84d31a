"""The numerical core: parameters, state, quaternion maths, neighbour search, the
reference step and the fast kernel. numpy/numba only: no graphics, and nothing from the
rest of flock3d; its only files are the compiled code it caches."""

from flock3d.core import numba_cache

numba_cache.guard()  # before any compiled function loads itself from numba's cache
