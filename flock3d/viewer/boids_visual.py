"""The boids on the GPU: one instanced mesh a visual, fed by per-boid buffers that every visual of
the flock shares (:class:`Instances`).

The buffers hold the state as the engine has it: each boid's position and orientation
(quaternion), written once a frame; its bank angle; its colour only in the colour modes the CPU
computes (the heading map is a texture the vertex shader reads); and, rewritten only when the flock
changes size or its meshes, each boid's wing phase, mesh group and whether it has wings. The
vertex shader turns the quaternion into a heading, builds the body's frame from it and the world's
up (the model's quaternions drift in twist, which a bird's drawn roll must not show), rolls it into
its bank, beats its wings, keeps it a few pixels long, lights its faces flat and fades it towards
the sky with distance. The fragment shader only writes the colour.

So a frame costs the CPU two conversions to float32 and their uploads, not a pass a quantity: at
1,000,000 boids the forward vectors, heading colours, wing beats, rolls and the speck/body split
took 210 ms a frame on one core (``benchmarks/NOTES.md``). The split is the shader's too: every
visual of the flock draws all of its boids and drops, in the vertex shader, those of another mesh
group or on the other side of the speck length (:data:`SIDES`), so no buffer is split on the CPU.
"""

from __future__ import annotations

import numpy as np
from vispy import gloo
from vispy.scene.visuals import create_visual_node

from flock3d.look.colors import heading_table
from flock3d.viewer.visuals import MatrixVisual, write_rows

__all__ = ["Boids", "BoidsVisual", "Instances", "SIDES"]

_VERT = """
attribute vec3 a_vertex;       // body coordinates: forward +z, up +y, length 1 (3 per face)
attribute vec3 a_normal;       // the face's normal, body coordinates
attribute float a_flap;        // how much of the wing beat a vertex takes (0 body, 1 wing tip)
attribute vec3 a_position;     // per boid, world units
attribute vec4 a_orientation;  // per boid: its quaternion (w, x, y, z)
attribute vec4 a_color;        // per boid, where u_heading is 0
attribute float a_bank;        // per boid: its bank angle, radians (a roll towards its right)
attribute vec3 a_fixed;        // per boid: its wing phase [rad], its mesh group, 1 if it beats its wings

uniform mat4 u_mvp;             // world -> clip coordinates (the view's whole transform)
uniform float u_px_per_unit;    // canvas pixels per world unit at clip w = 1
uniform vec3 u_up;              // the world's up for a boid that does not roll
uniform float u_size;           // body length, world units
uniform float u_min_px;         // smallest on-screen body length, canvas pixels
uniform float u_flap;           // wing-beat amplitude at the wing tip, body lengths
uniform float u_beat;           // the wing beat's phase now, radians
uniform float u_heading;        // 1: each boid's colour is the heading map's (u_headings); 0: a_color
uniform sampler2D u_headings;   // the heading map: compass columns (from +z towards +x), climb rows
uniform vec2 u_headings_size;   // its (columns, rows)
uniform float u_group;          // draw only the boids of this mesh group; -1: every group
uniform float u_side;           // 1: only boids at least u_speck_px long; -1: only shorter ones; 0: all
uniform float u_speck_px;
uniform vec2 u_fog;             // depth (clip w) where the fog starts and is full
uniform float u_fog_max;        // how much of the sky colour the farthest boid takes
uniform vec3 u_light;           // towards the light, unit vector in the world
uniform vec3 u_fog_color;
uniform float u_ambient;
uniform float u_tint;           // the sky's boid colours' scale (dark birds against a bright sky)

varying vec4 v_color;

void main() {
    vec4 centre = u_mvp * vec4(a_position, 1.0);
    // The speck test as Bodies counts it: behind the camera, or shorter on screen than u_speck_px;
    // chosen without a branch (llvmpipe runs a vertex shader's lanes together: a branch cost more).
    float speck = float(centre.w <= 1e-9 || u_px_per_unit * u_size / centre.w < u_speck_px);
    float other = max(step(0.0, u_group) * step(0.5, abs(a_fixed.y - u_group)),
                      max(step(0.5, u_side) * speck, step(0.5, -u_side) * (1.0 - speck)));
    vec4 q = a_orientation;   // (w, x, y, z): forward is (0, 0, 1) rotated by q
    vec3 f = vec3(2.0 * (q.y * q.w + q.x * q.z), 2.0 * (q.z * q.w - q.x * q.y),
                  1.0 - 2.0 * (q.y * q.y + q.z * q.z));
    float len = length(f);
    f = len > 0.0 ? f / len : vec3(0.0, 0.0, 1.0);
    vec4 color = a_color;
    if (u_heading > 0.5) {   // the map's cell as flock3d.look.colors.heading_colors rounds to it
        float column = mod(floor(atan(f.x, f.z) * (u_headings_size.x / 6.283185307179586) + 0.5),
                           u_headings_size.x);
        float row = floor((clamp(f.y, -1.0, 1.0) + 1.0) * 0.5 * (u_headings_size.y - 1.0) + 0.5);
        color = vec4(texture2DLod(u_headings, (vec2(column, row) + 0.5) / u_headings_size, 0.0).rgb, 1.0);
    }
    vec3 r = cross(u_up, f);
    if (dot(r, r) < 1e-8) r = cross(vec3(1.0, 0.0, 0.0), f);   // flying straight up or down
    if (dot(r, r) < 1e-8) r = cross(vec3(0.0, 0.0, 1.0), f);
    r = normalize(r);
    vec3 u = cross(f, r);
    float c = cos(a_bank), s = sin(a_bank);
    vec3 right = c * r - s * u;
    vec3 up = c * u + s * r;

    // One matrix product for the boid's centre and one for its shape: the transform is
    // linear in homogeneous coordinates, so M (p + d) = M p + M (d, 0).
    float px = u_px_per_unit * u_size / max(centre.w, 1e-6);   // body length on screen
    float scale = u_size * max(1.0, u_min_px / max(px, 1e-6));

    vec3 v = a_vertex;
    v.y += u_flap * a_flap * a_fixed.z * sin(u_beat + a_fixed.x);
    gl_Position = centre + u_mvp * vec4(scale * (v.x * right + v.y * up + v.z * f), 0.0);
    gl_Position = mix(gl_Position, vec4(2.0, 2.0, 2.0, 1.0), other);   // dropped: outside the clip volume

    // Flat shading, lit on both sides (thin wings are single faces); the wing beat tilts
    // the wings a little, which the face normal ignores.
    vec3 n = a_normal.x * right + a_normal.y * up + a_normal.z * f;
    float shade = u_ambient + (1.0 - u_ambient) * abs(dot(n, u_light));
    vec3 lit = min(color.rgb * u_tint * (0.25 + shade), vec3(1.0));
    float fog = u_fog_max * smoothstep(u_fog.x, u_fog.y, centre.w);
    v_color = vec4(mix(lit, u_fog_color, fog), color.a);
}
"""

