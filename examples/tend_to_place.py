"""Tend to a place: every boid is drawn towards a point (the boids pseudocode's extra rule
"tendency towards a particular place", (place - position) / 100 per frame).

    flock3d view --rules examples/tend_to_place.py

At 60 frames/s, 1/100 of the offset per frame is 0.6 of it per second: the weight.
"""

import numpy as np

import flock3d

PLACE = np.array([10.0, 5.0, 0.0])


@flock3d.force(weight=0.6)
def tend_to_place(position, velocity, time):
    return PLACE - position
