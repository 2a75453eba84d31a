"""The generator's pen: lines of Python source, written at an indentation level."""

from __future__ import annotations


class _Lines(list):
    """Lines of Python source written at an indentation level."""

    def __init__(self) -> None:
        super().__init__()
        self.level = 0

    def __call__(self, *lines: str) -> None:
        for line in lines:
            self.append("    " * self.level + line if line else "")

    def indent(self, by: int = 1) -> _Lines:
        self.level += by
        return self

    def dedent(self, by: int = 1) -> None:
        self.level -= by
