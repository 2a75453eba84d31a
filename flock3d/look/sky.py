"""The skies a scene may be drawn under (``view.sky``), as numbers: their colours, their light
and where their sun is (numpy only).

A sky is the gradient behind everything, the light it gives (an ambient share from the sky, a
directional share from its sun) and a sun (the moon at night) drawn where the light comes from:
the sun's disc, the shading of the objects and the boids and the objects' shadows all take the
one direction of :meth:`SkyLook.sun_direction`, so that what is drawn is lit from where the sun
is seen.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from flock3d.look.colors import SKY_BOTTOM, SKY_TOP

__all__ = ["SkyLook", "SKY_LOOKS", "sky_look", "SUN_DISC_DEGREES"]


class SkyLook(NamedTuple):
    """One sky: colours sRGB in [0, 1], the sun's direction in a world whose up is +y."""

    top: tuple[float, float, float]
    """The sky at the top of the picture."""
    bottom: tuple[float, float, float]
    """The sky at the bottom of the picture (the horizon's haze: far objects fade into it)."""
    sun: tuple[float, float, float]
    """Towards the sun (x, up, z), any length."""
    sunlight: tuple[float, float, float]
    """The sun's light on a surface facing it (per channel)."""
    ambient: tuple[float, float, float]
    """The sky's light on a surface facing straight up (per channel)."""
    disc: tuple[float, float, float]
    """The sun's disc."""
    boid_tint: float = 1.0
    """Boid colours are drawn times this: dark birds against a bright sky."""

    def sun_direction(self, up) -> np.ndarray:
        """Unit vector towards the sun in a world whose up is ``up`` (+y, or +z for a planar flock)."""
        x, high, z = self.sun
        sun = np.array([x, high, z]) if up[1] == 1.0 else np.array([x, z, high])
        return sun / np.linalg.norm(sun)


SKY_LOOKS: dict[str, SkyLook] = {
    # A low sun (27 degrees up) under a night-to-dusk gradient: the default scene's look.
    "dusk": SkyLook(SKY_TOP, SKY_BOTTOM, (0.6, 0.5, 0.8), (0.55, 0.55, 0.55), (0.45, 0.45, 0.45),
                    (1.0, 0.72, 0.45)),
    # A high sun (about 50 degrees up) in a blue sky, lighter and hazier towards the horizon.
    "day": SkyLook((0.25, 0.47, 0.78), (0.66, 0.77, 0.88), (0.55, 1.0, 0.6), (0.72, 0.69, 0.62),
                   (0.52, 0.56, 0.62), (1.0, 0.98, 0.9), boid_tint=0.55),
    # A moon: a cold, faint light under a dark sky.
    "night": SkyLook((0.004, 0.006, 0.016), (0.03, 0.04, 0.075), (-0.5, 0.8, 0.4), (0.30, 0.33, 0.42),
                     (0.30, 0.32, 0.40), (0.86, 0.89, 0.96)),
}  # fmt: skip
"""Every sky ``view.sky`` may name (:data:`flock3d.scene.schema.SKIES`), by name."""

SUN_DISC_DEGREES = 2.5
"""The sun's disc's angular radius; its glow reaches four times as far."""


def sky_look(name: str) -> SkyLook:
    """The sky called ``name`` (one of :data:`SKY_LOOKS`)."""
    return SKY_LOOKS[name]
