"""Wind: a steady push on every boid (the boids pseudocode's extra rule "wind").

    flock3d view --rules examples/wind.py

A force returns an acceleration in units/s^2; this one is the same everywhere.
"""

import numpy as np

import flock3d


@flock3d.force
def wind(position, velocity, time):
    return np.array([1.5, 0.0, 0.5])
