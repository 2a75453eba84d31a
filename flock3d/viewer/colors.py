"""Boid colours: (N, 4) float32 RGBA from headings, speeds or neighbour counts."""

from __future__ import annotations

import numpy as np

__all__ = ["heading_colors", "ramp_colors", "uniform_colors", "BACKGROUND", "BOID_COLOR"]

BACKGROUND = (0.035, 0.05, 0.09, 1.0)
"""Deep night blue behind the flock."""
BOID_COLOR = (0.95, 0.72, 0.35, 1.0)
"""Warm amber used by the ``uniform`` colour mode."""

# A perceptually ordered dark-blue -> teal -> yellow ramp (viridis' stops).
_RAMP = np.array(
    [
        [0.267, 0.005, 0.329],
        [0.229, 0.322, 0.546],
        [0.128, 0.567, 0.551],
        [0.369, 0.789, 0.383],
        [0.993, 0.906, 0.144],
    ]
)


def _hsv_to_rgb(h: np.ndarray, s: float, v: np.ndarray) -> np.ndarray:
    i = np.floor(h * 6.0).astype(int) % 6
    f = h * 6.0 - np.floor(h * 6.0)
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    choices = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    rgb = np.empty((len(h), 3))
    for k, (r, g, b) in enumerate(choices):
        sel = i == k
        rgb[sel] = np.c_[r[sel], g[sel], b[sel]]
    return rgb


def heading_colors(forwards: np.ndarray) -> np.ndarray:
    """Hue from the heading's compass direction (around +Y), brightness from its climb.

    Boids flying the same way share a colour, so flocks and their turns stand out.
    """
    f = np.asarray(forwards, dtype=np.float64).reshape(-1, 3)
    hue = (np.arctan2(f[:, 0], f[:, 2]) / (2.0 * np.pi)) % 1.0
    value = 0.8 + 0.2 * np.clip(f[:, 1], -1.0, 1.0)
    rgba = np.ones((len(f), 4), dtype=np.float32)
    rgba[:, :3] = _hsv_to_rgb(hue, 0.6, value)
    return rgba


def ramp_colors(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Values mapped linearly from [low, high] onto the dark-blue to yellow ramp."""
    x = np.asarray(values, dtype=np.float64).ravel()
    t = np.clip((x - low) / (high - low), 0.0, 1.0) if high > low else np.full(len(x), 0.5)
    pos = t * (len(_RAMP) - 1)
    k = np.minimum(pos.astype(int), len(_RAMP) - 2)
    frac = (pos - k)[:, None]
    rgba = np.ones((len(x), 4), dtype=np.float32)
    rgba[:, :3] = _RAMP[k] * (1.0 - frac) + _RAMP[k + 1] * frac
    return rgba


def uniform_colors(n: int, color=BOID_COLOR) -> np.ndarray:
    return np.tile(np.asarray(color, dtype=np.float32), (n, 1))
