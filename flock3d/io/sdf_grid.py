"""A mesh's signed distances sampled on a grid, computed by libigl (:mod:`flock3d.io.meshes`
describes the grid and its error bound).
"""

from __future__ import annotations

import math

import numpy as np

from flock3d.core.objects import SDFGrid
from flock3d.io.world_extra import MeshError

__all__ = ["GRID_RESOLUTION", "GRID_MARGIN", "EXACT_BAND", "mesh_grid", "grid_lattice"]

#: Nodes along the longest side of a mesh's grid.
GRID_RESOLUTION = 128
#: Margin around a mesh's bounding box, as a fraction of its longest side.
GRID_MARGIN = 0.125


def mesh_grid(vertices: np.ndarray, faces: np.ndarray, resolution: int = GRID_RESOLUTION) -> SDFGrid:
    """Signed distances of the mesh sampled on a grid (see the module's notes), computed by
    libigl: the sign from pseudonormals when the mesh is closed and consistently oriented,
    from the fast winding number otherwise.

    libigl's closest-point search visits nearly every triangle from a point that many
    triangles are about equally far from (deep inside a round shape, far outside one), so
    sampling every node of 128^3 took 60 to 80 s for 100,000 triangles on two cores. Nodes
    are therefore computed coarse to fine: libigl gives the distance at every
    :data:`_STRIDE`-th node along each axis; a coarse cell whose corners are all farther
    than :data:`EXACT_BAND` cells plus half its diagonal from the surface holds no node
    within that band (the distance is 1-Lipschitz) and takes its nodes by trilinear
    interpolation of its corners; libigl computes every other node. So every node within
    ``EXACT_BAND * h`` of the surface is the mesh's own distance, and every node is within
    ``sqrt(3) / 2 * _STRIDE * h`` of it, with its sign exact.

    Args:
        vertices: (V, 3) float64 in the object's scaled local frame; faces: (F, 3) int.
        resolution: nodes along the longest side, at least 2.
    """
    import igl
    import trimesh

    v = np.ascontiguousarray(vertices, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    origin, h, nodes = grid_lattice(v, resolution)
    mesh = trimesh.Trimesh(v, f, process=False)
    kind = igl.SignedDistanceType
    sign = (
        kind.SIGNED_DISTANCE_TYPE_PSEUDONORMAL
        if mesh.is_watertight and mesh.is_winding_consistent
        else kind.SIGNED_DISTANCE_TYPE_FAST_WINDING_NUMBER
    )

    # libigl holds the GIL through a call, and a window's event loop waits on this read from
    # another thread: the nodes go to libigl a part at a time, so that the loop draws between
    # parts. Each call builds its own tree of the triangles: parts of at least 30 nodes a
    # triangle keep that out of the time (a mesh of 20,000 triangles or more goes in one or two
    # parts, as before). A node's distance is its own: the parts change no value.
    part = max(_PART_NODES, 30 * len(f))

    def distances(i, j, k):  # libigl's distances at the nodes of index arrays i, j, k
        points = (origin + h * np.stack([i, j, k], axis=-1).astype(np.float64)).reshape(-1, 3)
        found = [igl.signed_distance(points[s : s + part], v, f, sign_type=sign)[0]
                 for s in range(0, len(points), part)]  # fmt: skip
        return np.concatenate(found) if found else np.zeros(0)

    coarse = [np.unique(np.r_[np.arange(0, n, _STRIDE), n - 1]) for n in nodes]
    at = np.meshgrid(*coarse, indexing="ij")
    corners = distances(*at).reshape(at[0].shape)
    # Coarse cells all of whose nodes lie beyond the band: the least |d| of the corners, less
    # the farthest a node can be from its nearest corner.
    a = np.abs(corners)
    least = np.minimum.reduce(
        [a[x : a.shape[0] - 1 + x, y : a.shape[1] - 1 + y, z : a.shape[2] - 1 + z] for x in (0, 1)
         for y in (0, 1) for z in (0, 1)]
    )  # fmt: skip
    far_cells = least > (EXACT_BAND + 0.5 * math.sqrt(3.0) * _STRIDE) * h
    weights = [_linear_weights(n, c) for n, c in zip(nodes, coarse, strict=True)]
    values = np.einsum("ia,jb,kc,abc->ijk", *weights, corners, optimize=True)
    cell_of = [np.minimum(np.searchsorted(c, np.arange(n), side="right") - 1, len(c) - 2) for n, c in
               zip(nodes, coarse, strict=True)]  # fmt: skip
    near = ~far_cells[np.ix_(*cell_of)]
    values[near] = distances(*np.nonzero(near))
    return SDFGrid(tuple(float(c) for c in origin), float(h), np.ascontiguousarray(values))


def grid_lattice(
    vertices: np.ndarray, resolution: int = GRID_RESOLUTION
) -> tuple[np.ndarray, float, np.ndarray]:
    """The lattice of a mesh's grid (see the module's notes), known before anything is sampled:
    ``(origin (3,), h, nodes (3,) int64)``; the grid holds ``prod(nodes)`` float64 values.

    Args:
        vertices: (V, 3) float64 in the object's scaled local frame.
        resolution: nodes along the longest side, at least 2.

    Raises:
        MeshError: the mesh is a single point.
    """
    low, high = vertices.min(axis=0), vertices.max(axis=0)
    longest = float(max(high - low))
    if not longest > 0.0:
        raise MeshError("the mesh is a single point; it encloses nothing")
    h = longest * (1.0 + 2.0 * GRID_MARGIN) / (resolution - 1)
    nodes = np.ceil((high - low) / h + 2.0 * GRID_MARGIN * longest / h).astype(np.int64) + 1
    nodes = np.clip(nodes, 2, resolution)
    origin = 0.5 * (low + high) - 0.5 * (nodes - 1) * h
    return origin, h, nodes


#: Nodes between the coarse nodes libigl computes first (see :func:`mesh_grid`).
_STRIDE = 4
#: Every node this many cells or less from the surface is computed by libigl.
EXACT_BAND = 8
#: The fewest nodes libigl is given in one call (see :func:`mesh_grid`): the window waits at
#: most 0.03-0.18 s on a part for the shipped rocks (slow 2 cores); 8,192 cost a third more time.
_PART_NODES = 32_768


def _linear_weights(n: int, coarse: np.ndarray) -> np.ndarray:
    """(n, len(coarse)): linear interpolation from the coarse node indices to every index 0..n-1."""
    i = np.arange(n)
    a = np.minimum(np.searchsorted(coarse, i, side="right") - 1, len(coarse) - 2)
    t = (i - coarse[a]) / (coarse[a + 1] - coarse[a])
    w = np.zeros((n, len(coarse)))
    w[i, a] = 1.0 - t
    w[i, a + 1] += t
    return w
