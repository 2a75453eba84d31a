"""The GPU visuals the renderer is built from: the sky, trails, line segments, the world's objects
and the flock's shadows on the ground (the boids: :mod:`flock3d.viewer.boids_visual`).

Each is a vispy ``Visual`` with its own small shader program and persistent GPU
buffers: a frame rewrites the buffers in place (``set_subdata``) and allocates
only when their number of rows changes. Work is done per vertex and the fragment shaders are
small: in software OpenGL (llvmpipe) fragment work and blending cost most.

Objects are lit per vertex too, by the sun and an ambient light from the sky, on the side
the camera sees; the fragment shader adds only the fog and, on the ground, a grid.
"""

from __future__ import annotations

import numpy as np
from vispy import gloo
from vispy.gloo import gl
from vispy.scene.visuals import create_visual_node
from vispy.visuals import Visual

__all__ = ["MatrixVisual", "GroundShade", "write_rows", "Sky", "Trails", "Segments", "Objects", "Shadows"]


class MatrixVisual(Visual):
    """A visual drawn with the view's whole transform as one matrix (``u_mvp``, world -> clip)
    and the uniforms in :attr:`uniforms`, which the renderer sets once a frame (but those in
    ``_CPU_ONLY``, which it reads itself); nothing is drawn while :attr:`count` is 0."""

    _CPU_ONLY: tuple[str, ...] = ()

    def __init__(self, vcode: str, fcode: str, uniforms: dict) -> None:
        super().__init__(vcode=vcode, fcode=fcode)
        self.uniforms = uniforms
        self.count = 0
        self._mvp = np.eye(4)

    def _prepare_transforms(self, view) -> None:
        pass  # the transform is read as one matrix when drawing

    def _prepare_draw(self, view) -> bool:
        if self.count == 0:
            return False
        self._mvp = np.asarray(view.transforms.get_transform().map(np.eye(4)), np.float64)
        self.shared_program["u_mvp"] = self._mvp.astype(np.float32)
        for name, value in self.uniforms.items():
            if name not in self._CPU_ONLY:
                self.shared_program[name] = value
        return True

    def _compute_bounds(self, axis, view):
        return None


class GroundShade(MatrixVisual):
    """A :class:`MatrixVisual` darkening what lies under it (shadows on the ground): blended,
    tested against the depth buffer but not written to it, so that overlapping shades darken each
    other. Writing is turned back on after drawing, since vispy leaves the mask as a visual sets it."""

    def __init__(self, vcode: str, fcode: str, uniforms: dict) -> None:
        super().__init__(vcode, fcode, uniforms)
        self._draw_mode = "triangles"
        self.set_gl_state("translucent", depth_test=True, depth_mask=False)

    def draw(self) -> None:
        super().draw()
        gloo.get_current_canvas().context.set_depth_mask(True)


def write_rows(vbo: gloo.VertexBuffer, values, n: int) -> None:
    """Rows ``values`` (n, k) into ``vbo``: in place when it holds n rows, else a new buffer."""
    values = np.ascontiguousarray(values, np.float32).reshape(n, -1)
    if vbo.size == n:
        vbo.set_subdata(values)
    else:
        vbo.set_data(values)


_SEGMENTS_VERT = """
attribute vec3 a_position;
attribute vec4 a_color;
varying vec4 v_color;
void main() {
    v_color = a_color;
    gl_Position = $transform(vec4(a_position, 1.0));
}
"""

_SEGMENTS_FRAG = """
varying vec4 v_color;
void main() {
    gl_FragColor = v_color;
}
"""


