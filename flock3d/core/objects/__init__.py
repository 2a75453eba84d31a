"""The world's objects: what a scene's ``[[objects]]`` tables hold, their checks, their packed
form for the engines, their distances and the keep-out that holds boids out of them.

An :class:`Object` is a plain, hashable record (a ``Params.objects`` item): a primitive
(``box``, ``sphere``, ``cylinder``, ``capsule``, ``torus``, ``plane``), a ``heightfield`` ground
or a ``mesh`` from a file, placed by a position, a rotation and a scale, optionally moving by
keyframes (:class:`Motion`). Its ``role`` says which side is free: an ``obstacle``'s outside
(the default) or an ``arena``'s inside.

What cannot live in ``Params`` (a mesh's sampled distance grid, a heightfield's image) is
built from it elsewhere (:mod:`flock3d.io.meshes`) and handed to :func:`pack_objects` as
``fields``. The packed form is one float64 array plus offsets (see :func:`pack_objects`),
which :func:`clearance` and :func:`object_sdf` read; the step reads the same numbers as one
flat world record, the offsets and the count after the data
(:meth:`flock3d.core.terms.objects.Objects.world`).

Modules, by job: :mod:`.records` (the records), :mod:`.shapes` (what each shape is, one table),
:mod:`.checks`, :mod:`.packing`, :mod:`.distance` (compiled distances), :mod:`.keep_out` (the
compiled steer and constraint), :mod:`.oracle` (the distances as the reference engine measures
them, written from each shape's definition) and :mod:`.readable` (the keep-out's twin there). The
term that puts them in the step is :mod:`flock3d.core.terms.objects`.
"""

from flock3d.core.objects.checks import (
    covered_start_problems,
    is_color,
    motion_problems,
    needs_field,
    object_problems,
    objects_problems,
    start_samples,
)
from flock3d.core.objects.distance import (
    clearance,
    clearances,
    clearances_cached,
    clearances_ready,
    ground_clearance,
    load_clearances,
    object_clearance,
    object_frame,
    object_room,
    object_sdf,
)
from flock3d.core.objects.keep_out import MARCH, keep_out
from flock3d.core.objects.packing import HEADER, grid_skin, motion_block, pack_objects, packed
from flock3d.core.objects.records import (
    HEIGHTFIELD_SAMPLES,
    MAX_KEYFRAMES,
    MAX_OBJECTS,
    ROLES,
    SCALE_RANGE,
    Motion,
    Object,
    SDFGrid,
    normalise_motion,
    normalise_object,
    scales,
)
from flock3d.core.objects.shapes import PRIMITIVES, SHAPES, SIZE_KEYS, Shape, shape_of

__all__ = [
    "Object",
    "Motion",
    "SDFGrid",
    "Shape",
    "SHAPES",
    "SIZE_KEYS",
    "PRIMITIVES",
    "ROLES",
    "MAX_OBJECTS",
    "MAX_KEYFRAMES",
    "SCALE_RANGE",
    "HEIGHTFIELD_SAMPLES",
    "HEADER",
    "MARCH",
    "is_color",
    "normalise_object",
    "normalise_motion",
    "motion_block",
    "motion_problems",
    "object_problems",
    "objects_problems",
    "covered_start_problems",
    "start_samples",
    "needs_field",
    "scales",
    "shape_of",
    "pack_objects",
    "packed",
    "grid_skin",
    "object_sdf",
    "object_clearance",
    "object_room",
    "ground_clearance",
    "clearance",
    "clearances",
    "clearances_cached",
    "clearances_ready",
    "load_clearances",
    "object_frame",
    "keep_out",
]
