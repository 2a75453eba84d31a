"""The canvas every picture of the flock is drawn on: the window's, the notebook's, the renderer's.

A vispy ``SceneCanvas`` with two changes:

- **Anti-aliasing by FXAA** (after Lottes 2009, "Fast approximate anti-aliasing"), where the
  window gets no multisampling (software OpenGL, whose rasteriser would draw every sample on
  the CPU): the finished picture is copied into a texture, and one pass over it blends each
  pixel on an edge with its neighbours along the edge. The pass runs only on pixels something
  was drawn on (the depth test spares the sky's, most of most pictures), and pixels whose
  neighbourhood has no contrast keep their colour. ``fxaa`` turns it on;
  :meth:`Canvas.render` applies it too, so a screenshot shows what the window shows.
- **24-bit depth** for offscreen pictures: vispy's ``render`` draws into a framebuffer with a
  16-bit depth buffer, too coarse for the world's objects at the cameras' near planes (the
  back of a torus showed through its front).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
from vispy import gloo, scene
from vispy.gloo import gl

__all__ = ["Canvas", "FXAA_THRESHOLD"]

GL_DEPTH_COMPONENT24 = 0x81A6
FXAA_THRESHOLD = 0.06
"""Neighbourhoods with less contrast of luma than this (0 to 1) are left as they are."""

_QUAD_VERT = """
attribute vec2 a_position;
uniform float u_depth;      // NDC depth of the quad
varying vec2 v_uv;
void main() {
    v_uv = 0.5 * a_position + 0.5;
    gl_Position = vec4(a_position, u_depth, 1.0);
}
"""

#: The FXAA quad's depth (NDC): nearer than the cleared depth (the sky), farther than anything drawn.
_SKY_DEPTH = 0.9999

# FXAA's console variant (Lottes, FXAA 3.11, "FXAA_PC_CONSOLE"), without branches: software
# OpenGL runs the texture reads of both sides of a branch. The four reads half a pixel off
# diagonally each average a 2 x 2 block (bilinear filtering), so together they see every
# neighbour; their luma gives the edge's direction. Two reads half a pixel along the edge either
# side (A), and two more up to two pixels out where the edge is long and shallow (B), are
# averaged; B is kept unless it reaches outside the neighbourhood's luma range (then it crossed
# another edge). Where the contrast is low (flat areas, the ground's own anti-aliased grid) the
# pixel keeps its colour.
_FXAA_FRAG = """
uniform sampler2D u_scene;
uniform vec2 u_texel;       // one pixel of the texture, in texture coordinates
uniform float u_threshold;
varying vec2 v_uv;

const vec3 LUMA = vec3(0.299, 0.587, 0.114);
const float SHARPNESS = 8.0;

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
    along /= max(length(along), 1e-6);
    vec2 far = clamp(along / max(min(abs(along.x), abs(along.y)) * SHARPNESS, 1e-6), -2.0, 2.0);
    vec3 a = 0.5 * (texture2D(u_scene, v_uv - along * h).rgb + texture2D(u_scene, v_uv + along * h).rgb);
    vec3 b = 0.5 * a + 0.25 * (texture2D(u_scene, v_uv - far * 2.0 * u_texel).rgb
                               + texture2D(u_scene, v_uv + far * 2.0 * u_texel).rgb);
    float lb = dot(b, LUMA);
    vec3 blended = (lb < low || lb > high) ? a : b;
    float edge = smoothstep(u_threshold, 2.0 * u_threshold, high - low);
    gl_FragColor = vec4(mix(m, blended, edge), 1.0);
}
"""


class Canvas(scene.SceneCanvas):
    """A ``SceneCanvas`` with FXAA (when ``fxaa``) and 24-bit depth offscreen; see the module
    docstring. Takes ``SceneCanvas``'s arguments and ``fxaa`` (default off)."""

    _held: list[bool] | None = None  # within held(): whether a draw was asked for

    def __init__(self, *args, fxaa: bool = False, **kwargs) -> None:
        self.fxaa = fxaa
        self._copy: gloo.Texture2D | None = None
        self._fxaa: gloo.Program | None = None
        super().__init__(*args, **kwargs)

    @contextlib.contextmanager
    def held(self) -> Iterator[list[bool]]:
        """A block whose requests to draw the picture are not passed on. It yields a list that
        holds True once one was made: the caller asks for that draw in a later turn of its event
        loop. A window opening a scene sets it up in one turn and draws its first frame, the
        longest (its buffers sent, new shaders built), in the next, not both in one."""
        asked: list[bool] = []
        self._held = asked
        try:
            yield asked
        finally:
            self._held = None

    def update(self, node=None) -> None:
        if self._held is not None:
            self._held[:] = [True]
            return
        super().update(node)

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
        super()._draw_scene(bgcolor)
        if not self.fxaa or self.scene.picking:  # picking reads ids of visuals: none may blend
            return
        fbo, _, _ = self._current_framebuffer()
        shape = tuple(fbo.color_buffer.shape[:2] if fbo is not None else self.physical_size[::-1])
        texture = self._scene_copy(shape)
        # The picture as drawn, copied into a texture (by OpenGL, no shader: a copy of memory).
        self.context.flush_commands()  # everything queued is drawn first, and the texture made
        gl.glBindTexture(gl.GL_TEXTURE_2D, self.context.shared.parser.get_object(texture.id).handle)
        gl.glCopyTexSubImage2D(gl.GL_TEXTURE_2D, 0, 0, 0, 0, 0, shape[1], shape[0])
        gl.glBindTexture(gl.GL_TEXTURE_2D, 0)
        # FXAA over it where something was drawn: a quad at the sky's depth, tested against the
        # scene's, so that the sky's pixels (most of most pictures) cost nothing.
        self.context.set_state(depth_test=True, depth_func="greater", depth_mask=False, blend=False,
                               cull_face=False)  # fmt: skip
        self._fxaa["u_texel"] = (1.0 / shape[1], 1.0 / shape[0])
        self._fxaa.draw("triangle_strip")
        self.context.set_state(depth_func="less", depth_mask=True)

    def _scene_copy(self, shape: tuple[int, int]) -> gloo.Texture2D:
        """The texture the picture is copied into for FXAA, (height, width); kept while the size holds."""
        if self._copy is None or self._copy.shape[:2] != shape:
            self._copy = gloo.Texture2D(shape=(*shape, 4), interpolation="linear", wrapping="clamp_to_edge")
            self.context.glir.associate(self._copy.glir)  # made on the next flush: the copy needs it
            if self._fxaa is None:
                self._fxaa = gloo.Program(_QUAD_VERT, _FXAA_FRAG)
                self._fxaa["a_position"] = np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], np.float32)
                self._fxaa["u_depth"] = _SKY_DEPTH
                self._fxaa["u_threshold"] = FXAA_THRESHOLD
            self._fxaa["u_scene"] = self._copy
        return self._copy
