"""A neighbour rule of your own: a soft repulsion from each neighbour within 3 units,
stronger when closer (1/d^2), summed rather than averaged.

    flock3d view --rules examples/keep_apart.py

A pair rule gets the boid's position and velocity and one neighbour's; flock3d sums what
it returns over the neighbours the boid sees within the radius (and its field of view).
"""

import flock3d


@flock3d.pair_rule(radius=3.0, average=False, weight=4.0)
def keep_apart(p_i, v_i, p_j, v_j):
    d = p_i - p_j
    # d . d written out: compiled, np.dot needs scipy, which a plain install does not have
    return d / (d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