class SkyVisual(Visual):
    """A vertical gradient filling the picture behind everything (drawn first, no depth).

    Drawn as horizontal bands, each a scissored clear of the colour buffer rather than
    a full-screen shader: a clear is the cheapest way to fill pixels in software OpenGL
    (llvmpipe), where fragment work is most of a frame (benchmarks/NOTES.md). With
    :data:`SKY_BANDS` bands the steps are about as fine as 8-bit colour's own.
    """

    def __init__(self, top, bottom) -> None:
        super().__init__(vcode=_SEGMENTS_VERT, fcode=_SEGMENTS_FRAG)  # never used to draw
        self.top, self.bottom = np.asarray(top, np.float64), np.asarray(bottom, np.float64)

    def draw(self) -> None:
        if not self.visible:
            return
        # The picture's corners in framebuffer pixels (y down), from clip coordinates.
        corners = self.get_transform("render", "framebuffer").map(np.array([[-1.0, 1.0], [1.0, -1.0]]))
        (x0, y0), (x1, y1) = corners[:, :2] / corners[:, 3:4]
        width, height = round(abs(x1 - x0)), round(abs(y1 - y0))
        left, top = round(min(x0, x1)), round(min(y0, y1))
        # Straight to OpenGL, after what vispy has queued: each of vispy's queued commands
        # costs tens of microseconds, a plain call a few.
        gloo.get_current_canvas().context.flush_commands()
        gl.glEnable(gl.GL_SCISSOR_TEST)
        try:
            for k, color in enumerate(sky_bands(self.top, self.bottom)):
                band_top, band_bottom = band_rows(k, height)
                # glScissor counts rows from the bottom of the framebuffer.
                gl.glScissor(left, height - band_bottom + top, width, band_bottom - band_top)
                gl.glClearColor(float(color[0]), float(color[1]), float(color[2]), 1.0)
                gl.glClear(gl.GL_COLOR_BUFFER_BIT)
        finally:
            gl.glDisable(gl.GL_SCISSOR_TEST)

    def _prepare_transforms(self, view) -> None:
        pass

    def _compute_bounds(self, axis, view):
        return None


SKY_BANDS = 32
"""Bands of the sky's gradient."""


def sky_bands(top, bottom) -> np.ndarray:
    """(SKY_BANDS, 3) colours of the bands, top to bottom: the gradient at each band's middle."""
    t = (np.arange(SKY_BANDS) + 0.5) / SKY_BANDS
    return np.asarray(top) + t[:, None] * (np.asarray(bottom) - np.asarray(top))


def band_rows(k: int, height: int) -> tuple[int, int]:
    """First row and the row after the last (counted from the top) of band ``k`` in ``height`` rows."""
    return round(k * height / SKY_BANDS), round((k + 1) * height / SKY_BANDS)


class SegmentsVisual(Visual):
    """Line segments with a colour per vertex, in persistent buffers (2K vertices)."""

    def __init__(self, width: float = 1.0) -> None:
        super().__init__(vcode=_SEGMENTS_VERT, fcode=_SEGMENTS_FRAG)
        self._pos = gloo.VertexBuffer(np.zeros((2, 3), np.float32))
        self._color = gloo.VertexBuffer(np.zeros((2, 4), np.float32))
        self.shared_program["a_position"] = self._pos
        self.shared_program["a_color"] = self._color
        self._n = 0
        self._draw_mode = "lines"
        self.set_gl_state("translucent", depth_test=True, line_width=width)

    def set_segments(self, points: np.ndarray, colors) -> None:
        """``points`` (2K, 3): each pair a segment; ``colors`` (2K, 4) or one RGBA."""
        points = np.ascontiguousarray(points, np.float32).reshape(-1, 3)
        n = len(points)
        self.visible = n > 0
        if n == 0:
            return
        colors = np.asarray(colors, np.float32)
        if colors.ndim == 1:
            colors = np.broadcast_to(colors, (n, 4))
        colors = np.ascontiguousarray(colors)
        if n == self._n:
            self._pos.set_subdata(points)
            self._color.set_subdata(colors)
        else:
            self._n = n
            self._pos.set_data(points)
            self._color.set_data(colors)
        self.update()

    def _prepare_transforms(self, view) -> None:
        view.view_program.vert["transform"] = view.get_transform()

    def _prepare_draw(self, view) -> bool:
        return self._n > 0

    def _compute_bounds(self, axis, view):
        return None


