"""Makes the small assets of scenes/worlds: the canyon's and the valley's heightfield images, the
cave (a closed, lumpy mesh that is an arena) and a rock. Deterministic: run it again and the files
come out the same. Needs the world extra (trimesh, imageio).

    python scenes/worlds/assets/make_assets.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
SIDE = 129  # pixels a side of a heightfield image


def _noise(u: np.ndarray, w: np.ndarray, seed: int, octaves: int = 4) -> np.ndarray:
    """Smooth value noise in [-1, 1] over the unit square (sums of sines at random phases)."""
    rng = np.random.default_rng(seed)
    total = np.zeros_like(u)
    for o in range(octaves):
        f = 2.0 ** (o + 1)
        a, b, c = rng.uniform(0, 2 * np.pi, 3)
        total += 0.5**o * np.sin(f * 2 * np.pi * u + a) * np.cos(f * 2 * np.pi * w + b + c * u)
    return total / 1.9


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _save_heights(name: str, heights: np.ndarray) -> None:
    """``heights[i, k]`` (i along +X, k along +Z) in [0, 1] as a 16-bit grey PNG: column i, row k."""
    import imageio.v3 as iio

    pixels = np.round(np.clip(heights, 0.0, 1.0) * 65535).astype(np.uint16).T
    iio.imwrite(HERE / name, pixels)


def trench_centre(u: np.ndarray) -> np.ndarray:
    """Where across the canyon image (0 to 1 along Z) its trench runs, at u along X."""
    return 0.5 + 0.17 * np.sin(2 * np.pi * (u - 0.1)) + 0.05 * np.sin(6 * np.pi * u)


def canyon() -> None:
    """A plateau cut by a winding trench: floor 0, steep walls, plateau at 1 (with some relief)."""
    u, w = np.meshgrid(np.linspace(0, 1, SIDE), np.linspace(0, 1, SIDE), indexing="ij")
    across = np.abs(w - trench_centre(u))
    wall = _smoothstep((across - 0.07) / 0.06)
    relief = 0.06 * _noise(u, w, 1)
    _save_heights("canyon.png", np.clip(wall * (0.9 + relief) + 0.02 * (1 + _noise(u, w, 2)), 0, 1))


def valley() -> None:
    """A valley along X: a flat, grassy floor rising to hills on both sides."""
    u, w = np.meshgrid(np.linspace(0, 1, SIDE), np.linspace(0, 1, SIDE), indexing="ij")
    across = np.abs(w - 0.5 - 0.08 * np.sin(2 * np.pi * u))
    slopes = _smoothstep((across - 0.12) / 0.35)
    hills = slopes * (0.75 + 0.25 * _noise(u, w, 3))
    _save_heights("valley.png", np.clip(hills + 0.015 * (1 + _noise(u, w, 4, octaves=6)), 0, 1))


def _lumpy(subdivisions: int, seed: int, amount: float):
    """A closed icosphere of radius 1 whose radius is rippled by up to ``amount``."""
    import trimesh

    mesh = trimesh.creation.icosphere(subdivisions, radius=1.0)
    v = mesh.vertices
    rng = np.random.default_rng(seed)
    ripple = np.zeros(len(v))
    for _ in range(6):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        ripple += np.sin(rng.uniform(2, 5) * (v @ axis) + rng.uniform(0, 2 * np.pi))
    mesh.vertices = v * (1.0 + amount * ripple / 6.0)[:, None]
    return mesh


def main() -> None:
    canyon()
    valley()
    cave = _lumpy(3, 5, 0.35)
    assert cave.is_watertight
    cave.export(HERE / "cave.obj", digits=4)
    rock = _lumpy(2, 7, 0.25)
    assert rock.is_watertight
    rock.export(HERE / "rock.obj", digits=4)


if __name__ == "__main__":
    main()
