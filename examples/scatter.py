"""Scattering the flock: now and then every boid flies apart from the others (after the
boids pseudocode's extra rule, which turns cohesion into its opposite for a while).

    flock3d view --rules examples/scatter.py

A pair rule sees neighbours but not the time; a force sees the time but not the
neighbours. So the scatter is a pair rule (away from each neighbour, like negative
cohesion) whose weight you turn up and down between steps, from Python:

    rules, forces = flock3d.load_rules("examples/scatter.py")
    flock = flock3d.Flock(params, rules=rules)
    ...
    flock.set_rules([rules[0].replace(weight=4.0)])   # scatter
    flock.set_rules([rules[0].replace(weight=0.0)])   # gather again

and, in the viewer and the headless commands, a force that does the same for 3 s out of
every 20: away from the arena's centre, where the flock gathers.
"""

import math

import numpy as np

import flock3d


@flock3d.pair_rule(weight=0.0)
def scatter(p_i, v_i, p_j, v_j):
    return p_i - p_j


@flock3d.force(weight=10.0)
def scatter_now_and_then(position, velocity, time):
    if time % 20.0 > 3.0:
        return np.zeros(3)
    # |position| written out: compiled, np.dot needs scipy, which a plain install does not have
    distance = math.sqrt(position[0] ** 2 + position[1] ** 2 + position[2] ** 2)
    return position / distance if distance > 0.0 else np.zeros(3)
