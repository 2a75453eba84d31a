"""The flock's bodies on the GPU: the boids as instanced meshes (one per shape when species have
meshes of their own), far boids as specks, the predators and the halos around them.

Per boid its position and orientation go to the GPU as the state holds them, with its bank angle
and, in the colour modes the CPU computes, its colour: one set of buffers that every visual of the
flock draws from (:mod:`flock3d.viewer.boids_visual`). The shader builds each boid's rotation and
heading colour, beats its wings, keeps it a few pixels long on screen, and draws it in the visual of
its mesh and size on screen; far boids fade towards the sky (the depth cue).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from vispy import scene

from flock3d.core.params import Params
from flock3d.core.state import FlockState
from flock3d.look.boids import PREDATOR_SCALE, mesh, speck, wing_beat
from flock3d.look.colors import PREDATOR_COLOR
from flock3d.look.motion import BoidMotion, beat, flap
from flock3d.look.outlines import ring
from flock3d.viewer.boids_visual import Boids, Instances
from flock3d.viewer.cameras import CameraFrame
from flock3d.viewer.guides import segments

__all__ = ["Bodies", "MeshGroup", "FOG_MAX"]

FOG_MAX = 0.4
"""The farthest boids take this much of the sky's colour (the depth cue)."""


class MeshGroup(NamedTuple):
    """The boids drawn with one mesh when species have meshes of their own."""

    name: str
    visual: Boids
    boids: np.ndarray
    """(N,) bool: the boids of the species drawn with this mesh."""