_FRAG = """
varying vec4 v_color;

void main() {
    gl_FragColor = v_color;
}
"""

#: ``u_side`` of a visual drawing only bodies, only specks, or every boid it has.
SIDES = {"bodies": 1.0, "specks": -1.0, "all": 0.0}


class Instances:
    """The per-boid vertex buffers of a flock (or of its predators), which every visual drawing it
    binds: a frame writes them once, whatever the number of visuals.

    Attributes:
        n: the boids the buffers hold (0 until written).
    """

    #: Each buffer's name in the shader and its floats a boid.
    LAYOUT = (("a_position", 3), ("a_orientation", 4), ("a_color", 4), ("a_bank", 1), ("a_fixed", 3))

    def __init__(self) -> None:
        self.buffers = {name: gloo.VertexBuffer(np.zeros((1, width), np.float32), divisor=1)
                        for name, width in self.LAYOUT}  # fmt: skip
        self.n = 0
        # Each buffer's rows in float32, kept from frame to frame and written over (a new array a
        # frame is memory touched for the first time, every frame). vispy uploads them when it
        # next draws, so what a buffer shows is the last frame written before that draw.
        self._rows: dict[str, np.ndarray] = {}

    def write(self, **values) -> None:
        """Rows for the next frame, by attribute name without its ``a_`` (``position=(N, 3)``,
        ``orientation=(N, 4)`` wxyz, ``color=(N, 4)``, ``bank=(N,)`` [rad], ``fixed=(N, 3)``);
        every buffer holds as many rows as the last ``position`` written (zeros where none was)."""
        if "position" in values:
            self.n = len(values["position"])
        if self.n == 0:
            return  # vispy cannot draw zero instances: the visuals hide
        for name, rows in values.items():
            name = f"a_{name}"
            kept = self._rows.get(name)
            if kept is None or len(kept) != self.n:
                kept = self._rows[name] = np.empty((self.n, dict(self.LAYOUT)[name]), np.float32)
            np.copyto(kept, np.reshape(rows, (self.n, -1)))
            write_rows(self.buffers[name], kept, self.n)
        for name, width in self.LAYOUT:  # vispy draws only buffers of one size: zeros until written
            if self.buffers[name].size != self.n:
                write_rows(self.buffers[name], np.zeros((self.n, width), np.float32), self.n)

    def fill(self, **values) -> None:
        """Each buffer named the same row for every boid (``color=(4,)``, ``bank=0.0``, ...)."""
        self.write(**{name: np.broadcast_to(np.asarray(row, np.float32), (self.n, np.size(row)))
                      for name, row in values.items()})  # fmt: skip


