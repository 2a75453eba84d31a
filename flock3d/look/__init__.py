"""How a flock and its world look, as numbers (numpy, and numba for the boids' banks a frame; no
graphics library): the boids' shapes, the colours, the world's objects as triangles placed at a
simulated time, and the scene's camera.

The viewer draws with these, and the exporters (:mod:`flock3d.io.export`) write them into
files other programs open, so that a flock looks the same in both.
"""
