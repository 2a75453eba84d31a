"""The objects' shadows on the ground: their faces turned to the sun, carried onto the ground
along its rays (:func:`~flock3d.look.world.cast_shadow`), drawn as dark translucent triangles.

Drawn as the flock's shadows are (:class:`~flock3d.viewer.visuals.ShadowsVisual`): tested against
the depth buffer but not written to it, lifted off the ground by a share of their distance from
the camera, and faded with the fog. The still objects' shadows are worked out when the objects
or the sun change; a moving object's every frame.
"""

from __future__ import annotations

import numpy as np
from vispy import gloo
from vispy.scene.visuals import create_visual_node

from flock3d.viewer.visuals import GroundShade

__all__ = ["CastShadows", "CAST_SHADOW_DARKNESS"]

CAST_SHADOW_DARKNESS = 0.5
"""How dark an object's shadow is (its opacity): the sky still lights the ground in it."""

_VERT = """
attribute vec3 a_position;  // on the ground, world units
attribute vec3 a_normal;    // the ground's unit normal there
uniform mat4 u_mvp;
varying float v_depth;

void main() {
    // Lifted off the ground by a share of its distance from the camera (as the flock's shadows).
    float w = (u_mvp * vec4(a_position, 1.0)).w;
    gl_Position = u_mvp * vec4(a_position + a_normal * (0.002 * w), 1.0);
    v_depth = gl_Position.w;
}
"""

_FRAG = """
uniform vec2 u_fog;
uniform float u_dark;
varying float v_depth;

void main() {
    gl_FragColor = vec4(0.0, 0.01, 0.03, u_dark * (1.0 - smoothstep(u_fog.x, u_fog.y, v_depth)));
}
"""


class CastShadowsVisual(GroundShade):
    """Triangles of shadow lying on the ground (every three vertices one)."""

    def __init__(self) -> None:
        super().__init__(_VERT, _FRAG, dict(u_fog=(1e30, 2e30), u_dark=CAST_SHADOW_DARKNESS))
        self._buffers = {
            name: gloo.VertexBuffer(np.zeros((3, 3), np.float32)) for name in ("a_position", "a_normal")
        }
        for name, vbo in self._buffers.items():
            self.shared_program[name] = vbo

    def set_triangles(self, points: np.ndarray, normals: np.ndarray) -> None:
        """(3S, 3) the triangles' corners on the ground and the ground's unit normals there."""
        n = len(points)
        self.count = n
        self.visible = n > 0
        if n == 0:
            return
        for name, values in (("a_position", points), ("a_normal", normals)):
            values = np.ascontiguousarray(values, np.float32).reshape(n, 3)
            if self._buffers[name].size == n:
                self._buffers[name].set_subdata(values)
            else:
                self._buffers[name].set_data(values)
        self.update()


CastShadows = create_visual_node(CastShadowsVisual)
