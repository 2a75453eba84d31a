"""What each shape of a world object is, declared once: the table the checks, the packing, the
viewer's drawing and its edit handles all read.

A shape is one :class:`Shape` subclass: the keys that size it, the checks its sizes need beyond
being positive, how its sizes scale, what it packs for the engines (its scaled sizes and a bound),
whether it is ground, closed or convex, where its distances come from when they come from a file,
and, for a primitive the viewer adds, its upright proportions and how far its origin sits above
its lowest point. Its signed distance is compiled code and dispatches on :attr:`Shape.kind`
(:mod:`flock3d.core.geometry`'s codes, :func:`flock3d.core.objects.distance.object_sdf`); the
reference engine's readable twin dispatches on its name (:data:`flock3d.core.objects.oracle.SDFS`).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from flock3d.core import geometry as g
from flock3d.core.fields import is_whole_number, short_repr

__all__ = ["Shape", "SHAPES", "SIZE_KEYS", "SHAPE_KEYS", "KEY_TEXTS", "PRIMITIVES", "shape_of"]

#: What each key that sizes a shape is, in words.
KEY_TEXTS = {
    "size": "its side lengths [x, y, z]",
    "radius": "a radius",
    "height": "a height",
    "tube": "the radius of its tube",
    "file": "the mesh file to read",
}


class Shape:
    """One shape of object. Subclasses set the class attributes and override what differs; the
    defaults describe a closed, bounded shape sized by its ``radius`` alone."""

    name: ClassVar[str]
    size_keys: ClassVar[tuple[str, ...]] = ()
    """The keys that size it, each required."""
    other_keys: ClassVar[tuple[str, ...]] = ()
    """Keys it also takes (a heightfield's ``image`` or ``seed``)."""
    size_count: ClassVar[int] = 3
    """How many numbers its ``size`` holds."""
    key_texts: ClassVar[dict[str, str]] = {}
    """What each key it requires is, where it differs from :data:`KEY_TEXTS`'."""
    scaling: ClassVar[str] = "any"
    """How it may be scaled: ``"any"`` factor per axis, ``"one"`` factor (a sphere stays a
    sphere), or ``"xz"``, equal factors across its round section."""
    ground: ClassVar[bool] = False
    """Ground the flock flies over (a plane, a heightfield): it encloses nothing, so it is no
    arena, and shadows fall on it."""
    convex: ClassVar[bool] = False
    """A segment between two points inside it stays inside it (an arena of it needs no march)."""
    round: ClassVar[bool] = False
    """Drawn with segments around its axis."""
    field: ClassVar[str] = ""
    """Its distances come from sampled data packed after its header: ``"grid"`` (a mesh's signed
    distances), ``"heights"`` (a heightfield's), or "" (closed forms)."""
    edgeless: ClassVar[bool] = False
    """It goes on forever (a plane): drawn as a square reaching the world's extent."""

    @property
    def kind(self) -> int:
        """Its code in the packed record (:data:`flock3d.core.geometry.KINDS`)."""
        return g.KINDS.index(self.name)

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key it takes."""
        return self.size_keys + self.other_keys

    def key_text(self, key: str) -> str:
        """What its required ``key`` is, in words."""
        return self.key_texts.get(key, KEY_TEXTS[key])

    @property
    def closed(self) -> bool:
        """Whether it encloses a volume: only a closed shape may be an arena."""
        return not self.ground

    def problems(self, o: Any) -> list[str]:
        """Its sizes' problems beyond each being given and positive, reading after the object's
        index (``.tube must be < ...``)."""
        return []

    def extents(self, o: Any, sx: float, sy: float, sz: float) -> list[float]:
        """Its sizes as scaled by (sx, sy, sz): none may exceed the largest magnitude."""
        return [v * max(sx, sy, sz) for v in (o.radius, o.height, o.tube) if v is not None]

    def packed(self, o: Any, sx: float, sy: float, sz: float) -> tuple[list[float], float]:
        """The sizes the engines read (scaled, at most 4) and a bound B: the distance at x is at
        least |x - origin| - B (inf: unbounded)."""
        return [], math.inf

    def source(self, o: Any) -> str | None:
        """The file its distances are read from, or None when they are closed forms."""
        return None

    def upright(self, size: float) -> dict[str, Any] | None:
        """The sizes of a new one about ``size`` units across, standing upright (None: the viewer
        adds no such primitive)."""
        return None

    def lift(self, o: Any, up: np.ndarray) -> float:
        """How far its origin is above its lowest point along unit axis ``up`` (a world axis),
        standing upright as :meth:`upright` made it."""
        return o.radius

    def thinnest(self, o: Any, sx: float, sy: float, sz: float) -> float:
        """How thick its thinnest solid part is, scaled by (sx, sy, sz): what a move must not
        outstep to be stopped (inf: a ground, solid all the way down; nan: not known without
        measuring, a mesh)."""
        return 2.0 * o.radius * max(sx, sy, sz)


class Box(Shape):
    name = "box"
    size_keys = ("size",)
    convex = True

    def extents(self, o, sx, sy, sz):
        return [o.size[0] * sx, o.size[1] * sy, o.size[2] * sz]

    def packed(self, o, sx, sy, sz):
        half = [0.5 * o.size[0] * sx, 0.5 * o.size[1] * sy, 0.5 * o.size[2] * sz]
        return half, math.hypot(*half)

    def upright(self, size):
        return {"size": (size, size, size)}

    def lift(self, o, up):
        return 0.5 * float(np.abs(up) @ o.size)

    def thinnest(self, o, sx, sy, sz):
        return min(o.size[0] * sx, o.size[1] * sy, o.size[2] * sz)


class Sphere(Shape):
    name = "sphere"
    size_keys = ("radius",)
    scaling = "one"
    convex = True
    round = True

    def packed(self, o, sx, sy, sz):
        return [o.radius * sx], o.radius * sx

    def upright(self, size):
        return {"radius": 0.5 * size}


class Cylinder(Shape):
    name = "cylinder"
    size_keys = ("radius", "height")
    scaling = "xz"
    convex = True
    round = True

    def packed(self, o, sx, sy, sz):
        r, hh = o.radius * sx, 0.5 * o.height * sy
        return [r, hh], math.hypot(r, hh)

    def upright(self, size):
        return {"radius": 0.3 * size, "height": size}

    def lift(self, o, up):
        return 0.5 * o.height if up[1] else o.radius

    def thinnest(self, o, sx, sy, sz):
        return min(2.0 * o.radius * sx, o.height * sy)


class Capsule(Cylinder):
    name = "capsule"

    def problems(self, o):
        if o.height < 2.0 * o.radius:
            return [
                f".height must be at least twice its radius ({2 * o.radius:g}): it includes both caps "
                f"(got {o.height:g})"
            ]
        return []

    def packed(self, o, sx, sy, sz):
        r = o.radius * sx
        half_segment = 0.5 * o.height * sy - r  # between the caps' centres
        return [r, half_segment], half_segment + r

    def upright(self, size):
        return {"radius": 0.25 * size, "height": size}

    def thinnest(self, o, sx, sy, sz):
        return 2.0 * o.radius * sx


class Torus(Shape):
    name = "torus"
    size_keys = ("radius", "tube")
    scaling = "one"
    round = True

    def problems(self, o):
        if not o.tube < o.radius:
            return [f".tube must be < its radius {o.radius:g}, or the ring closes up (got {o.tube:g})"]
        return []

    def packed(self, o, sx, sy, sz):
        return [o.radius * sx, o.tube * sx], (o.radius + o.tube) * sx

    def upright(self, size):
        return {"radius": 0.5 * size, "tube": 0.12 * size}

    def lift(self, o, up):
        return o.tube if up[1] else o.radius + o.tube

    def thinnest(self, o, sx, sy, sz):
        return 2.0 * o.tube * sx


class Plane(Shape):
    name = "plane"
    ground = True
    edgeless = True

    def thinnest(self, o, sx, sy, sz):
        return math.inf


class Heightfield(Shape):
    name = "heightfield"
    size_keys = ("size", "height")
    other_keys = ("image", "seed")
    size_count = 2
    field = "heights"
    key_texts: ClassVar[dict[str, str]] = {"size": "its footprint [x, z]"}
    ground = True

    def problems(self, o):
        if (o.image is None) == (o.seed is None):
            given = "neither was given" if o.image is None else "both were given"
            return [f".image (a greyscale PNG) or .seed (fractal terrain): a heightfield takes one; {given}"]
        if o.seed is not None and not (is_whole_number(o.seed) and 0 <= o.seed < 2**63):
            return [f".seed must be a whole number from 0 to 2**63 - 1 (got {short_repr(o.seed)})"]
        if o.image is not None and not (isinstance(o.image, str) and o.image):
            return [f".image must be the name of a PNG file (got {short_repr(o.image)})"]
        return []

    def extents(self, o, sx, sy, sz):
        return [o.size[0] * sx, o.height * sy, o.size[1] * sz]

    def source(self, o):
        return o.image

    def thinnest(self, o, sx, sy, sz):
        return math.inf


class Mesh(Shape):
    name = "mesh"
    size_keys = ("file",)
    field = "grid"

    def problems(self, o):
        if not (isinstance(o.file, str) and o.file):
            return [f".file must be the name of a mesh file (got {short_repr(o.file)})"]
        return []

    def extents(self, o, sx, sy, sz):
        return []

    def source(self, o):
        return o.file

    def thinnest(self, o, sx, sy, sz):
        return math.nan


#: Every shape by name, in the order messages list them.
SHAPES: dict[str, Shape] = {
    s.name: s for s in (Mesh(), Box(), Sphere(), Cylinder(), Capsule(), Torus(), Plane(), Heightfield())
}
#: The keys that size each shape (a heightfield also takes one of ``image`` and ``seed``).
SIZE_KEYS: dict[str, tuple[str, ...]] = {name: s.size_keys for name, s in SHAPES.items()}
#: Every key that sizes some shape.
SHAPE_KEYS: tuple[str, ...] = tuple(dict.fromkeys(k for s in SHAPES.values() for k in s.keys))
#: The shapes the viewer adds (each has :meth:`Shape.upright` sizes), in its menus' order.
PRIMITIVES: tuple[str, ...] = tuple(name for name, s in SHAPES.items() if s.upright(1.0) is not None)


def shape_of(o: Any) -> Shape:
    """The :class:`Shape` of a valid object."""
    return SHAPES[o.shape]
