"""A recording as glTF 2.0 (``.glb`` binary, or ``.gltf`` text with its data embedded), written
with pygltflib.

One node per boid (and predator), all sharing their shape's mesh, moved by one animation
whose samplers are LINEAR in translation and rotation at the recorded times (glTF
interpolates rotations by slerp); the world's objects as meshes with their colours (a moving
one animated the same way; the ground a colour a vertex, ``COLOR_0``); the scene's camera. The
arena's wall is not written (glTF has no hidden guide geometry; an arena *object* is written as
any object).

Coordinates are flock3d's (+Y up, which is glTF's; world units as metres, see
:mod:`flock3d.io.export.common`). glTF's quaternions are (x, y, z, w): flock3d's (w, x, y, z)
are reordered. Animation time is simulated time from the first frame (glTF players start at
0); the first frame's simulated time is in the animation's ``extras``.

A node per boid is what game engines import as objects; it does not scale to murmurations,
so at most :data:`MAX_BOIDS` boids are written (USD's instancer takes any number). The
animation is assembled in memory, 28 bytes per boid and frame, as glTF stores each node's
samples together while a recording stores each frame's boids together.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pygltflib as gl

from flock3d.io.export.common import (
    Progress,
    Prototype,
    camera_of,
    checked_frames,
    linear,
    linear_rows,
    predator_prototype,
    prototypes,
    recorded_scene,
    world_objects,
)
from flock3d.io.trajectory import Trajectory

__all__ = ["SUFFIXES", "MAX_BOIDS", "write"]

SUFFIXES = (".glb", ".gltf")
MAX_BOIDS = 5_000
"""Most boids (and predators) a glTF export takes: one node and two animation channels each."""
ASPECT = 4.0 / 3.0
"""Width over height of the exported camera (``flock3d render``'s default 800x600)."""


class _Blob:
    """The one buffer: byte arrays appended 4-byte aligned, each with its buffer view."""

    def __init__(self, gltf: gl.GLTF2) -> None:
        self.gltf, self.parts, self.size = gltf, [], 0

    def view(self, data: np.ndarray, target: int | None = None) -> int:
        raw = np.ascontiguousarray(data).tobytes()
        self.gltf.bufferViews.append(gl.BufferView(buffer=0, byteOffset=self.size, byteLength=len(raw),
                                                   target=target))  # fmt: skip
        pad = -len(raw) % 4
        self.parts.append(raw + b"\0" * pad)
        self.size += len(raw) + pad
        return len(self.gltf.bufferViews) - 1

    def accessor(self, view: int, data: np.ndarray, kind: str, offset: int = 0, bounds: bool = False) -> int:
        """An accessor of ``data`` (count rows of ``kind``) at ``offset`` bytes into ``view``."""
        component = gl.UNSIGNED_INT if data.dtype == np.uint32 else gl.FLOAT
        flat = data.reshape(len(data), -1)
        extra = {"min": flat.min(axis=0).tolist(), "max": flat.max(axis=0).tolist()} if bounds else {}
        self.gltf.accessors.append(gl.Accessor(bufferView=view, byteOffset=offset, componentType=component,
                                               count=len(data), type=kind, **extra))  # fmt: skip
        return len(self.gltf.accessors) - 1

    def finish(self) -> bytes:
        blob = b"".join(self.parts)
        self.gltf.buffers.append(gl.Buffer(byteLength=len(blob)))
        return blob


def _material(gltf: gl.GLTF2, color, double_sided: bool) -> int:
    pbr = gl.PbrMetallicRoughness(
        baseColorFactor=[*linear(color), 1.0], metallicFactor=0.0, roughnessFactor=0.8
    )
    gltf.materials.append(gl.Material(pbrMetallicRoughness=pbr, doubleSided=double_sided))
    return len(gltf.materials) - 1


def _mesh(gltf: gl.GLTF2, blob: _Blob, name: str, vertices, faces, color, normals=None, double_sided=True,
          colors=None) -> int:  # fmt: skip
    """A mesh of one primitive in ``color`` (sRGB); with ``colors`` (V, 3) sRGB, each vertex in its
    own (COLOR_0, linear, which glTF multiplies by the material's colour: white then)."""
    points = np.asarray(vertices, np.float32)
    attributes = gl.Attributes(POSITION=blob.accessor(blob.view(points, gl.ARRAY_BUFFER), points, gl.VEC3,
                                                      bounds=True))  # fmt: skip
    if normals is not None:
        n = np.asarray(normals, np.float32)
        attributes.NORMAL = blob.accessor(blob.view(n, gl.ARRAY_BUFFER), n, gl.VEC3)
    if colors is not None:
        rgb = linear_rows(colors)
        attributes.COLOR_0 = blob.accessor(blob.view(rgb, gl.ARRAY_BUFFER), rgb, gl.VEC3)
        color = (1.0, 1.0, 1.0)
    indices = np.asarray(faces, np.uint32).ravel()
    primitive = gl.Primitive(attributes=attributes, material=_material(gltf, color, double_sided),
                             indices=blob.accessor(blob.view(indices, gl.ELEMENT_ARRAY_BUFFER), indices,
                                                   gl.SCALAR))  # fmt: skip
    gltf.meshes.append(gl.Mesh(name=name, primitives=[primitive]))
    return len(gltf.meshes) - 1


def _animate(blob: _Blob, animation: gl.Animation, nodes: list[int], times: int, moves: np.ndarray,
             turns: np.ndarray) -> None:  # fmt: skip
    """Channels moving ``nodes`` through ``moves`` (T, K, 3) and ``turns`` (T, K, 4) xyzw at the
    times of accessor ``times``: each node's samples together, one accessor per node and path."""
    for path, samples, kind in (("translation", moves, gl.VEC3), ("rotation", turns, gl.VEC4)):
        by_node = np.ascontiguousarray(np.swapaxes(samples, 0, 1), np.float32)  # (K, T, width)
        view = blob.view(by_node)
        stride = by_node.shape[1] * by_node.shape[2] * 4
        for k, node in enumerate(nodes):
            output = blob.accessor(view, by_node[k], kind, offset=k * stride)
            animation.samplers.append(
                gl.AnimationSampler(input=times, output=output, interpolation=gl.ANIM_LINEAR)
            )
            target = gl.AnimationChannelTarget(node=node, path=path)
            animation.channels.append(gl.AnimationChannel(sampler=len(animation.samplers) - 1, target=target))


def _xyzw(q: np.ndarray) -> np.ndarray:
    return np.roll(np.asarray(q, np.float64), -1, axis=-1)


def write(recording: Trajectory, path: Path, progress: Progress | None) -> None:
    """Write ``recording`` as glTF at ``path`` (``.glb`` binary, ``.gltf`` text)."""
    scene = recorded_scene(recording)
    n, m = recording.n_boids, recording.n_predators
    gltf = gl.GLTF2(asset=gl.Asset(generator="flock3d"), scene=0)
    gltf.scenes.append(gl.Scene(name=scene.name, nodes=[0]))  # the root node, below
    blob = _Blob(gltf)
    root = gl.Node(name="flock3d", children=[], extras={"flock3d:scene": scene.name})
    gltf.nodes.append(root)

    def add(node: gl.Node) -> int:
        gltf.nodes.append(node)
        root.children.append(len(gltf.nodes) - 1)
        return len(gltf.nodes) - 1

    protos, kinds = prototypes(scene, n)
    shapes: list[tuple[Prototype, np.ndarray]] = [(p, kinds == k) for k, p in enumerate(protos)]
    if m:
        shapes.append((predator_prototype(scene), None))
    meshes = [_mesh(gltf, blob, p.name, p.vertices, p.faces, p.color) for p, _ in shapes]
    boid_mesh = np.array([meshes[k] for k in kinds], np.int64)
    boid_nodes = [add(gl.Node(name=f"boid_{i}", mesh=int(boid_mesh[i]))) for i in range(n)]
    boid_nodes += [add(gl.Node(name=f"predator_{j}", mesh=meshes[-1])) for j in range(m)]

    objects, frames = world_objects(scene.params)
    origins, rotations = frames.poses(0.0)
    object_nodes = []
    for o in objects:
        index = _mesh(gltf, blob, o.name, o.mesh.vertices, o.mesh.faces, o.color, o.mesh.normals,
                      double_sided=o.role == "arena", colors=o.colors)  # fmt: skip
        turn = _xyzw(rotations[o.index]).tolist()
        node = gl.Node(name=o.name, mesh=index, translation=origins[o.index].tolist(), rotation=turn,
                       extras={"flock3d:role": o.role})  # fmt: skip
        object_nodes.append(add(node))

    view = camera_of(scene)
    gltf.cameras.append(gl.Camera(type="perspective", perspective=gl.Perspective(
        aspectRatio=ASPECT, yfov=float(np.radians(view.fov)), znear=view.near, zfar=view.far)))  # fmt: skip
    add(
        gl.Node(
            name="camera", camera=0, translation=view.eye.tolist(), rotation=_xyzw(view.orientation).tolist()
        )
    )

    t = len(recording)
    moves = np.empty((t, n + m, 3), np.float32)
    turns = np.empty((t, n + m, 4), np.float32)
    moving = [o for o in objects if o.moving]
    object_moves = np.empty((t, len(moving), 3), np.float32)
    object_turns = np.empty((t, len(moving), 4), np.float32)
    times = np.empty(t, np.float64)
    for k, state in enumerate(checked_frames(recording, progress)):
        times[k] = state.time
        moves[k, :n], turns[k, :n] = state.positions, _xyzw(state.orientations)
        moves[k, n:], turns[k, n:] = state.predator_positions, _xyzw(state.predator_orientations)
        if moving:
            origins, rotations = frames.poses(state.time)
            indices = [o.index for o in moving]
            object_moves[k], object_turns[k] = origins[indices], _xyzw(rotations[indices])
    for k, node in enumerate(boid_nodes):  # the first frame also places them for viewers that do not animate
        gltf.nodes[node].translation = moves[0, k].tolist()
        gltf.nodes[node].rotation = turns[0, k].tolist()

    # glTF requires an animation to have a channel: none without frames to play or nodes moving
    # (a flock of no boids in a world that stands still).
    if t > 1 and (boid_nodes or moving):
        clock = (times - times[0]).astype(np.float32)
        start = {"flock3d:start_time": times[0]}
        animation = gl.Animation(name="flight", samplers=[], channels=[], extras=start)
        time_accessor = blob.accessor(blob.view(clock), clock, gl.SCALAR, bounds=True)
        _animate(blob, animation, boid_nodes, time_accessor, moves, turns)
        if moving:
            nodes = [object_nodes[objects.index(o)] for o in moving]
            _animate(blob, animation, nodes, time_accessor, object_moves, object_turns)
        gltf.animations.append(animation)
    gltf.set_binary_blob(blob.finish())
    if path.suffix.lower() == ".glb":
        gltf.save_binary(str(path))
        return
    gltf.convert_buffers(gl.BufferFormat.DATAURI)
    gltf.save_json(str(path))