_TRAILS_VERT = """
attribute vec3 a_position;
attribute float a_slot;    // 2 * ring slot + 1 for a segment's older end; -2 / -1: the live slot
uniform float u_head;      // ring slot of the newest sample
uniform float u_slots;     // ring length K
uniform float u_frac;      // fraction of a sample interval since the newest sample
varying float v_age;
void main() {
    // Age in sample intervals: the live segment runs from 0 (the boid now) to u_frac
    // (the newest sample); slot k's runs one interval further back per slot behind the head.
    float age;
    if (a_slot < 0.0) {
        age = a_slot > -1.5 ? u_frac : 0.0;
    } else {
        float slot = floor(a_slot * 0.5);
        age = mod(u_head - slot + u_slots, u_slots) + (a_slot - 2.0 * slot) + u_frac;
    }
    v_age = age / (u_slots + 1.0);
    gl_Position = $transform(vec4(a_position, 1.0));
}
"""

_TRAILS_FRAG = """
uniform vec4 u_color;
varying float v_age;
void main() {
    float fade = clamp(1.0 - v_age, 0.0, 1.0);
    gl_FragColor = vec4(u_color.rgb, u_color.a * fade * fade);
}
"""


class TrailsVisual(Visual):
    """Fading trails: the last ``K`` samples of each boid's path as line segments.

    The samples live in a ring on the GPU: slot ``k`` holds all N boids' segments
    from sample k - 1 to sample k, so adding a sample rewrites one slot (2N
    vertices) and nothing else. A last, live slot joins the newest sample to
    where each boid is now, rewritten every frame. Each vertex knows its slot;
    its age, hence its fade, follows from the ring's head, a uniform.
    """

    def __init__(self, slots: int, color, width: float = 1.0) -> None:
        super().__init__(vcode=_TRAILS_VERT, fcode=_TRAILS_FRAG)
        self.slots = slots
        self._pos = gloo.VertexBuffer(np.zeros((2, 3), np.float32))
        self._slot = gloo.VertexBuffer(np.zeros(2, np.float32))
        self.shared_program["a_position"] = self._pos
        self.shared_program["a_slot"] = self._slot
        self.shared_program["u_color"] = tuple(color)
        self._draw_mode = "lines"
        # Not depth_mask=False: vispy leaves the mask as the last visual set it, and a mask left
        # off stops the next frame from clearing the depth buffer.
        self.set_gl_state("translucent", depth_test=True, line_width=width)
        self.n = 0
        self.head = 0
        self.frac = 0.0

    def reset(self, positions: np.ndarray, slots: int | None = None) -> None:
        """Start every trail afresh at ``positions`` (N, 3): all slots hold zero-length segments.
        ``slots``: a new ring length (default: as it was)."""
        self.slots = slots or self.slots
        n = len(positions)
        self.n = n
        self.head = 0
        self.frac = 0.0
        self.visible = n > 0
        if n == 0:
            return
        p = np.asarray(positions, np.float32)
        ring = np.broadcast_to(np.repeat(p, 2, axis=0), (self.slots + 1, 2 * n, 3))
        self._pos.set_data(np.ascontiguousarray(ring).reshape(-1, 3))
        # Each vertex's code: 2 * slot + 1 for a segment's start (its older end), 2 * slot
        # for its end; the live slot's start is -1, its end -2.
        older = np.tile(np.array([1.0, 0.0], np.float32), n)
        codes = (2.0 * np.arange(self.slots + 1, dtype=np.float32)[:, None] + older).ravel()
        codes[self.slots * 2 * n :] = np.tile(np.array([-1.0, -2.0], np.float32), n)
        self._slot.set_data(codes)
        self.update()

    def add_sample(self, previous: np.ndarray, current: np.ndarray) -> None:
        """A new sample: segments from ``previous`` to ``current`` (N, 3) into the next slot."""
        self.head = (self.head + 1) % self.slots
        self._pos.set_subdata(_segments(previous, current), offset=self.head * 2 * self.n)
        self.update()

    def set_live(self, newest: np.ndarray, now: np.ndarray, frac: float) -> None:
        """Segments from the newest sample to where the boids are now; ``frac`` in [0, 1]."""
        self.frac = frac
        self._pos.set_subdata(_segments(newest, now), offset=self.slots * 2 * self.n)
        self.update()

    def _prepare_transforms(self, view) -> None:
        view.view_program.vert["transform"] = view.get_transform()

    def _prepare_draw(self, view) -> bool:
        if self.n == 0:
            return False
        self.shared_program["u_head"] = float(self.head)
        self.shared_program["u_slots"] = float(self.slots)
        self.shared_program["u_frac"] = float(self.frac)
        return True

    def _compute_bounds(self, axis, view):
        return None


