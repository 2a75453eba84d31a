"""The sun's disc in the sky, drawn where the sky's light comes from (:mod:`flock3d.look.sky`)."""

from __future__ import annotations

import numpy as np
from vispy.scene.visuals import create_visual_node

from flock3d.look.sky import SUN_DISC_DEGREES
from flock3d.viewer.visuals import MatrixVisual

__all__ = ["Sun"]

_SUN_VERT = """
attribute vec2 a_corner;   // the quad's corner, in [-1, 1]^2
uniform mat4 u_mvp;        // world -> clip coordinates
uniform vec3 u_light;      // towards the sun, unit vector in the world
uniform vec2 u_aspect;     // (width / height, 1): a round disc on a wide picture
uniform float u_radius;    // the glow's half size across the picture's height, clip units
varying vec2 v_corner;

void main() {
    // The sun is a direction, a point at infinity: w = 0 maps it to where its parallel rays meet.
    vec4 clip = u_mvp * vec4(u_light, 0.0);
    v_corner = a_corner;
    if (clip.w <= 0.0) {  // behind the camera: nothing drawn
        gl_Position = vec4(2.0, 2.0, 2.0, 1.0);
        return;
    }
    vec2 centre = clip.xy / clip.w;
    gl_Position = vec4(centre + u_radius * a_corner / u_aspect, 0.99999, 1.0);  // behind all but the sky
}
"""

_SUN_FRAG = """
uniform vec3 u_disc;
varying vec2 v_corner;

void main() {
    float r = 4.0 * length(v_corner);   // 1 at the disc's edge
    if (r > 4.0) discard;
    float disc = 1.0 - smoothstep(0.85, 1.0, r);
    float glow = 0.35 * pow(1.0 - r / 4.0, 3.0);
    gl_FragColor = vec4(u_disc, clamp(disc + glow, 0.0, 1.0));
}
"""


class SunVisual(MatrixVisual):
    """The sun's disc and glow, drawn where its light comes from (behind everything but the sky)."""

    def __init__(self) -> None:
        super().__init__(_SUN_VERT, _SUN_FRAG, dict(u_light=(0.0, 1.0, 0.0), u_disc=(1.0, 1.0, 1.0)))
        from vispy import gloo

        self.shared_program["a_corner"] = gloo.VertexBuffer(
            np.array([[-1, -1], [1, -1], [1, 1], [-1, -1], [1, 1], [-1, 1]], np.float32)
        )
        self._draw_mode = "triangles"
        self.set_gl_state("translucent", depth_test=True)
        self.count = 6
        self.fov = 45.0
        """The camera's vertical field of view, degrees (the disc's size on the picture)."""

    def _prepare_draw(self, view) -> bool:
        if not super()._prepare_draw(view):
            return False
        corners = view.get_transform("render", "framebuffer").map(np.array([[-1.0, 1.0], [1.0, -1.0]]))
        (x0, y0), (x1, y1) = corners[:, :2] / corners[:, 3:4]
        aspect = abs(x1 - x0) / max(abs(y1 - y0), 1.0)
        self.shared_program["u_aspect"] = (float(aspect), 1.0)
        glow = 4.0 * SUN_DISC_DEGREES
        self.shared_program["u_radius"] = float(np.tan(np.radians(glow)) / np.tan(np.radians(self.fov / 2.0)))
        return True


Sun = create_visual_node(SunVisual)
