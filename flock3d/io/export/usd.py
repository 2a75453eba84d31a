"""A recording as a USD stage (``.usd``, ``.usda``, ``.usdc``), written with Pixar's usd-core.

Layout (``/Flock3d`` is the default prim)::

    /Flock3d                    Xform
        Boids                   PointInstancer: positions, orientations, velocities time-sampled
                                at the recorded frames; protoIndices, ids
            Prototypes/<shape>  one Mesh per boid shape and species (displayColor, doubleSided)
        Predators               PointInstancer, the same, when the scene has predators
        World/object_<k>_<shape> Mesh per object (ground and terrain included): points and normals
                                in its scaled local frame, displayColor (a vertex's own on the
                                ground), translate and orient
                                (time-sampled for a moving object)
        Arena                   Sphere or Cube of purpose "guide" (hidden in renders)
        Camera                  the scene's view

Stage metadata: upAxis Y (flock3d's, see :mod:`flock3d.io.export.common`), metersPerUnit
:data:`~flock3d.io.export.common.METERS_PER_UNIT`, timeCodesPerSecond and framesPerSecond the
recording's frame rate, so that frame k sits at time code ``t_k * rate`` (its simulated time
in seconds times the rate: whole numbers for evenly spaced frames) and plays at simulated speed.

Orientations: USD's ``quath`` is (real, i, j, k) when written or constructed
(``Gf.Quath(real, imaginary)``), but ``Vt.QuathArray.FromNumpy`` reads the memory layout,
(i, j, k, real); flock3d stores (w, x, y, z) = (real, i, j, k), so the columns are rolled to
(x, y, z, w) before the array is made. ``orientations`` (half precision, about 3 decimal
digits) is the attribute every importer reads (Blender, Houdini, Omniverse); velocities are
world units per simulated second, as USD wants them (per second, not per time code).

A ``.usdc`` (or ``.usd``) stage is saved every :data:`SAVE_FRAMES` frames: the crate format
then keeps the samples written on disk rather than in memory, so a recording larger than
memory exports. A ``.usda`` text layer is held in memory until it is written: for small flocks.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

import numpy as np
from pxr import Gf, Tf, Usd, UsdGeom, Vt

from flock3d.io.export.common import (
    METERS_PER_UNIT,
    Progress,
    Prototype,
    arena_of,
    camera_of,
    checked_frames,
    frame_rate,
    linear,
    linear_rows,
    predator_prototype,
    prototypes,
    recorded_scene,
    time_codes,
    world_objects,
)
from flock3d.io.trajectory import Trajectory

__all__ = ["SUFFIXES", "write", "SAVE_FRAMES", "ASPECT"]

SUFFIXES = (".usd", ".usda", ".usdc")
SAVE_FRAMES = 64
"""Frames between saves of a binary (crate) stage, which then pages the samples out of memory."""
ASPECT = 4.0 / 3.0
"""Width over height of the exported camera's film (``flock3d render``'s default 800x600)."""


def write(recording: Trajectory, path: Path, progress: Progress | None) -> None:
    """Write ``recording`` as a USD stage at ``path`` (its suffix chooses text or binary)."""
    try:
        _write(recording, path, progress)
    except Tf.ErrorException as error:  # USD's own words, without its source locations
        text = " ".join(str(error).split())
        said = re.search(r" : '([^']*)'", text)
        raise OSError(errno.EIO, said[1] if said else text[:200]) from None


def _write(recording: Trajectory, path: Path, progress: Progress | None) -> None:
    scene = recorded_scene(recording)
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
    UsdGeom.SetStageMetersPerUnit(stage, METERS_PER_UNIT)
    rate = frame_rate(recording, scene)
    codes = time_codes(recording.times, rate)
    stage.SetTimeCodesPerSecond(rate)
    stage.SetFramesPerSecond(rate)
    stage.SetStartTimeCode(float(codes[0]) if len(codes) else 0.0)
    stage.SetEndTimeCode(float(codes[-1]) if len(codes) else 0.0)
    root = UsdGeom.Xform.Define(stage, "/Flock3d")
    stage.SetDefaultPrim(root.GetPrim())
    root.GetPrim().SetCustomDataByKey("flock3d:scene", scene.name)

    protos, indices = prototypes(scene, recording.n_boids)
    instancers = [(_instancer(stage, "/Flock3d/Boids", protos, indices), _reach(protos), "")]
    if recording.n_predators:
        hunters = [predator_prototype(scene)]
        indices = np.zeros(recording.n_predators, np.int64)
        predators = _instancer(stage, "/Flock3d/Predators", hunters, indices)
        instancers.append((predators, _reach(hunters), "predator_"))
    objects, frames = world_objects(scene.params)
    placed = [_object(stage, o) for o in objects]
    still_origins, still_rotations = frames.poses(0.0)
    for o, (translate, orient) in zip(objects, placed, strict=True):
        if not o.moving:
            translate.Set(Gf.Vec3d(*still_origins[o.index]))
            orient.Set(Gf.Quatf(*still_rotations[o.index]))
    _arena(stage, scene.params)
    _camera(stage, scene)

    binary = path.suffix.lower() in (".usd", ".usdc")
    for k, state in enumerate(checked_frames(recording, progress)):
        code = Usd.TimeCode(float(codes[k]))
        for instancer, reach, prefix in instancers:
            _sample(instancer, *(getattr(state, f"{prefix}{name}") for name in _ARRAYS), code, reach)
        if frames.moving:
            origins, rotations = frames.poses(state.time)
            for o, (translate, orient) in zip(objects, placed, strict=True):
                if o.moving:
                    translate.Set(Gf.Vec3d(*origins[o.index]), code)
                    orient.Set(Gf.Quatf(*rotations[o.index]), code)
        if binary and (k + 1) % SAVE_FRAMES == 0:
            stage.Save()
    stage.Save()


_ARRAYS = ("positions", "orientations", "velocities")


def _extent(low: np.ndarray, high: np.ndarray) -> Vt.Vec3fArray:
    """A bounding box's corners as USD's extent."""
    return Vt.Vec3fArray.FromNumpy(np.array([low, high], np.float32))


def _reach(protos: list[Prototype]) -> float:
    """How far any prototype reaches from its origin, world units (pads the instancer's extent)."""
    return max(float(np.max(np.linalg.norm(p.vertices, axis=1))) for p in protos)


def _mesh(stage: Usd.Stage, where: str, vertices, faces, color, normals=None, colors=None) -> UsdGeom.Mesh:
    """A Mesh in ``color`` (sRGB); with ``colors`` (V, 3) sRGB, each vertex in its own."""
    mesh = UsdGeom.Mesh.Define(stage, where)
    points = np.ascontiguousarray(vertices, np.float32)
    mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(points))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(faces), 3, np.int32)))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(np.ascontiguousarray(faces, np.int32).ravel()))
    mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    if colors is None:
        mesh.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(*linear(color))]))
    else:
        mesh.CreateDisplayColorAttr(Vt.Vec3fArray.FromNumpy(linear_rows(colors)))
        mesh.GetDisplayColorPrimvar().SetInterpolation(UsdGeom.Tokens.vertex)
    mesh.CreateExtentAttr(_extent(points.min(axis=0), points.max(axis=0)))
    if normals is not None:
        mesh.CreateNormalsAttr(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(normals, np.float32)))
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
    return mesh


