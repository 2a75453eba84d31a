"""Colours: the sky, and boid colours (N, 4) float32 RGBA from headings, speeds or counts.

Every map is built in OKLab (Ottosson 2020), a perceptually uniform colour space:
equal steps in its lightness L look like equal steps of brightness. Each map keeps
its lightness high enough that every boid stands out from the dark sky: the
darkest colour of any map has a contrast ratio (WCAG 2: (Y1 + 0.05) / (Y2 + 0.05) of
relative luminances) of at least :data:`MIN_CONTRAST` against the lightest sky colour.
The maps are tables computed once, so colouring a frame is one lookup per boid.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BACKGROUND",
    "BOID_COLOR",
    "PREDATOR_COLOR",
    "SKY_TOP",
    "SKY_BOTTOM",
    "MIN_CONTRAST",
    "heading_colors",
    "heading_table",
    "ramp_colors",
    "uniform_colors",
    "species_colors",
    "hex_color",
    "sky_rows",
    "oklch_to_srgb",
    "linear_from_srgb",
    "relative_luminance",
    "contrast_ratio",
]

SKY_TOP = (0.016, 0.027, 0.063)
"""Sky colour at the top of the picture (sRGB): deep night blue."""
SKY_BOTTOM = (0.11, 0.13, 0.2)
"""Sky colour at the bottom of the picture (sRGB): a dusky horizon."""
BACKGROUND = (*SKY_TOP, 1.0)
"""The canvas colour under the sky (seen only before the first frame)."""
MIN_CONTRAST = 4.5
"""Contrast ratio of the darkest colour of every map against the lightest sky colour."""


def _srgb_from_linear(c: np.ndarray) -> np.ndarray:
    c = np.clip(c, 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * np.power(c, 1 / 2.4) - 0.055)


def linear_from_srgb(c: np.ndarray) -> np.ndarray:
    """Linear-light values of sRGB values in [0, 1] (what USD's and glTF's colours are)."""
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, np.power((c + 0.055) / 1.055, 2.4))


_LMS_FROM_OKLAB = np.array([[1.0, 0.3963377774, 0.2158037573], [1.0, -0.1055613458, -0.0638541728],
                            [1.0, -0.0894841775, -1.2914855480]])  # fmt: skip
_LINEAR_FROM_LMS = np.array([[4.0767416621, -3.3077115913, 0.2309699292],
                             [-1.2684380046, 2.6097574011, -0.3413193965],
                             [-0.0041960863, -0.7034186147, 1.7076147010]])  # fmt: skip


def _oklab_to_linear(lab: np.ndarray) -> np.ndarray:
    lms = (lab @ _LMS_FROM_OKLAB.T) ** 3
    return lms @ _LINEAR_FROM_LMS.T


def oklch_to_srgb(lightness, chroma, hue_degrees) -> np.ndarray:
    """(..., 3) sRGB in [0, 1] from OKLCH; out-of-gamut colours keep their lightness and
    hue and lose chroma until they fit."""
    L, C, h = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (lightness, chroma, hue_degrees))
    )
    C = C.copy()
    a_dir, b_dir = np.cos(np.radians(h)), np.sin(np.radians(h))
    for _ in range(24):  # halve the excess chroma until every colour is inside sRGB
        rgb = _oklab_to_linear(np.stack([L, C * a_dir, C * b_dir], axis=-1))
        outside = np.any((rgb < -1e-4) | (rgb > 1 + 1e-4), axis=-1)
        if not outside.any():
            break
        C[outside] *= 0.9
    return _srgb_from_linear(rgb)


def relative_luminance(rgb) -> np.ndarray:
    """WCAG relative luminance of sRGB colours in [0, 1], shape (..., 3) -> (...)."""
    return linear_from_srgb(rgb)[..., :3] @ np.array([0.2126, 0.7152, 0.0722])


def contrast_ratio(a, b) -> np.ndarray:
    """WCAG contrast ratio (1 to 21) between sRGB colours ``a`` and ``b`` in [0, 1]."""
    ya, yb = relative_luminance(a), relative_luminance(b)
    return (np.maximum(ya, yb) + 0.05) / (np.minimum(ya, yb) + 0.05)


def sky_rows(height: int) -> np.ndarray:
    """(height, 3) float sRGB of the sky on each pixel row, top to bottom: a gradient from
    SKY_TOP to SKY_BOTTOM (drawn in bands finer than 8-bit colour's steps)."""
    t = (np.arange(height) + 0.5) / height
    return np.asarray(SKY_TOP) + t[:, None] * (np.asarray(SKY_BOTTOM) - np.asarray(SKY_TOP))


# -- the maps ---------------------------------------------------------------------------

_HUES, _CLIMBS = 256, 9
# Heading: hue around the compass at constant chroma; climbing boids a little lighter.
_HEADING = oklch_to_srgb(
    np.linspace(0.74, 0.88, _CLIMBS)[None, :], 0.105, np.linspace(0.0, 360.0, _HUES, endpoint=False)[:, None]
).astype(np.float32)

# Sequential: lightness rising linearly (equal steps look equal), hue from violet-blue
# through teal and green to yellow, like viridis but never dark.
_RAMP_T = np.linspace(0.0, 1.0, 256)
_RAMP = oklch_to_srgb(0.66 + 0.3 * _RAMP_T, 0.1 + 0.06 * _RAMP_T, 275.0 - 170.0 * _RAMP_T).astype(np.float32)

BOID_COLOR = (*oklch_to_srgb(0.82, 0.13, 70.0).tolist(), 1.0)
"""Warm amber used by the ``uniform`` colour mode."""
PREDATOR_COLOR = (*oklch_to_srgb(0.66, 0.25, 27.0).tolist(), 1.0)
"""Predators: a saturated red, far more saturated than any boid colour."""


def heading_colors(forwards: np.ndarray) -> np.ndarray:
    """Hue from the heading's compass direction (around +Y), lightness from its climb.

    Boids flying the same way share a colour, so flocks and their turns stand out.
    """
    f = np.asarray(forwards, dtype=np.float64).reshape(-1, 3)
    hue = np.arctan2(f[:, 0], f[:, 2]) * (_HUES / (2.0 * np.pi))
    i = np.rint(hue).astype(np.int64) % _HUES
    j = np.rint((np.clip(f[:, 1], -1.0, 1.0) + 1.0) * (0.5 * (_CLIMBS - 1))).astype(np.int64)
    rgba = np.ones((len(f), 4), dtype=np.float32)
    rgba[:, :3] = _HEADING[i, j]
    return rgba


def heading_table() -> np.ndarray:
    """(256, 9, 3) float32 sRGB: the heading map :func:`heading_colors` reads, by compass step
    (from +Z towards +X) and climb step (straight down to straight up), read-only."""
    table = _HEADING.view()
    table.flags.writeable = False
    return table


def ramp_colors(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Values mapped linearly from [low, high] onto the violet to yellow ramp."""
    x = np.asarray(values, dtype=np.float64).ravel()
    t = np.clip((x - low) / (high - low), 0.0, 1.0) if high > low else np.full(len(x), 0.5)
    rgba = np.ones((len(x), 4), dtype=np.float32)
    rgba[:, :3] = _RAMP[np.rint(np.nan_to_num(t) * (len(_RAMP) - 1)).astype(np.int64)]
    return rgba


def uniform_colors(n: int, color=BOID_COLOR) -> np.ndarray:
    return np.tile(np.asarray(color, dtype=np.float32), (n, 1))


#: One colour per species, in the order of the [[species]] tables: the uniform mode's amber
#: first, then hues far from it and from each other at the same lightness and chroma.
SPECIES_PALETTE = oklch_to_srgb(0.8, 0.13, np.array([70.0, 250.0, 150.0, 330.0, 20.0, 200.0, 110.0, 290.0]))


def hex_color(text: str) -> tuple[float, float, float]:
    """sRGB in [0, 1] of a colour written ``"#rrggbb"`` (as scene files write them)."""
    return tuple(int(text[i : i + 2], 16) / 255.0 for i in (1, 3, 5))


def species_colors(species: np.ndarray, colors: tuple[str | None, ...] = ()) -> np.ndarray:
    """(N, 4) each boid's species colour: ``colors[k]`` (``"#rrggbb"``) for species k where given,
    else the palette's k-th (cycling).

    Args:
        species: (N,) int, each boid's species (``Params.species_of_boids``).
        colors: the species' own colours, in their order; None or missing: the palette's.
    """
    kinds = np.asarray(species, dtype=np.int64).ravel()
    count = int(kinds.max()) + 1 if len(kinds) else 0
    table = np.ones((max(count, 1), 4), dtype=np.float32)
    for k in range(count):
        own = colors[k] if k < len(colors) else None
        table[k, :3] = hex_color(own) if own else SPECIES_PALETTE[k % len(SPECIES_PALETTE)]
    return table[kinds]


def map_colors() -> np.ndarray:
    """Every colour any boid map can give, (K, 3) sRGB (for checking their contrast)."""
    return np.vstack([_HEADING.reshape(-1, 3), _RAMP, np.asarray(BOID_COLOR[:3])[None], SPECIES_PALETTE])
