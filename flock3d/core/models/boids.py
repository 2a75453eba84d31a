"""The boids model (``docs/model.md``) and its variants: a boid's update is its terms'.

Each boid's desired velocity is its velocity plus dt times the sum of the accelerations of
the terms a flock has (:mod:`flock3d.core.terms`), or each term in turn on the velocity the
previous one left (a chain); it turns towards it at most by the turn limit and moves at its
speed clamped to [s_min, s_max]. The generator writes those lines itself
(:mod:`flock3d.core.step.generate`), as does the reference engine (:func:`flock3d.core.reference.step`),
which steps every model whose update is its terms.
"""

from __future__ import annotations

from flock3d.core.models import Model


class Boids(Model):
    name = "boids"
    words = "the classic model and its variants"
    update_kind = "terms"
    sees_headings = False
    constant_speed = False
    adaptive = True

    def reach(self, params):
        """The view distance: the longest of its species'."""
        return max(
            [params.view_distance, *(params.of_species(k).view_distance for k in range(len(params.species)))]
        )


MODEL = Boids()