def _instancer(stage: Usd.Stage, where: str, protos: list[Prototype], indices: np.ndarray):
    """A PointInstancer of ``protos`` (one Mesh each, below it: drawn only through it)."""
    instancer = UsdGeom.PointInstancer.Define(stage, where)
    UsdGeom.Scope.Define(stage, f"{where}/Prototypes")
    targets = []
    for proto in protos:
        mesh = _mesh(stage, f"{where}/Prototypes/{proto.name}", proto.vertices, proto.faces, proto.color)
        mesh.CreateDoubleSidedAttr(True)  # the wings and tail are single triangles
        targets.append(mesh.GetPath())
    instancer.CreatePrototypesRel().SetTargets(targets)
    instancer.CreateProtoIndicesAttr(Vt.IntArray.FromNumpy(np.ascontiguousarray(indices, np.int32)))
    instancer.CreateIdsAttr(Vt.Int64Array.FromNumpy(np.arange(len(indices), dtype=np.int64)))
    for create in (instancer.CreatePositionsAttr, instancer.CreateOrientationsAttr,
                   instancer.CreateVelocitiesAttr, instancer.CreateExtentAttr):  # fmt: skip
        create()
    return instancer


def _sample(instancer, positions, orientations, velocities, code: Usd.TimeCode, reach: float) -> None:
    """One frame of an instancer: (N, 3) positions and velocities, (N, 4) wxyz orientations."""
    points = np.ascontiguousarray(positions, np.float32)
    instancer.GetPositionsAttr().Set(Vt.Vec3fArray.FromNumpy(points), code)
    xyzw = np.ascontiguousarray(np.roll(orientations, -1, axis=1), np.float16)  # see the module's notes
    instancer.GetOrientationsAttr().Set(Vt.QuathArray.FromNumpy(xyzw), code)
    speeds = np.ascontiguousarray(velocities, np.float32)
    instancer.GetVelocitiesAttr().Set(Vt.Vec3fArray.FromNumpy(speeds), code)
    if len(points):
        low, high = points.min(axis=0) - reach, points.max(axis=0) + reach
        instancer.GetExtentAttr().Set(_extent(low, high), code)


