"""The canvas every picture of the flock is drawn on: the window's, the notebook's, the renderer's.

A vispy ``SceneCanvas`` with two changes:

- **Anti-aliasing by FXAA** (after Lottes 2009, "Fast approximate anti-aliasing"), where the
  window gets no multisampling (software OpenGL, whose rasteriser would draw every sample on
  the CPU): the scene is drawn into a texture, then one full-screen pass blends each pixel on
  an edge with its neighbours along the edge. Pixels whose neighbourhood has no contrast
  (most of the sky) keep their colour. ``fxaa`` turns it on; :meth:`Canvas.render` applies it too,
  so a screenshot shows what the window shows.
- **24-bit depth** for offscreen pictures: vispy's ``render`` draws into a framebuffer with a
  16-bit depth buffer, too coarse for the world's objects at the cameras' near planes (the
  back of a torus showed through its front).
"""

from __future__ import annotations

import numpy as np
from vispy import gloo, scene

__all__ = ["Canvas", "FXAA_THRESHOLD"]

GL_DEPTH_COMPONENT24 = 0x81A6
FXAA_THRESHOLD = 0.06
"""Neighbourhoods with less contrast of luma than this (0 to 1) are left as they are."""

_FXAA_VERT = """
attribute vec2 a_position;
varying vec2 v_uv;
void main() {
    v_uv = 0.5 * a_position + 0.5;
    gl_Position = vec4(a_position, 0.0, 1.0);
}
"""

# FXAA's console variant (Lottes, FXAA 3.11, "FXAA_PC_CONSOLE") with its two taps and no
# branches: software OpenGL runs the texture reads of both sides of a branch, and the reads are
# most of a pixel's cost. The four reads half a pixel off diagonally each average a 2 x 2 block
# (bilinear filtering), so together they see every neighbour; their luma gives the edge's
# direction. Two reads half a pixel along the edge on either side, averaged, are the pixel on
# an edge; where the contrast is low (flat areas, the ground's own anti-aliased grid) the pixel
# keeps its colour.
_FXAA_FRAG = """
uniform sampler2D u_scene;
uniform vec2 u_texel;       // one pixel of the texture, in texture coordinates
uniform float u_threshold;
varying vec2 v_uv;

const vec3 LUMA = vec3(0.299, 0.587, 0.114);

void main() {
    vec2 h = 0.5 * u_texel;
    vec3 m = texture2D(u_scene, v_uv).rgb;
    float nw = dot(texture2D(u_scene, v_uv + vec2(-h.x, h.y)).rgb, LUMA);
    float ne = dot(texture2D(u_scene, v_uv + h).rgb, LUMA);
    float sw = dot(texture2D(u_scene, v_uv - h).rgb, LUMA);
    float se = dot(texture2D(u_scene, v_uv + vec2(h.x, -h.y)).rgb, LUMA);
    float lm = dot(m, LUMA);
    float high = max(max(max(nw, ne), max(sw, se)), lm);
    float low = min(min(min(nw, ne), min(sw, se)), lm);
    vec2 along = vec2((sw + se) - (nw + ne), (nw + sw) - (ne + se));  // across the luma gradient
    along = along / max(length(along), 1e-6) * h;
    vec3 blended = 0.5 * (texture2D(u_scene, v_uv - along).rgb + texture2D(u_scene, v_uv + along).rgb);
    float edge = smoothstep(u_threshold, 2.0 * u_threshold, high - low);
    gl_FragColor = vec4(mix(m, blended, edge), 1.0);
}
"""


class Canvas(scene.SceneCanvas):
    """A ``SceneCanvas`` with FXAA (when ``fxaa``) and 24-bit depth offscreen; see the module
    docstring. Takes ``SceneCanvas``'s arguments and ``fxaa`` (default off)."""

    def __init__(self, *args, fxaa: bool = False, **kwargs) -> None:
        self.fxaa = fxaa
        self._target: gloo.FrameBuffer | None = None
        self._post: gloo.Program | None = None
        super().__init__(*args, **kwargs)

    def render(self, region=None, size=None, bgcolor=None, crop=None, alpha=True) -> np.ndarray:
        """The picture as an (H, W, 4) uint8 array (RGB with ``alpha=False``), as
        ``SceneCanvas.render`` draws it but with 24-bit depth (and FXAA when on)."""
        self.set_current()
        offset = (0, 0) if region is None else region[:2]
        csize = self.size if region is None else region[2:]
        s = self.pixel_scale
        size = tuple(int(x * s) for x in csize) if size is None else size
        fbo = gloo.FrameBuffer(
            color=gloo.RenderBuffer(size[::-1]),
            depth=gloo.RenderBuffer(size[::-1], format=GL_DEPTH_COMPONENT24),
        )
        self.push_fbo(fbo, offset, csize)
        try:
            self._draw_scene(bgcolor=bgcolor)
            result = fbo.read(crop=crop)
        finally:
            self.pop_fbo()
        return result if alpha else result[..., :3]

    def _draw_scene(self, bgcolor=None) -> None:
        # The depth buffer is cleared only where writing to it is on: a visual may have left it off.
        self.context.set_depth_mask(True)
        if not self.fxaa or self.scene.picking:  # picking reads ids of visuals: none may blend
            super()._draw_scene(bgcolor)
            return
        fbo, _, csize = self._current_framebuffer()
        shape = fbo.color_buffer.shape[:2] if fbo is not None else self.physical_size[::-1]
        target = self._scene_target(tuple(shape))
        self.push_fbo(target, (0, 0), csize)
        try:
            super()._draw_scene(bgcolor)
        finally:
            self.pop_fbo()
        self.context.set_state(depth_test=False, blend=False, cull_face=False)
        self._post["u_texel"] = (1.0 / shape[1], 1.0 / shape[0])
        self._post.draw("triangle_strip")

    def _scene_target(self, shape: tuple[int, int]) -> gloo.FrameBuffer:
        """The framebuffer the scene is drawn into before FXAA: (height, width), kept while the
        size holds."""
        if self._target is None or self._target.color_buffer.shape[:2] != shape:
            texture = gloo.Texture2D(shape=(*shape, 4), interpolation="linear", wrapping="clamp_to_edge")
            self._target = gloo.FrameBuffer(
                color=texture, depth=gloo.RenderBuffer(shape, format=GL_DEPTH_COMPONENT24)
            )
            if self._post is None:
                self._post = gloo.Program(_FXAA_VERT, _FXAA_FRAG)
                self._post["a_position"] = np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], np.float32)
                self._post["u_threshold"] = FXAA_THRESHOLD
            self._post["u_scene"] = texture
        return self._target
