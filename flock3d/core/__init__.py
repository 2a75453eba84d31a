"""The numerical core: parameters, state, quaternion maths, neighbour search, the
reference step and the fast kernel. numpy/numba only: no file IO, no graphics, and
nothing from the rest of flock3d."""
