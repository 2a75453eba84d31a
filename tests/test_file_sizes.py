"""One job a file: no module of the package over 700 lines, no class over 300 (issue 36's limits;
past them a file or a class holds more than one job, and is split by its jobs)."""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "flock3d"
MAX_FILE_LINES, MAX_CLASS_LINES = 700, 300


def test_no_module_is_over_700_lines_and_no_class_over_300():
    long_files, long_classes = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        name = path.relative_to(PACKAGE.parent)
        if len(text.splitlines()) > MAX_FILE_LINES:
            long_files.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                lines = node.end_lineno - min([node.lineno, *(d.lineno for d in node.decorator_list)]) + 1
                if lines > MAX_CLASS_LINES:
                    long_classes.append(f"{name}: class {node.name}, {lines} lines")
    assert not long_files and not long_classes, long_files + long_classes