def _segments(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """(2N, 3) float32 vertices: start_0, end_0, start_1, end_1, ..."""
    out = np.empty((len(start), 2, 3), np.float32)
    out[:, 0] = start
    out[:, 1] = end
    return out.reshape(-1, 3)


_OBJECTS_VERT = """
attribute vec3 a_position;  // object coordinates (world coordinates where u_model is the identity)
attribute vec3 a_normal;    // unit, object coordinates
attribute vec3 a_color;
attribute vec2 a_grid;      // on the ground: where the vertex lies along its plane, world units
attribute float a_ground;   // 1 on the ground (a grid is drawn on it), 0 elsewhere

uniform mat4 u_mvp;         // world -> clip coordinates
uniform mat4 u_model;       // object -> world: a rotation and a translation
uniform vec3 u_light;       // towards the sun, unit vector in the world
uniform vec3 u_up;          // the world's up, where the sky's light comes from
uniform vec3 u_eye;         // the camera (far away along the view for an orthographic one)
uniform vec3 u_sunlight;    // the sun's light on a face turned to it
uniform vec3 u_skylight;    // the sky's light on a face turned up

varying vec3 v_color;
varying vec2 v_grid;
varying float v_ground;
varying float v_depth;
varying vec3 v_world;

void main() {
    vec4 world = u_model * vec4(a_position, 1.0);
    vec3 n = normalize((u_model * vec4(a_normal, 0.0)).xyz);
    if (dot(n, u_eye - world.xyz) < 0.0) n = -n;  // lit on the side seen (an arena from inside)
    float sun = max(dot(n, u_light), 0.0);
    float sky = 0.7 + 0.3 * dot(n, u_up);  // faces turned up see more of the sky
    v_color = a_color * (u_skylight * sky + u_sunlight * sun);
    v_world = world.xyz;
    v_grid = a_grid;
    v_ground = a_ground;
    gl_Position = u_mvp * world;
    v_depth = gl_Position.w;
}
"""

_OBJECTS_FRAG = """
uniform vec3 u_sky_top;     // the fog takes the sky's colour on the same row: the far ground
uniform vec3 u_sky_bottom;  // melts into the sky behind it with no seam
uniform float u_rows;       // the picture's height in framebuffer pixels
uniform vec2 u_fog;         // depth (clip w) where the fog starts, and where it hides all
uniform float u_cell;       // the ground's grid spacing, world units (every 5th line brighter)
uniform float u_grid;       // the grid's opacity
uniform vec4 u_cut;         // a cutaway: what lies where dot(u_cut.xyz, p) > u_cut.w is not drawn

varying vec3 v_color;
varying vec2 v_grid;
varying float v_ground;
varying float v_depth;
varying vec3 v_world;

// How much of a grid line covers this pixel, for grid coordinates g changing by w (fwidth) across
// it (anti-aliased; 0 where lines would crowd closer than a few pixels, which would only shimmer).
float grid_line(vec2 g, vec2 w) {
    vec2 d = abs(fract(g - 0.5) - 0.5) / max(w, vec2(1e-6));
    return (1.0 - min(min(d.x, d.y), 1.0)) * (1.0 - smoothstep(0.12, 0.35, max(w.x, w.y)));
}

void main() {
    $cut
    $grid
    vec3 c = mix(v_color, 1.7 * v_color + 0.05, line);
    vec3 sky = mix(u_sky_bottom, u_sky_top, clamp(gl_FragCoord.y / u_rows, 0.0, 1.0));
    gl_FragColor = vec4(mix(c, sky, smoothstep(u_fog.x, u_fog.y, v_depth)), 1.0);
}
"""


_CUT = "if (dot(u_cut.xyz, v_world) > u_cut.w) discard;"
_GRID = """vec2 g = v_grid / u_cell;
    vec2 w = fwidth(g);
    float line = u_grid * v_ground * max(0.45 * grid_line(g, w), grid_line(0.2 * g, 0.2 * w));"""
_NO_GRID = "float line = 0.0;"


class ObjectsVisual(MatrixVisual):
    """Objects as one mesh, lit by the sun and the sky, fogged as the boids are; the ground
    (vertices with ``a_ground`` 1) carries a grid. See the module docstring.

    Args:
        arena: the mesh is an arena seen from outside: the faces turned to the camera are
            culled, so that the far inner wall stands behind the flock.
        cut: what lies beyond the plane ``u_cut`` (its normal and offset, set by the caller)
            is not drawn: a cutaway (the discard costs software OpenGL its early depth test,
            so only the visuals that need it have it).
        grid: the mesh holds ground, which carries the grid (a visual of other objects is
            spared its cost on every pixel they cover).
        closed: the mesh's objects are closed and wound outward (``ObjectMesh.closed``), seen
            from outside: the faces turned away from the camera are culled, never drawn (in
            software OpenGL the forest's frame took 48 ms drawing them, 38 ms without).
    """

    def __init__(
        self, arena: bool = False, cut: bool = False, grid: bool = True, closed: bool = False
    ) -> None:
        fcode = _OBJECTS_FRAG.replace("$cut", _CUT if cut else "").replace(
            "$grid", _GRID if grid else _NO_GRID
        )
        super().__init__(_OBJECTS_VERT, fcode, dict(
            u_model=np.eye(4, dtype=np.float32), u_light=(0.0, 1.0, 0.0), u_up=(0.0, 1.0, 0.0),
            u_eye=(0.0, 0.0, 1e6), u_sunlight=(0.55, 0.55, 0.55), u_skylight=(0.45, 0.45, 0.45),
            u_sky_top=(0.0, 0.0, 0.0), u_sky_bottom=(0.0, 0.0, 0.0), u_fog=(1e30, 2e30), u_cell=1.0,
            u_grid=0.2, **({"u_cut": (0.0, 0.0, 0.0, 1.0)} if cut else {}),
        ))  # fmt: skip
        self._buffers = {
            name: gloo.VertexBuffer(np.zeros((3, width), np.float32))
            for name, width in (
                ("a_position", 3),
                ("a_normal", 3),
                ("a_color", 3),
                ("a_grid", 2),
                ("a_ground", 1),
            )
        }
        for name, vbo in self._buffers.items():
            self.shared_program[name] = vbo
        self._index_buffer = gloo.IndexBuffer(np.zeros((1, 3), np.uint32))
        self._draw_mode = "triangles"
        # Wound counter-clockwise seen from outside: an arena's front faces are those turned to the camera.
        cull = "front" if arena and not cut else "back" if closed and not arena else False
        self.set_gl_state("opaque", depth_test=True, cull_face=cull)

    def set_mesh(self, vertices, normals, faces, colors, grid=None, ground=None) -> None:
        """The triangles to draw: (V, 3) vertices and unit normals, (F, 3) faces, (V, 3) colours,
        (V, 2) grid coordinates and (V,) ground flags (default none)."""
        n = len(vertices)
        self.count = len(faces)
        self.visible = self.count > 0
        if self.count == 0:
            return
        data = {
            "a_position": vertices,
            "a_normal": normals,
            "a_color": colors,
            "a_grid": np.zeros((n, 2)) if grid is None else grid,
            "a_ground": np.zeros(n) if ground is None else ground,
        }
        for name, values in data.items():
            self._buffers[name].set_data(np.ascontiguousarray(values, np.float32).reshape(n, -1))
        self._index_buffer.set_data(np.ascontiguousarray(faces, np.uint32))
        self.update()

    def _prepare_draw(self, view) -> bool:
        # The picture's height in framebuffer pixels, as the sky's bands are laid out (SkyVisual).
        corners = view.get_transform("render", "framebuffer").map(np.array([[-1.0, 1.0], [1.0, -1.0]]))
        rows = abs(corners[1, 1] / corners[1, 3] - corners[0, 1] / corners[0, 3])
        self.shared_program["u_rows"] = float(max(rows, 1.0))
        return super()._prepare_draw(view)

    def set_frame(self, origin, rotation) -> None:
        """Place the mesh: ``world = origin + rotation @ local`` ((3,) and (3, 3))."""
        model = np.eye(4, dtype=np.float32)
        model[:3, :3] = np.asarray(rotation, np.float32).T  # rows: the images of the basis vectors
        model[3, :3] = origin
        self.uniforms["u_model"] = model
        self.update()


_SHADOWS_VERT = """
attribute vec2 a_corner;    // the quad's corner, in [-1, 1]^2
attribute vec3 a_center;    // per shadow: where it lies on the ground, world units
attribute vec3 a_normal;    // per shadow: the ground's unit normal there
attribute vec2 a_shape;     // per shadow: radius (world units), darkness (0 to 1)
uniform mat4 u_mvp;
varying vec2 v_corner;
varying float v_dark;
varying float v_depth;

void main() {
    vec3 n = a_normal;
    vec3 t = normalize(cross(n, abs(n.x) < 0.9 ? vec3(1.0, 0.0, 0.0) : vec3(0.0, 1.0, 0.0)));
    vec3 b = cross(n, t);
    // Lifted off the ground by a share of its distance from the camera, which keeps it in
    // front of the ground at any depth without a polygon offset left set for other visuals.
    float w = (u_mvp * vec4(a_center, 1.0)).w;
    vec3 p = a_center + a_shape.x * (a_corner.x * t + a_corner.y * b) + n * (0.002 * w);
    gl_Position = u_mvp * vec4(p, 1.0);
    v_corner = a_corner;
    v_dark = a_shape.y;
    v_depth = gl_Position.w;
}
"""

_SHADOWS_FRAG = """
uniform vec2 u_fog;
varying vec2 v_corner;
varying float v_dark;
varying float v_depth;

void main() {
    float r = length(v_corner);
    if (r > 1.0) discard;
    float fog = smoothstep(u_fog.x, u_fog.y, v_depth);
    gl_FragColor = vec4(0.0, 0.01, 0.03, v_dark * (1.0 - smoothstep(0.25, 1.0, r)) * (1.0 - fog));
}
"""


class ShadowsVisual(GroundShade):
    """Soft dark discs lying on the ground under the boids, instanced: per shadow only its
    centre, the ground's normal there, its radius and darkness go to the GPU."""

    def __init__(self) -> None:
        super().__init__(_SHADOWS_VERT, _SHADOWS_FRAG, dict(u_fog=(1e30, 2e30)))
        self.shared_program["a_corner"] = gloo.VertexBuffer(
            np.array([[-1, -1], [1, -1], [1, 1], [-1, -1], [1, 1], [-1, 1]], np.float32)
        )
        self._instances = {
            name: gloo.VertexBuffer(np.zeros((1, width), np.float32), divisor=1)
            for name, width in (("a_center", 3), ("a_normal", 3), ("a_shape", 2))
        }
        for name, vbo in self._instances.items():
            self.shared_program[name] = vbo

    def set_shadows(self, centers, normals, radii, darkness) -> None:
        """(S, 3) centres on the ground and its unit normals there, (S,) radii and darkness."""
        n = len(centers)
        self.count = n
        self.visible = n > 0
        if n == 0:
            return
        write_rows(self._instances["a_center"], centers, n)
        write_rows(self._instances["a_normal"], normals, n)
        write_rows(self._instances["a_shape"], np.c_[radii, darkness], n)
        self.update()


Sky = create_visual_node(SkyVisual)
Segments = create_visual_node(SegmentsVisual)
Trails = create_visual_node(TrailsVisual)
Objects = create_visual_node(ObjectsVisual)
Shadows = create_visual_node(ShadowsVisual)