class BoidsVisual(MatrixVisual):
    """Boids (or predators) as one instanced mesh; see the module docstring.

    Args:
        vertices: (V, 3) float32 body coordinates of the mesh.
        faces: (F, 3) uint32 triangles.
        flap: (V,) float32, the share of the wing beat each vertex takes.
        instances: the per-boid buffers it draws (shared with the flock's other visuals); None:
            its own (:attr:`instances`).

    Attributes:
        count: the boids it draws this frame (of :attr:`instances`, the rest dropped by ``u_group``
            and ``u_side``); nothing is drawn at 0.
    """

    def __init__(self, vertices: np.ndarray, faces: np.ndarray, flap: np.ndarray | None = None,
                 instances: Instances | None = None) -> None:  # fmt: skip
        super().__init__(_VERT, _FRAG, dict(
            u_up=(0.0, 1.0, 0.0), u_size=1.0, u_min_px=0.0, u_half_viewport=(1.0, 1.0),
            u_camera_right=(1.0, 0.0, 0.0), u_flap=0.0, u_beat=0.0, u_heading=0.0, u_group=-1.0,
            u_side=SIDES["all"], u_speck_px=0.0, u_fog=(1e30, 2e30), u_fog_max=0.0,
            u_light=(0.0, 0.0, 1.0), u_fog_color=(0.0, 0.0, 0.0), u_ambient=0.45, u_tint=1.0,
        ))  # fmt: skip
        self.instances = Instances() if instances is None else instances
        self._vertex_vbo = gloo.VertexBuffer(np.zeros((3, 3), np.float32))
        self._normal_vbo = gloo.VertexBuffer(np.zeros((3, 3), np.float32))
        self._flap_vbo = gloo.VertexBuffer(np.zeros(3, np.float32))
        self.set_mesh(vertices, faces, flap)
        self._draw_mode = "triangles"
        self.set_gl_state("opaque", depth_test=True, cull_face=False)
        for name, vbo in self.instances.buffers.items():
            self.shared_program[name] = vbo
        self.shared_program["a_vertex"] = self._vertex_vbo
        self.shared_program["a_normal"] = self._normal_vbo
        self.shared_program["a_flap"] = self._flap_vbo
        table = heading_table()  # (columns, rows, 3): a texture's rows are its second axis
        self.shared_program["u_headings"] = gloo.Texture2D(
            np.ascontiguousarray(table.transpose(1, 0, 2)), interpolation="nearest", internalformat="rgb32f"
        )
        self.shared_program["u_headings_size"] = (float(table.shape[0]), float(table.shape[1]))

    def set_mesh(self, vertices: np.ndarray, faces: np.ndarray, flap: np.ndarray | None = None) -> None:
        """The shape every boid is drawn with; each face gets its own three vertices and its
        normal, so that the vertex shader can light it (flat) and the fragment shader is trivial."""
        vertices = np.asarray(vertices, dtype=np.float64)
        faces = np.asarray(faces, dtype=np.int64)
        flap = np.zeros(len(vertices)) if flap is None else np.asarray(flap, np.float64)
        corners = vertices[faces]  # (F, 3, 3)
        normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
        self._vertex_vbo.set_data(corners.reshape(-1, 3).astype(np.float32))
        self._normal_vbo.set_data(np.repeat(normals, 3, axis=0).astype(np.float32))
        self._flap_vbo.set_data(flap[faces].reshape(-1).astype(np.float32))
        self.update()

    def show(self, count: int, group: int = -1, side: str = "all") -> None:
        """Draw ``count`` boids this frame: those of mesh ``group`` (-1: every group) on ``side`` of
        the speck length (:data:`SIDES`), which the caller counted."""
        self.count = count if self.instances.n else 0
        self.visible = self.count > 0
        self.uniforms["u_group"] = float(group)
        self.uniforms["u_side"] = SIDES[side]
        self.update()

    def clip_matrix(self) -> np.ndarray:
        """(4, 4) world -> clip coordinates as drawn now: the images of the basis vectors
        (rows, vispy's row-vector convention: clip = [x, y, z, 1] @ M)."""
        return np.asarray(self.transforms.get_transform().map(np.eye(4)), np.float64)

    def pixels_per_unit(self, mvp: np.ndarray) -> float:
        """Canvas pixels per world unit across the screen at clip w = 1 (divide by w)."""
        u = self.uniforms
        right = np.array([*u["u_camera_right"], 0.0])
        return float(np.linalg.norm((right @ mvp)[:2] * np.asarray(u["u_half_viewport"], np.float64)))

    _CPU_ONLY = ("u_camera_right", "u_half_viewport")  # for pixels_per_unit

    def _prepare_draw(self, view) -> bool:
        if not super()._prepare_draw(view):
            return False
        self.shared_program["u_px_per_unit"] = self.pixels_per_unit(self._mvp)
        return True


Boids = create_visual_node(BoidsVisual)