def _object(stage: Usd.Stage, o) -> tuple[Usd.Attribute, Usd.Attribute]:
    """Object ``o`` (:class:`~flock3d.io.export.common.WorldObject`) as a Mesh; its translate and
    orient ops, set by the caller (once, or per frame when it moves)."""
    if not stage.GetPrimAtPath("/Flock3d/World"):
        UsdGeom.Xform.Define(stage, "/Flock3d/World")
    mesh = _mesh(
        stage, f"/Flock3d/World/{o.name}", o.mesh.vertices, o.mesh.faces, o.color, o.mesh.normals, o.colors
    )
    mesh.GetPrim().SetCustomDataByKey("flock3d:role", o.role)
    # A ground is seen from above only; an arena object from inside; an obstacle from outside.
    mesh.CreateDoubleSidedAttr(o.role == "arena")
    translate = mesh.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble)
    orient = mesh.AddOrientOp(UsdGeom.XformOp.PrecisionFloat)
    return translate.GetAttr(), orient.GetAttr()


def _arena(stage: Usd.Stage, params) -> None:
    """The arena's wall as a guide (shown in viewports that show guides, never rendered)."""
    arena = arena_of(params)
    if arena is None:
        return
    if arena.shape == "sphere":
        prim = UsdGeom.Sphere.Define(stage, "/Flock3d/Arena")
        prim.CreateRadiusAttr(arena.radius)
        prim.CreateExtentAttr(_extent(np.full(3, -arena.radius), np.full(3, arena.radius)))
        prim.AddTranslateOp().Set(Gf.Vec3d(*arena.center))
    else:
        prim = UsdGeom.Cube.Define(stage, "/Flock3d/Arena")
        prim.CreateSizeAttr(2.0)
        prim.CreateExtentAttr(_extent(np.full(3, -1.0), np.full(3, 1.0)))
        prim.AddTranslateOp().Set(Gf.Vec3d(*arena.center))
        prim.AddScaleOp().Set(Gf.Vec3f(*map(float, np.maximum(arena.half_extents, 1e-6))))
    prim.CreatePurposeAttr(UsdGeom.Tokens.guide)
    prim.CreateDisplayOpacityAttr(Vt.FloatArray([0.15]))
    prim.GetPrim().SetCustomDataByKey("flock3d:arena", arena.shape)


def _camera(stage: Usd.Stage, scene) -> None:
    view = camera_of(scene)
    camera = Gf.Camera()
    camera.SetPerspectiveFromAspectRatioAndFieldOfView(ASPECT, view.fov, Gf.Camera.FOVVertical)
    look = Gf.Matrix4d().SetLookAt(Gf.Vec3d(*view.eye), Gf.Vec3d(*view.target), Gf.Vec3d(*view.up))
    camera.transform = look.GetInverse()  # SetLookAt gives world -> camera
    camera.clippingRange = Gf.Range1f(view.near, view.far)
    UsdGeom.Camera.Define(stage, "/Flock3d/Camera").SetFromCamera(camera)