class Bodies:
    """The visuals of the boids and predators of a :class:`~flock3d.viewer.renderer.FlockVisuals`.

    Args:
        view: the ViewBox to draw in.
        mesh_name: the shape of every boid whose species has no mesh of its own.
        pixel_scale: canvas pixels per pixel of the final picture (the halos' width scales with it).

    Attributes:
        instances: the flock's per-boid buffers, which every visual of its boids draws from.
        boids: the boids of :attr:`mesh_name` drawn with their shape.
        species_boids: a visual for each mesh of a species' own other than :attr:`mesh_name`,
            made when first needed.
        specks: the boids too small on screen for their shape: two triangles each.
        predators, halos: the predators and a ring around each.
    """

    def __init__(self, view: scene.ViewBox, mesh_name: str, pixel_scale: float) -> None:
        self.view = view
        self.mesh_name = mesh_name
        self.instances = Instances()
        self.boids = Boids(*mesh(mesh_name), wing_beat(mesh_name), self.instances, parent=view.scene)
        self.species_boids: dict[str, Boids] = {}
        self._groups: list[MeshGroup] | None = None
        self._grouped_for: tuple | None = None
        self._fixed_for: tuple | None = None  # what the buffers' fixed rows were written for
        self.specks = Boids(*speck(), wing_beat("speck"), self.instances, parent=view.scene)
        self.predators = Boids(*mesh("cone"), parent=view.scene)
        self.halos = segments(view, 1.5 * pixel_scale)
        self.motion = BoidMotion()

    def set_mesh(self, name: str) -> None:
        """The shape of every boid whose species has no mesh of its own."""
        vertices, faces = mesh(name)
        self.mesh_name = name
        self.boids.set_mesh(vertices, faces, wing_beat(name))

    def group(self, species_meshes: tuple, params: Params, n: int) -> list[MeshGroup] | None:
        """The boids of each mesh when species have meshes of their own (``species_meshes``: each
        species' mesh name or None; species sharing a mesh share its visual), or None when all
        ``n`` boids take :attr:`mesh_name`. Call before :meth:`aim`: a new visual takes the uniforms."""
        meshes = tuple(name or self.mesh_name for name in species_meshes)
        key = (self.mesh_name, meshes, tuple(s.count for s in params.species), n)
        if key != self._grouped_for:
            self._grouped_for, self._groups = key, None
            for visual in self.species_boids.values():
                visual.visible = False  # until a group draws with it again
            kinds = params.species_of_boids
            # A flock of another size than its species hold (being changed): one mesh for all.
            if set(meshes) - {self.mesh_name} and len(kinds) == n:
                self._groups = []
                for name in dict.fromkeys((self.mesh_name, *meshes)):
                    species = [k for k, m in enumerate(meshes) if m == name]
                    self._groups.append(MeshGroup(name, self._visual_of(name), np.isin(kinds, species)))
        return self._groups

    def _visual_of(self, name: str) -> Boids:
        """The instanced visual drawing mesh ``name``."""
        if name == self.mesh_name:
            return self.boids
        if name not in self.species_boids:
            shape = (*mesh(name), wing_beat(name), self.instances)
            self.species_boids[name] = Boids(*shape, parent=self.view.scene)
        return self.species_boids[name]

    def aim(self, frame: CameraFrame, world_up, light, look, fog: tuple[float, float] | None,
            boid_size: float, min_pixels: float) -> None:  # fmt: skip
        """Per frame, the uniforms of every body: the camera's ``frame``, the world's up and the
        direction ``light`` towards the sun, the sky's ``look`` (its colours tint and fog the
        boids), ``fog`` (clip w where it starts and where it is fullest; None: no fog), the boids'
        length ``boid_size`` [world units] and their least length on screen ``min_pixels``."""
        w, h = self.view.canvas.size
        bodies = (self.boids, *self.species_boids.values(), self.specks)
        sizes = [(body, boid_size) for body in bodies]
        sizes.append((self.predators, boid_size * PREDATOR_SCALE))
        for visual, size in sizes:
            u = visual.uniforms
            u["u_up"] = tuple(float(x) for x in world_up)
            u["u_size"] = float(size)
            u["u_min_px"] = min_pixels
            u["u_half_viewport"] = (w / 2.0, h / 2.0)
            u["u_camera_right"] = tuple(float(x) for x in frame.right)
            u["u_light"] = tuple(float(x) for x in light)
            u["u_fog_color"] = tuple(0.5 * (np.asarray(look.top) + np.asarray(look.bottom)))
            u["u_tint"] = look.boid_tint
            if fog is not None:
                u["u_fog"] = fog
                u["u_fog_max"] = FOG_MAX
            else:
                u["u_fog_max"] = 0.0
        self.boids.uniforms["u_flap"] = flap(self.mesh_name)
        for name, visual in self.species_boids.items():
            visual.uniforms["u_flap"] = flap(name)
        drawn = [self.mesh_name] if self._groups is None else [group.name for group in self._groups]
        self.specks.uniforms["u_flap"] = max(flap(name) for name in drawn)

    def update(self, state: FlockState, colors: np.ndarray | None, params: Params,
               acceleration: np.ndarray | None, frame: CameraFrame | None, boid_size: float,
               speck_pixels: float) -> None:  # fmt: skip
        """Push the boids and predators of ``state`` in: ``colors`` (N, 4), or None to colour each
        boid by its heading on the GPU; the last steps' ``acceleration`` (N, 3) [units/s^2] for
        banking (None: none); boids shorter on screen than ``speck_pixels`` canvas pixels are drawn
        as specks."""
        n = len(state)
        banks = self.motion.banks(params, state.orientations, acceleration, state.time)
        self.instances.write(position=state.positions, orientation=state.orientations, bank=banks)
        if colors is not None:
            self.instances.write(color=colors)
        self._write_fixed(n)
        phase = beat(state.time)
        for body in (self.boids, *self.species_boids.values(), self.specks):
            body.uniforms["u_heading"] = float(colors is None)
            body.uniforms["u_beat"] = phase
            body.uniforms["u_speck_px"] = float(speck_pixels)
        small = self._specks(state.positions, frame, boid_size, speck_pixels)
        specks = int(np.count_nonzero(small))
        # Each visual draws every boid and the shader drops those another draws; a visual with
        # nothing to drop is told so (side "all"), so that no boid is ever drawn twice or not at all.
        split = 0 < specks < n
        self.specks.show(specks, side="specks" if split else "all")
        if self._groups is not None:
            for group, (_, visual, mine) in enumerate(self._groups):
                visual.show(int(np.count_nonzero(mine & ~small)), group, "bodies" if split else "all")
        else:
            self.boids.show(n - specks, side="bodies" if split else "all")
        m = state.n_predators
        predators = self.predators.instances
        predators.write(position=state.predator_positions, orientation=state.predator_orientations)
        predators.fill(color=PREDATOR_COLOR, bank=0.0, fixed=(0.0, 0.0, 0.0))
        self.predators.show(m)
        self._update_halos(state, frame, boid_size)

    def _write_fixed(self, n: int) -> None:
        """The rows the buffers keep while the flock keeps its size and meshes: each boid's wing
        phase, mesh group and whether it beats its wings (the boids of a mesh without wings keep
        still as specks too)."""
        key = (n, self._grouped_for)  # the groups follow from what they were made for
        if key == self._fixed_for or n == 0:
            return
        self._fixed_for = key
        fixed = np.zeros((n, 3))
        fixed[:, 0] = self.motion.phases(n)
        fixed[:, 2] = 1.0
        for group, (name, _, mine) in enumerate(self._groups or ()):
            fixed[mine, 1] = group
            fixed[mine, 2] = 1.0 if flap(name) else 0.0
        self.instances.write(fixed=fixed)

    def _specks(self, positions: np.ndarray, frame: CameraFrame | None, boid_size: float,
                speck_pixels: float) -> np.ndarray:  # fmt: skip
        """(N,) bool: the boids shorter on screen than ``speck_pixels``, those behind the camera too
        (as the shader tests them: ``u_px_per_unit * u_size / w < u_speck_px``, or w <= 1e-9)."""
        if len(positions) == 0 or frame is None or speck_pixels <= 0:
            return np.zeros(len(positions), bool)
        mvp = self.boids.clip_matrix()
        # Shorter than speck_pixels is farther than this clip w (a depth, for a perspective
        # camera): one product and two comparisons a boid, not a division.
        far = self.boids.pixels_per_unit(mvp) * boid_size / speck_pixels
        w = positions @ mvp[:3, 3]
        w += mvp[3, 3]
        small = w > far
        small |= w <= 1e-9
        return small

    def _update_halos(self, state: FlockState, frame: CameraFrame | None, boid_size: float) -> None:
        if state.n_predators == 0 or frame is None:
            self.halos.visible = False
            return
        radius = 1.1 * boid_size * PREDATOR_SCALE
        rings = [ring(p, frame.right, frame.up, radius, 24) for p in state.predator_positions]
        self.halos.set_segments(np.vstack(rings), PREDATOR_COLOR[:3] + (0.85,))
