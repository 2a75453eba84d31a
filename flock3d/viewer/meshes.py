"""Low-poly boid shapes in body coordinates: forward +Z, up +Y, right +X, length 1.

Each shape is ``(vertices (V, 3) float32, faces (F, 3) uint32)``, centred so that
the boid's position is its middle. Closed parts are wound counter-clockwise seen
from outside; thin parts (wings, tail) are single triangles, since the renderer
draws and lights both sides of every face.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MESHES", "mesh", "speck", "wing_beat"]


def _closed(vertices: np.ndarray, faces: list[list[int]]) -> list[list[int]]:
    """Faces of a convex-ish closed part, each turned to face away from the part's centre."""
    centre = vertices[np.unique(faces)].mean(axis=0)
    out = []
    for a, b, c in faces:
        normal = np.cross(vertices[b] - vertices[a], vertices[c] - vertices[a])
        middle = (vertices[a] + vertices[b] + vertices[c]) / 3.0
        out.append([a, b, c] if normal @ (middle - centre) > 0 else [a, c, b])
    return out


def _shape(vertices, faces) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(vertices, dtype=np.float32), np.asarray(faces, dtype=np.uint32)


def dart() -> tuple[np.ndarray, np.ndarray]:
    """A flat arrowhead with a fin and a keel: 6 triangles, cheapest for large flocks."""
    v = np.array(
        [
            [0.0, 0.0, 0.5],  # 0 nose
            [-0.28, 0.0, -0.5],  # 1 left tail
            [0.28, 0.0, -0.5],  # 2 right tail
            [0.0, 0.14, -0.38],  # 3 fin
            [0.0, -0.07, -0.38],  # 4 keel
        ]
    )
    return _shape(v, _closed(v, [[0, 1, 3], [0, 3, 2], [0, 4, 1], [0, 2, 4], [1, 2, 3], [1, 4, 2]]))


def cone(sides: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """A cone pointing forward: ``2 * sides`` triangles (16 by default)."""
    a = np.linspace(0.0, 2.0 * math.pi, sides, endpoint=False)
    ring = np.c_[0.18 * np.cos(a), 0.18 * np.sin(a), np.full(sides, -0.5)]
    v = np.vstack([[0.0, 0.0, 0.5], ring, [0.0, 0.0, -0.5]])
    tip, base = 0, sides + 1
    faces = []
    for i in range(sides):
        j = 1 + (i + 1) % sides
        faces += [[tip, 1 + i, j], [base, 1 + i, j]]
    return _shape(v, _closed(v, faces))


def bird() -> tuple[np.ndarray, np.ndarray]:
    """A body with swept wings and a tail fan: 11 triangles, reads as a bird from any side."""
    v = np.array(
        [
            [0.0, 0.0, 0.5],  # 0 beak
            [0.0, 0.07, 0.1],  # 1 back
            [0.0, -0.06, 0.1],  # 2 belly
            [-0.07, 0.0, 0.1],  # 3 left flank
            [0.07, 0.0, 0.1],  # 4 right flank
            [0.0, 0.0, -0.3],  # 5 tail root
            [-0.55, 0.05, -0.15],  # 6 left wing tip
            [0.55, 0.05, -0.15],  # 7 right wing tip
            [-0.14, 0.0, -0.5],  # 8 left tail corner
            [0.14, 0.0, -0.5],  # 9 right tail corner
            [-0.05, 0.03, 0.15],  # 10 left shoulder, front
            [-0.05, 0.03, -0.12],  # 11 left shoulder, rear
            [0.05, 0.03, 0.15],  # 12 right shoulder, front
            [0.05, 0.03, -0.12],  # 13 right shoulder, rear
        ]
    )
    body = _closed(
        v, [[0, 1, 3], [0, 4, 1], [0, 3, 2], [0, 2, 4], [1, 5, 3], [1, 4, 5], [2, 3, 5], [2, 5, 4]]
    )
    thin = [[10, 11, 6], [12, 13, 7], [5, 8, 9]]  # one-sided: the renderer lights both sides
    return _shape(v, body + thin)


def speck() -> tuple[np.ndarray, np.ndarray]:
    """The bird's two swept wings alone, two triangles meeting along its back (the tips still
    beat): what a boid of a few pixels is drawn with, where the bird's thin body would be a
    pixel wide anyway. Not offered as a shape of its own."""
    v = np.array(
        [
            [0.0, 0.03, 0.3],  # 0 front of the back
            [0.0, 0.03, -0.2],  # 1 rear of the back
            [-0.55, 0.05, -0.2],  # 2 left wing tip
            [0.55, 0.05, -0.2],  # 3 right wing tip
        ]
    )
    return _shape(v, [[0, 1, 2], [0, 3, 1]])


MESHES = {"dart": dart, "cone": cone, "bird": bird}


def mesh(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The shape called ``name`` (``dart``, ``cone`` or ``bird``)."""
    try:
        return MESHES[name]()
    except KeyError:
        raise ValueError(f"unknown boid mesh {name!r}; choose one of {', '.join(MESHES)}") from None


def wing_beat(name: str) -> np.ndarray:
    """(V,) float32: how much of the wing beat each vertex of shape ``name`` takes.

    The bird's wing tips take all of it (the renderer moves them up and down along
    the body's up axis); its body, shoulders and tail none. Other shapes do not beat.
    """
    vertices, _ = speck() if name == "speck" else mesh(name)
    weights = np.zeros(len(vertices), np.float32)
    if name == "bird":
        weights[[6, 7]] = 1.0  # the wing tips
    elif name == "speck":
        weights[[2, 3]] = 1.0
    return weights
