"""How long a mesh's distance grid takes: built the first time, read from the cache after.

Issue 26's targets: a 100,000-triangle mesh's grid at 128^3 builds in at most 20 s and loads
from the cache in at most 1 s. The mesh is a closed, bumpy sphere (so its grid is 128 nodes
along every side), written as OBJ; each figure includes reading the file. The cache is a fresh
temporary folder. Needs the world extra.

    python benchmarks/mesh_grid.py [--triangles 100000] [--resolution 128]
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path

import numba
import numpy as np


def bumpy_sphere(triangles: int):
    """A closed UV sphere of about ``triangles`` triangles, its radius rippled by 10%."""
    import trimesh

    count = max(8, int(math.sqrt(triangles / 4)))
    mesh = trimesh.creation.uv_sphere(radius=1.0, count=[count, count])
    v = mesh.vertices
    r = 1.0 + 0.1 * np.sin(5 * v[:, 0]) * np.sin(4 * v[:, 1]) * np.sin(3 * v[:, 2])
    return trimesh.Trimesh(v * r[:, None], mesh.faces)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triangles", type=int, default=100_000)
    parser.add_argument("--resolution", type=int, default=128)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["FLOCK3D_CACHE_DIR"] = folder
        from flock3d.core.objects import Object
        from flock3d.io import meshes
        from flock3d.io.meshes import object_grid, read_mesh

        mesh = bumpy_sphere(args.triangles)
        path = Path(folder) / "bumpy.obj"
        mesh.export(path)
        obj = Object("mesh", file=str(path))
        print(f"mesh: {len(read_mesh(path).faces):,} triangles, watertight {read_mesh(path).is_watertight}")
        meshes._load.cache_clear()  # each figure reads the file, as a new process would
        start = time.perf_counter()
        grid = object_grid(obj, args.resolution)
        built = time.perf_counter() - start
        shape = " x ".join(map(str, grid.values.shape))
        print(f"build: {built:6.2f} s   grid {shape}, cell {grid.cell:.4f}  (target <= 20 s)")
        meshes._load.cache_clear()
        start = time.perf_counter()
        again = object_grid(obj, args.resolution)
        cached = time.perf_counter() - start
        assert np.array_equal(again.values, grid.values)
        print(f"cache: {cached:6.2f} s   (target <= 1 s)")
        print(f"threads: numba {numba.get_num_threads()}, cores {os.cpu_count()}")


if __name__ == "__main__":
    main()
