"""The viewer's edit controller: what the mouse, the World tab and the keys do to the world.

It turns clicks, drags and the World tab's fields into edits of the session's world
(:class:`~flock3d.viewer.editing.WorldEditor`, which owns the world's edits and their undo
stack), runs each edit so that one the model refuses changes nothing and is said in the status
bar, and keeps the World tab and the drawing in step with the world. The window owns the
canvas, the panels and the session; this owns what an edit does with them.
"""

from __future__ import annotations

import numpy as np

from flock3d.viewer.editing import PRIMITIVES, WorldEditor, outside_arena
from flock3d.viewer.picking import Clicks, ray_through, thing_under

__all__ = ["EditController", "ADDED_SIZE"]

ADDED_SIZE = 0.2
"""A primitive added in the viewer is this many world radii across."""


class EditController:
    """Edits of a :class:`~flock3d.viewer.app.ViewerWindow`'s world by mouse, World tab and keys.

    Args:
        window: the window whose session, canvas, panels and drawing it works with.

    Attributes:
        editor: the world's edits and their undo stack.
        clicked: where the user last clicked in the world, and whether on a surface (things
            added go there), or None.
    """

    def __init__(self, window) -> None:
        self.w = window
        self.editor = WorldEditor(window.session)
        self.clicked: tuple[np.ndarray, bool] | None = None
        self._clicks = Clicks()

    def connect(self) -> None:
        """Wire the World tab and the canvas's mouse events."""
        w = self.w.world_panel
        w.position_edited.connect(self.edit_position)
        w.rotation_edited.connect(self.edit_rotation)
        w.scale_edited.connect(self.edit_scale)
        w.add_chosen.connect(lambda what: self.add(what))
        w.delete_clicked.connect(self.delete_selected)
        w.undo_clicked.connect(self.undo)
        w.entered.connect(self.w.canvas.native.setFocus)
        events = self.w.canvas.events
        events.mouse_press.connect(self.mouse_press)
        events.mouse_release.connect(self.mouse_release)
        events.mouse_move.connect(self.mouse_move)

    def forget(self) -> None:
        """A new scene: nothing selected, nothing to undo, no click remembered."""
        self.editor.selection, self.editor.undo_stack, self.clicked = None, [], None
        self.show_selected()

    def apply(self, edit) -> bool:
        """Run one edit of the world (:class:`~flock3d.viewer.editing.WorldEditor`); one the
        model refuses is said in the status bar and changes nothing."""
        try:
            edit()
        except ValueError as error:
            self.w.status.showMessage(f"not applied: {error}", 8000)
            self.world_changed()  # the panel shows the world as it still is
            return False
        self.world_changed()
        selection = self.editor.valid(self.editor.selection)
        if selection is not None and outside_arena(self.w.session.params, self.editor.position_of(selection)):
            kind, k = selection
            self.w.status.showMessage(f"{kind} {k} is outside the arena: the boids never reach it", 8000)
        return True

    def edit_selected(self, edit) -> bool:
        selection = self.editor.valid(self.editor.selection)
        return selection is not None and self.apply(lambda: edit(selection))

    def edit_position(self, axis: int, value: float) -> bool:
        """The World tab changed one coordinate of the selection's position."""

        def move(selection) -> None:
            position = np.array(self.editor.position_of(selection))
            position[axis] = value
            self.editor.move(selection, position)

        return self.edit_selected(move)

    def edit_scale(self, factor: float) -> bool:
        """The World tab changed the selected object's scale. A mesh or heightfield rescaled
        samples its grid again (0.6 s for the cave's rock): the grid is read beside the window's
        event loop first, and the edit then finds it. One wait beside the window at a time
        (:class:`~flock3d.viewer.event_loop.Beside`): a rescale asked for meanwhile is refused
        with a word (the panel shows the scale as it still is)."""
        from flock3d.core.objects import needs_field
        from flock3d.errors import Flock3dError

        editor = self.editor
        selection = editor.valid(editor.selection)
        if selection is None or selection.kind != "object":
            return False
        k = selection.index
        rescaled = editor.rescaled(k, factor)
        if needs_field(rescaled):
            if self.w.busy(3000):
                self.show_selected()
                return False
            objects = list(self.w.session.params.objects)
            objects[k] = rescaled
            what = f"reading the grid of objects[{k}] at its new scale"
            self.w.status.showMessage(f"{what}...")
            try:
                self.w.beside.run(what, lambda: self.w.session.read_fields(objects))
            except (ValueError, Flock3dError):
                pass  # the edit below says why, in the status bar
            if self.w.closed or editor.valid(editor.selection) != selection:
                return False  # the window closed, or something else was selected meanwhile
        return self.edit_selected(lambda s: editor.set_scale(s.index, factor))

    def edit_rotation(self, axis: int, degrees: float) -> bool:
        """The World tab changed one angle of the selected object's rotation."""

        def turn(selection) -> None:
            rotation = list(self.w.session.params.objects[selection.index].rotation or (0.0, 0.0, 0.0))
            rotation[axis] = degrees
            self.editor.set_rotation(selection.index, rotation)

        return self.edit_selected(turn)

    def world_changed(self) -> None:
        """Redraw the world and the panels after an edit (or a new flock)."""
        params = self.w.session.params
        self.editor.selection = self.editor.valid(self.editor.selection)
        self.w.visuals.set_params(params)
        self.w.panel.show_params(params)
        self.show_selected()
        self.w._push_state()

    def show_selected(self) -> None:
        """The World tab's fields: what is selected, where it is, its turn and size."""
        from flock3d.core.fields import is_real_number

        selection = self.editor.valid(self.editor.selection)
        if selection is None:
            self.w.world_panel.show_selection(None)
            return
        kind, k = selection
        rotation = scale = None
        if kind == "object":
            o = self.w.session.params.objects[k]
            title = f"{o.shape}: objects[{k}]" + (", moving" if o.motion else "")
            if o.motion is None or o.motion.rotations is None:
                rotation = o.rotation or (0.0, 0.0, 0.0)
            scale = o.scale if is_real_number(o.scale) else o.scale[0]
        else:
            title = f"{kind}: {'attractors' if kind == 'attractor' else 'predators'}[{k}]"
        self.w.world_panel.show_selection(title, self.editor.position_of(selection), rotation, scale)

    def add(self, what: str, point=None, resting: bool | None = None) -> bool:
        """Add ``what`` (a primitive's shape, ``attractor`` or ``predator``) at ``point`` (3,),
        by default where the user last clicked (else the middle of the view); a primitive
        added on a surface stands on it (``resting``)."""
        if point is None:
            middle = self.w.visuals.framed(self.w.snapshot.state.positions)[0]
            point, resting = self.clicked or (middle, False)
        editor = self.editor
        if what == "attractor":
            return self.apply(lambda: editor.add_attractor(point))
        if what == "predator":
            return self.apply(lambda: editor.add_predator(point))
        size = ADDED_SIZE * self.w.visuals.world_radius
        return self.apply(lambda: editor.add_object(what, point, size, resting=bool(resting)))

    def delete_selected(self) -> bool:
        """Remove the selected object, attractor or predator."""
        return self.editor.selection is not None and self.apply(self.editor.delete)

    def undo(self) -> bool:
        """Undo the last edit of the world (ending a drag first: the camera orbits again)."""
        if self.editor.dragging:
            self.end_drag()
        done = False

        def undo() -> None:
            nonlocal done
            done = self.editor.undo()

        self.apply(undo)
        if not done:
            self.w.status.showMessage("nothing to undo", 3000)
        return done

    def mouse_press(self, event) -> None:
        self._clicks.press(event.pos)
        selection = self.editor.valid(self.editor.selection)
        if event.button != 1 or selection is None:
            return
        # Boids cannot be dragged, and one flying across the pixel must not turn the drag of
        # what is selected into an orbit of the camera: look through them.
        thing, point, _ = self.under(event.pos, boids=False)
        # Pressed on what is selected: drag it, not the camera. Not the ground, where the eye
        # rests and a drag means to orbit: a ground moves by the World tab's fields.
        if thing == selection and not self._is_ground(selection):
            self.editor.begin_drag(selection, point)
            self.w.view.camera.interactive = False

    def mouse_move(self, event) -> None:
        from vispy.util import keys

        if not self.editor.dragging or self.w.visuals.camera_frame is None:
            return
        origin, direction = self.ray(event.pos)
        vertical = keys.CONTROL in event.modifiers
        into = self.w.visuals.camera_frame.into
        if not self.apply(lambda: self.editor.drag_to(origin, direction, into, vertical)):
            self.end_drag()

    def end_drag(self) -> None:
        self.editor.end_drag()
        self.w.view.camera.interactive = True

    def mouse_release(self, event) -> None:
        if self.editor.dragging:
            self.end_drag()
        if not self._clicks.release(event.pos, event.button, buttons=(1, 2)):
            return
        thing, point, resting = self.under(event.pos)
        self.clicked = (point, resting)
        if event.button == 1:
            self.click(thing)
        else:
            self._context_menu(thing)

    def click(self, thing) -> None:
        """Select ``thing`` (a :class:`~flock3d.viewer.editing.Selection`), focus on a boid
        (``("boid", index)``), or with None select nothing."""
        if thing is not None and thing[0] == "boid":
            self.w.set_focus(thing[1])
            return
        self.editor.selection = thing
        self.show_selected()
        self.w._push_state()

    def context_actions(self, thing) -> list[tuple[str, object]]:
        """The right-click menu's entries over ``thing`` (as :meth:`under` finds it): adding
        each primitive, an attractor or a predator at the point clicked, deleting, undoing."""
        actions = [(f"Add {what} here", lambda what=what: self.add(what)) for what in PRIMITIVES]
        actions += [("Add attractor here", lambda: self.add("attractor")),
                    ("Add predator here", lambda: self.add("predator"))]  # fmt: skip
        if thing is not None and thing[0] != "boid" and not self._is_ground(thing):
            # The ground is where a right-click adds things: deleting it takes selecting it and Delete.
            kind, k = thing
            actions.append((f"Delete this {kind}", lambda: self.apply(lambda: self.editor.delete(thing))))
        if self.editor.undo_stack:
            actions.append(("Undo", self.undo))
        return actions

    def _is_ground(self, thing) -> bool:
        from flock3d.look.world import is_ground

        objects = self.w.session.params.objects
        return thing[0] == "object" and thing[1] < len(objects) and is_ground(objects[thing[1]])

    def _context_menu(self, thing) -> None:
        from PySide6 import QtGui, QtWidgets

        menu = QtWidgets.QMenu(self.w.window)
        for text, action in self.context_actions(thing):
            menu.addAction(text).triggered.connect(lambda _=False, action=action: action())
        menu.exec(QtGui.QCursor.pos())

    def ray(self, pos) -> tuple[np.ndarray, np.ndarray]:
        """The ray through canvas pixel ``pos`` into the world: (origin (3,), unit direction)."""
        frame = self.w.visuals.camera_frame
        eye = None if frame is None else frame.eye
        return ray_through(self.w.view.scene.node_transform(self.w.canvas.scene), pos, eye)

    def under(self, pos, boids: bool = True) -> tuple[tuple | None, np.ndarray, bool]:
        """What is drawn under canvas pixel ``pos`` nearest the camera, the world point there and
        whether it lies on a surface (:func:`~flock3d.viewer.picking.thing_under`; ``boids``
        False looks through the boids)."""
        state = self.w.snapshot.state
        return thing_under(self.ray(pos), pos, self.w.view.scene.node_transform(self.w.canvas.scene),
                           self.w.visuals.scenery, state, self.w.session.params,
                           self.w.visuals.framed(state.positions), boids)  # fmt: skip
