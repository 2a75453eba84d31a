"""Blender opens flock3d's USD and glTF exports: run with a Python that has ``bpy`` (Blender as
a module, which pins its own numpy and so lives in its own environment) and h5py::

    python tests/blender_import.py RUN.h5 RUN.usda RUN.glb

It prints, as JSON, the largest differences between the recording and what Blender places at
frames of each file: boid positions and their noses (the body's +Z), in Blender's Z-up world,
(x, y, z) -> (x, -z, y). Blender's USD import turns the whole stage; its glTF import turns each
mesh's vertices as well, so that a boid's nose is its mesh's -Y there.
"""

import json
import sys

import bpy
import h5py
import numpy as np

TO_Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])


def forward(q: np.ndarray) -> np.ndarray:
    """(N, 3) flock3d's forward: (N, 4) w x y z applied to +Z."""
    w, x, y, z = q.T
    return np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=1)


def errors(matrices, nose, k) -> tuple[float, float]:
    """Largest position and nose errors of the (4, 4) world matrices against frame k."""
    got = np.array([m[:3, 3] for m in matrices])
    noses = np.array([m[:3, :3] @ nose for m in matrices])
    noses /= np.linalg.norm(noses, axis=1, keepdims=True)
    want, heading = positions[k] @ TO_Z_UP.T, forward(orientations[k]) @ TO_Z_UP.T
    order = [int(np.argmin(np.linalg.norm(want - g, axis=1))) for g in got]  # instances come in any order
    return float(np.abs(got - want[order]).max()), float(np.abs(noses - heading[order]).max())


h5, usd, gltf = sys.argv[1:4]
with h5py.File(h5) as f:  # the boids, then the predators
    groups = [g for g in ("particles/flock", "particles/predators") if g in f]
    positions = np.concatenate([f[f"{g}/position/value"][()] for g in groups], axis=1)
    orientations = np.concatenate([f[f"{g}/orientation/value"][()] for g in groups], axis=1)
    times = f["particles/flock/position/time"][()]
frames = sorted({0, len(times) // 2, len(times) - 1})
out = {"usd": [], "gltf": []}

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.wm.usd_import(filepath=usd)
scene = bpy.context.scene
for k in frames:
    scene.frame_set(k)  # time code k
    graph = bpy.context.evaluated_depsgraph_get()
    matrices = [np.array(i.matrix_world) for i in graph.object_instances if i.is_instance]
    out["usd"].append([len(matrices), *errors(matrices, np.array([0.0, 0.0, 1.0]), k)])

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=gltf)
scene = bpy.context.scene
fps = scene.render.fps / scene.render.fps_base
boids = [o for o in bpy.data.objects if o.name.startswith(("boid_", "predator_"))]
for k in frames:
    frame = (times[k] - times[0]) * fps
    scene.frame_set(int(frame), subframe=frame - int(frame))
    matrices = [np.array(o.matrix_world) for o in boids]
    out["gltf"].append([len(matrices), *errors(matrices, np.array([0.0, -1.0, 0.0]), k)])
print(json.dumps(out))
