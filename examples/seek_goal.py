"""Seeking a goal: the JavaScript canvas tutorial's "seek", the steering towards a point
(goal - position), here the middle of its 720 x 400 canvas.

    flock3d view classics/canvas-tutorial-2d --rules examples/seek_goal.py

(flock3d's own attractors, [[attractors]] in a scene, use Reynolds' seek instead: steer
the velocity towards flying at full speed straight at the point.)
"""

import numpy as np

import flock3d

GOAL = np.array([360.0, 200.0, 0.0])


@flock3d.force(weight=0.05)
def seek_goal(position, velocity, time):
    return GOAL - position
