"""The GPU engine's runtime (numba-cuda): the device, its grid and sort, and the step's driver.

:mod:`~flock3d.core.gpu.device` imports numba-cuda where it can; :mod:`~flock3d.core.gpu.cells`
holds the grid's device functions; :mod:`~flock3d.core.gpu.kernels` the fixed kernels of a
step; :mod:`~flock3d.core.gpu.engine` the device state and the step loop. The step's own kernel
is generated from the terms (:mod:`flock3d.core.step.cuda_generate`).
"""
