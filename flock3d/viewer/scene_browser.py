"""The Scenes tab: every shipped scene by name, title and description, to open with a
double-click."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

__all__ = ["SceneBrowser", "scene_entries"]


def scene_entries() -> list[tuple[str, str, str]]:
    """The shipped scenes as the browser lists them: (name to open it by, its title, its
    description), in the library's order (``flock3d scenes``'s); a world this install cannot
    read (no world extra) last, saying what to install."""
    from flock3d.scene import load_shipped

    loaded, missing = load_shipped()
    return [(name, scene.name, scene.description) for name, scene in loaded] + [
        (name, name, "needs the world extra: python -m pip install 'flock3d[world]'") for name in missing
    ]


class SceneBrowser(QtWidgets.QWidget):
    """The Scenes tab: every shipped scene by name, title and description; double-click (or
    Open) opens one. ``scene_chosen(name)`` asks the window to open it."""

    scene_chosen = QtCore.Signal(str)

    def __init__(self, entries: list[tuple[str, str, str]], parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        column = QtWidgets.QVBoxLayout(self)
        column.setContentsMargins(6, 6, 6, 6)
        self.list = QtWidgets.QListWidget()
        self.list.setWordWrap(True)
        self.list.setToolTip("The scenes shipped with flock3d (flock3d scenes); double-click one to open it.")
        for name, title, description in entries:
            item = QtWidgets.QListWidgetItem(f"{title}   ·   {name}\n{description}")
            item.setData(QtCore.Qt.ItemDataRole.UserRole, name)
            item.setToolTip(f"flock3d view {name}\n{description}")
            self.list.addItem(item)
        self.list.itemActivated.connect(self._chosen)  # a double-click, or Enter
        column.addWidget(self.list, 1)
        self.open = QtWidgets.QPushButton("Open")
        self.open.setToolTip("Open the scene selected in the list")
        self.open.clicked.connect(lambda: self._chosen(self.list.currentItem()))
        column.addWidget(self.open)

    def names(self) -> list[str]:
        return [self.list.item(i).data(QtCore.Qt.ItemDataRole.UserRole) for i in range(self.list.count())]

    def _chosen(self, item) -> None:
        if item is not None:
            self.scene_chosen.emit(item.data(QtCore.Qt.ItemDataRole.UserRole))
