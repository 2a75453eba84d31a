"""The documentation users have: the model's description in docs/, linked and cited."""

import itertools
import re
import textwrap
from pathlib import Path

import pytest
from helpers import flock3d

from flock3d import rules
from flock3d.scene.schema import KEYS

ROOT = Path(__file__).resolve().parents[1]
MODEL_DOC = ROOT / "docs" / "model.md"


def test_the_model_documentation_describes_every_model_parameter():
    text = MODEL_DOC.read_text()
    for key in KEYS:
        if key.target != "params":
            continue
        written = {"items": f"[[{key.name}]]", "table": f"[{key.name}]"}.get(key.kind, key.name)
        assert f"`{written}`" in text, f"docs/model.md does not describe {written}"
    sections = ["State", "Parameters", "One step", "Initial state", "Order parameters",
                "Variants of the classic model", "World features", "The Couzin zone model"]  # fmt: skip
    assert [s for s in sections if f"\n## {s}\n" not in text] == []
    steps = re.findall(r"^(\d+)\. \*\*", text.split("## One step")[1].split("## Initial state")[0], re.M)
    assert steps == [str(k) for k in range(1, 11)]  # the ten steps of one update


def test_the_readme_links_the_model_documentation():
    assert "(docs/model.md)" in (ROOT / "README.md").read_text()


def test_no_docstring_cites_a_file_users_do_not_have():
    shipped = [ROOT / "README.md", *(ROOT / "flock3d").rglob("*.py"), *(ROOT / "scenes").rglob("*.toml")]
    for path in [*shipped, *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("*.py")]:
        assert "shared/" not in path.read_text(), f"{path.relative_to(ROOT)} cites shared/"


def test_the_parameter_tables_of_the_model_doc_are_the_declarations():
    # docs/model.md's tables between <!-- params: GROUP --> markers are derived from the fields'
    # declarations; FLOCK3D_UPDATE_DOCS=1 writes them anew after a declaration changes.
    import os
    import re

    from flock3d.scene.describe import parameter_groups, parameter_table

    text = MODEL_DOC.read_text()
    groups = parameter_groups()
    pattern = re.compile(r"(<!-- params: (\w+) -->\n)(.*?)(<!-- /params -->)", re.S)
    found = [m[2] for m in pattern.finditer(text)]
    assert sorted(found) == sorted(groups), "every group has its table, once"
    expected = pattern.sub(lambda m: m[1] + parameter_table(groups[m[2]]) + m[4], text)
    if os.environ.get("FLOCK3D_UPDATE_DOCS"):
        MODEL_DOC.write_text(expected)
    assert text == expected, "a parameter table of docs/model.md differs from the declarations"


@pytest.mark.slow
def test_the_analysis_documents_python_runs_on_a_recording(tmp_path):
    # Its blocks in one process, in turn, where traj.h5 is a recording of the default scene; the
    # MDAnalysis block reads it (MDAnalysis is in the test extra).
    import subprocess
    import sys

    from helpers import process_env

    pytest.importorskip("MDAnalysis")
    out = flock3d("run", "default", "--steps", "60", "--out", tmp_path / "traj.h5")
    assert out.returncode == 0, out.stderr
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "analysis.md").read_text(), re.S)
    assert len(blocks) == 2 and "mda.Universe.empty" in blocks[1]
    run = subprocess.run([sys.executable, "-c", "\n".join(blocks)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=600, env=process_env())  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.strip().splitlines()
    assert [line.split()[:2] for line in lines[-3:]] == [["0", "0.0"], ["5", "0.5"], ["10", "1.0"]], lines


def rule_snippets(document: str) -> str:
    """The Python a document shows that defines rules or forces, its blocks joined in order (a
    later block may use an earlier one's imports, as a reader pasting them in turn would)."""
    if document.endswith(".py"):  # a module's docstring: the indented block after "::"
        lines = rules.__doc__.split("::\n", 1)[1].splitlines()
        blocks = [textwrap.dedent("\n".join(itertools.takewhile(lambda line: line[:1] in ("", " "), lines)))]
    else:
        blocks = re.findall(r"```python\n(.*?)```", (ROOT / document).read_text(), re.S)
    return "\n".join(block for block in blocks if "@flock3d." in block)


def test_the_documented_chained_order_of_your_rules_runs(tmp_path):
    # The warm-up's layout had none of the rules the order names: a traceback in a fresh process
    # (whose warm-up runs), where `check` passed the scene.
    text = (ROOT / "docs" / "rules.md").read_text()
    order = re.search(r"`(order = \[.*?\])`", text).group(1)
    scene, rules_file = tmp_path / "chained.toml", tmp_path / "rules.py"
    rules_file.write_text(rule_snippets("docs/rules.md"))
    scene.write_text(f'[rules]\ncombine = "chain"\n{order}\n')
    out = flock3d("run", scene, "--rules", rules_file, "--steps", "3", "--no-progress", process=True)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "ran 3 steps" in out.stdout, out.stdout


@pytest.mark.slow
@pytest.mark.parametrize("document", ["README.md", "docs/rules.md", "flock3d/rules.py"])
def test_each_documented_rule_runs_where_scipy_is_not_installed(document, tmp_path):
    """The README's install (pip install .) has no scipy, so numba has no linear algebra there."""
    code = rule_snippets(document)
    assert code.count("@flock3d.") >= 2, code
    (tmp_path / "snippet.py").write_text(code)
    out = flock3d("run", "small-arena", "--steps", "3", "--rules", tmp_path / "snippet.py", "--no-progress",
                  without_scipy=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
