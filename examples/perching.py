"""Perching: every half minute the flock comes down to the ground and lingers there before
it takes off again (after the boids pseudocode's extra rule "perching").

    flock3d view --rules examples/perching.py

The original lets each boid sit still on the ground for a while, which needs a timer per
boid; a force has none, so here the flock settles together: for 8 s out of every 30 a
boid is pulled down to the ground and, close to it, braked to a glide. Time is the
simulated time in seconds.
"""

import numpy as np

import flock3d

GROUND = -12.0  # the height of the ground (y)
PERIOD, PERCH = 30.0, 8.0  # seconds


@flock3d.force
def perch(position, velocity, time):
    if time % PERIOD > PERCH:
        return np.zeros(3)
    height = position[1] - GROUND
    down = -4.0 * min(height, 5.0)  # towards the ground, gentler when there
    if height < 1.0:  # on the ground: brake, and stay level
        return np.array([-2.0 * velocity[0], -8.0 * velocity[1], -2.0 * velocity[2]])
    return np.array([0.0, down, 0.0])
