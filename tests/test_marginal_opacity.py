"""The marginal-opacity experiment (Pearce et al. 2014) on a small instance: flock3d's boids flocks,
whose density their local rules fix, hide more of the sky as they grow, and less as they spread;
flocks of Pearce et al.'s projection model stay as opaque at N = 400 as at N = 50."""

import csv

import imageio.v2 as imageio
import numpy as np
import pytest
from helpers import flock3d


@pytest.mark.slow
def test_marginal_opacity_quick_larger_flocks_hide_more_sky_unless_they_steer_by_projection(tmp_path):
    out = flock3d("experiment", "marginal-opacity", "--out", tmp_path, "--quick")
    assert out.returncode == 0, out.stderr
    assert "Pearce et al. 2014" in out.stdout and "optical depth" in out.stdout
    rows = list(csv.DictReader((tmp_path / "marginal-opacity.csv").open()))
    assert imageio.imread(tmp_path / "marginal-opacity.png").shape[0] > 300
    table = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    sky, view, n = table["sky"].astype(float), table["view"].astype(float), table["n"].astype(int)
    assert np.all((sky > 0.0) & (sky < 1.0) & (view > 0.0) & (view < 1.0))
    for kind in ("metric", "topological"):
        at = (table["sweep"] == "size") & (table["interaction"] == kind)
        order = np.argsort(n[at])
        # The same density and a thicker flock: a longer sightline through it, more birds on it.
        assert np.all(np.diff(sky[at][order]) > 0.02) and np.all(np.diff(view[at][order]) > 0.01)
    spread = table["sweep"] == "density"
    order = np.argsort(table["spread"][spread].astype(float))
    assert np.all(np.diff(sky[spread][order]) < -0.02)  # the same birds farther apart hide less
    # The planar sweep, the paper's main model: the boids' blocked view grows with N, the projection
    # model's stays marginal (a bird still sees out in many directions) and changes far less.
    change = {}
    for kind in ("metric", "topological", "projection"):
        at = (table["sweep"] == "plane") & (table["interaction"] == kind)
        assert sorted(n[at]) == [50, 400]
        order = np.argsort(n[at])
        change[kind] = view[at][order][-1] - view[at][order][0]
    assert change["metric"] > 0.1 and change["topological"] > 0.1
    assert abs(change["projection"]) < 0.5 * min(change["metric"], change["topological"])
    projection = view[table["interaction"] == "projection"]
    assert np.all((projection > 0.25) & (projection < 0.85))
    assert "flock3d: reproduced in the plane" in out.stdout
