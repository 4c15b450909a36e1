"""The ``--usage`` scan never fails open (``optax_gate.gate.inputs.usage_files``):
a team tree with every kind of file that cannot be scanned, beside good ones;
each bad file is listed with its reason (worked out by hand from the bytes
written here), the counts say scanned / not scanned, and an API change whose
use may sit in a file not scanned reads ``cannot-tell``, never unaffected."""

import json
import os
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.report import surface_section

pytest.importorskip("griffe", reason="griffe comes with the tools lock (requirements-tools.txt)")

from optax_gate.gate.diffs import unseen
from optax_gate.gate.inputs import usage_files
from optax_gate.gate.inputs.options import ScopeOptions
from optax_gate.gate.report import json_file as report_json
from optax_gate.gate.team_code import usage
from tests.meta.support.records import judged
from tests.meta.support.surface_sites import BASE_INIT, BASE_SRC, CAND_INIT, CAND_SRC, build

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells], "nbformat": 4})


def bad_tree(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Good files and one of each kind of file that cannot be scanned."""
    team = root / "team"
    (team / "pkg").mkdir(parents=True)
    (team / "train.py").write_text("import optax\n\ntx = optax.clip(g, 1.0)\n")  # scanned: breaks (clip lost max_norm)
    (team / "pkg" / "ok.ipynb").write_text(_notebook("import optax\n", "optax.scale(1e-3)\n"))
    (team / "pkg" / "shell.ipynb").write_text(
        _notebook("import optax\nif colab:\n    !pip install x\nfiles = !ls\n%%time\n", "%%time\noptax.needs(1)\n")
    )  # shell lines and %%time: Python
    (team / "broken.py").write_text("import optax\n\ndef f(:\n    optax.renamed_clip(t, 1.0)\n")
    (team / "latin.py").write_bytes(b"import optax\nname = '\xe9t\xe9'\n")  # latin-1 bytes, no coding cookie
    (team / "comment.py").write_bytes(b"# caf\xe9\nimport optax\n")  # latin-1 on line 1: tokenize's coding-cookie check
    (team / "loop.py").symlink_to("loop.py")
    (team / "dangling.py").symlink_to("missing.py")
    (team / "empty.ipynb").write_text("")
    (team / "text.ipynb").write_text("print('not json')\n")
    (team / "cells.ipynb").write_text(_notebook("import optax\n", "optax.posonly(\n"))
    secret = team / "secret.py"
    secret.write_text("import optax\noptax.swap(1, 2)\n")
    secret.chmod(0)
    if AS_ROOT:  # root reads a mode-000 file anyway: the refusal the kernel would give is simulated
        real = Path.read_bytes

        def read_bytes(self: Any) -> Any:
            if self.name == "secret.py":
                raise PermissionError(13, "Permission denied", str(self))
            return real(self)

        monkeypatch.setattr(Path, "read_bytes", read_bytes)
    return team


EXPECTED = {
    "broken.py": "syntax error at line 3: invalid syntax",
    "latin.py": "undecodable bytes: not utf-8 at byte 21",
    "comment.py": "undecodable bytes: not utf-8 at byte 5",
    "loop.py": "symlink loop",
    "dangling.py": "dangling symlink (to missing.py)",
    "text.ipynb": "not a JSON notebook: Expecting value (line 1, column 1)",
    "cells.ipynb:code cell 2 (cell 2 of the notebook)": "syntax error at line 1: '(' was never closed",
    "secret.py": "unreadable: permission denied",
}


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    return bad_tree(tmp_path, monkeypatch)


def test_every_file_is_scanned_or_listed_with_its_reason(team: Any) -> None:
    """Every file is scanned, or listed as not scanned with its reason. An empty notebook is scanned
    and uses nothing: it is not listed ("not a JSON notebook: the file is empty") among the files
    whose use "cannot be told", in the verdict's notes."""
    scan = usage.scan([team], base=team)
    assert {n.path: n.reason for n in scan.not_scanned} == EXPECTED
    assert (scan.found, scan.scanned) == (
        12,
        4,
    )  # train.py, pkg/ok.ipynb, pkg/shell.ipynb, empty.ipynb; cells.ipynb only in part
    assert {u.where for u in scan.uses if u.how == "call"} == {
        "train.py:3",
        "pkg/ok.ipynb:code cell 2 (cell 2 of the notebook):1",
        "pkg/shell.ipynb:code cell 2 (cell 2 of the notebook):2",
    }
    assert sorted(scan.to_json()["not_scanned"], key=lambda n: n["path"]) == [
        {"path": k, "reason": v} for k, v in sorted(EXPECTED.items())
    ]


@pytest.mark.skipif(AS_ROOT, reason="root lists a mode-000 folder anyway; the file case above covers the refusal")
def test_a_folder_that_cannot_be_listed_is_listed(tmp_path: Path) -> None:
    (tmp_path / "closed").mkdir()
    (tmp_path / "closed" / "x.py").write_text("import optax\n")
    (tmp_path / "closed").chmod(0)
    try:
        scan = usage.scan([tmp_path], base=tmp_path)
    finally:
        (tmp_path / "closed").chmod(0o755)
    assert [(n.path, n.reason) for n in scan.not_scanned] == [("closed/", "unreadable folder: permission denied")]


def _section(tmp_path: Path, scan: Any) -> Any:
    base = build(tmp_path / "base", BASE_INIT, BASE_SRC, contrib=False)
    cand = build(tmp_path / "cand", CAND_INIT, CAND_SRC, contrib=True)
    return unseen.surface_section(base, cand, ("optax",), scan, contracted=set())


def test_a_change_a_file_not_scanned_may_use_cannot_be_told(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "train.py").write_text("import optax\noptax.scale(1e-3)\n")
    (team / "broken.py").write_text(
        "import optax\noptax.renamed_clip(t, 1.0\n"
    )  # syntax error; names renamed_clip only
    section = _section(tmp_path, usage.scan([team], base=team))
    verdicts = {(r["path"], r["change"]): (r["verdict"], r.get("not_scanned")) for r in section["rows"]}
    assert verdicts[("optax.renamed_clip", "parameter-renamed")] == ("cannot-tell", ["broken.py"])
    assert verdicts[("optax.posonly", "positional-only")] == ("changed", None)  # its name is nowhere in broken.py
    assert verdicts[("optax.scale", "default-changed")] == ("changed", None)  # compatible: nothing to tell


def test_with_unreadable_files_no_incompatible_change_reads_unaffected(tmp_path: Path, team: Any) -> None:
    scan = usage.scan([team], base=team)
    section = _section(tmp_path, scan)
    by = {(r["path"], r["change"], r["param"]): r["verdict"] for r in section["rows"]}
    assert by[("optax.clip", "parameter-removed", "max_norm")] == "broken"  # train.py:3, scanned
    incompatible_not_broken = {
        k: v for k, v in by.items() if v not in ("broken", "new") and k[1] not in ("default-changed", "parameter-added")
    }
    assert incompatible_not_broken and set(incompatible_not_broken.values()) == {
        "cannot-tell"
    }  # loop.py etc. may use anything
    report: Any = {"usage": scan.to_json(), "surface": section}
    text = "\n".join(surface_section.markdown(report))
    for path, reason in EXPECTED.items():
        assert f"| `{path}` | {reason} |" in text
    assert "4 of 12 file(s) scanned, 8 not scanned" in text


def test_a_report_with_files_not_scanned_says_so_and_validates(tmp_path: Path, team: Any) -> None:
    jsonschema = pytest.importorskip(
        "jsonschema", reason="jsonschema comes with the tools lock (requirements-tools.txt)"
    )
    from tests.meta.support.records import record
    from tests.meta.support.schema_and_locks import SCHEMA

    base, cand = record(golden_a="passed"), record(golden_a="passed")
    report = judged(base, cand, ScopeOptions(usage_scan=usage.scan([team], base=team)))
    assert report["usage"] is not None
    assert report["usage"]["scanned"] == 4 and len(report["usage"]["not_scanned"]) == 8
    assert [n for n in report["notes"] if n.startswith("--usage:")] == [
        "--usage: 8 file(s) not scanned (broken.py, cells.ipynb:code cell 2 (cell 2 of the notebook), "
        "comment.py, …): what they use cannot be told; "
        "0 API surface change(s) read cannot-tell (see Your code)"
    ]  # no environments here: the surface was not compared
    jsonschema.validate(json.loads(report_json.render(report)), json.loads(SCHEMA.read_text()))


def test_a_removed_package_a_file_not_scanned_may_import_cannot_be_told(tmp_path: Path) -> None:
    from tests.meta.support.schema_and_locks import NEW_LOCK, OLD_LOCK

    (tmp_path / "old.txt").write_text(OLD_LOCK)
    (tmp_path / "new.txt").write_text(NEW_LOCK)
    team = tmp_path / "team"
    team.mkdir()
    (team / "broken.py").write_text("import chex\n\ndef f(:\n")  # chex: removed in NEW_LOCK
    section = unseen.dependencies_section(
        RunRecord("baseline", "ran", fields={"lock_file": str(tmp_path / "old.txt")}),
        RunRecord("candidate", "ran", fields={"lock_file": str(tmp_path / "new.txt")}),
        None,
        None,
        usage.scan([team], base=team),
    )
    assert {r["name"]: (r["verdict"], r.get("not_scanned")) for r in section["rows"]} == {
        "chex": ("cannot-tell", ["broken.py"]),
        "jax": ("changed", None),
        "numpy": ("changed", None),
        "ml-dtypes": ("changed", None),
    }


def test_a_shell_line_continued_with_a_backslash_parses_and_cells_are_named_both_ways(tmp_path: Path) -> None:
    """``!pip install \\`` then an indented ``optax`` is one IPython shell command (a valid cell), not a
    syntax error. A cell's name counts code cells (markdown not counted) and says its place among all
    cells: "cell 3" alone would count a markdown cell before it."""
    team = tmp_path / "team"
    team.mkdir()
    cells = [
        {"cell_type": "markdown", "source": "# Training\n"},
        {"cell_type": "code", "source": "!pip install \\\n    optax==0.2.6 \\\n    flax\nimport optax\n"},
        {"cell_type": "code", "source": "if True:\n    files = !ls \\\n        -l\n    tx = optax.adamw(1e-3)\n"},
        {"cell_type": "code", "source": "x = (1 +\n"},
    ]
    (team / "nb.ipynb").write_text(json.dumps({"cells": cells, "nbformat": 4}))
    scan = usage.scan([team], base=team)
    assert [(n.path, n.reason) for n in scan.not_scanned] == [
        ("nb.ipynb:code cell 3 (cell 4 of the notebook)", "syntax error at line 1: '(' was never closed")
    ]
    assert {u.where for u in scan.uses if u.how == "call"} == {"nb.ipynb:code cell 2 (cell 3 of the notebook):4"}


def test_a_symlink_to_nothing_is_listed_but_holds_no_code(tmp_path: Path) -> None:
    """A dangling symlink in a --usage folder is listed but holds no code, so it makes no finding the team's
    (a team whose code uses neither API does not get FAIL); a file that cannot be read still may use
    anything (fail closed)."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "train.py").write_text("import optax\nopt = optax.adam(1e-3)\n")
    (team / "gone.py").symlink_to("missing.py")
    (team / "loop.py").symlink_to("loop.py")
    scan = usage.scan([team], base=team)
    assert sorted((n.path, n.reason) for n in scan.not_scanned) == [
        ("gone.py", "dangling symlink (to missing.py)"),
        ("loop.py", "symlink loop"),
    ]
    assert all(n.content == b"" for n in scan.not_scanned)
    assert not any(usage_files.may_use(n, "optax.adamw") for n in scan.not_scanned)


def test_a_file_not_scanned_may_use_an_api_only_where_its_name_is_a_whole_word() -> None:
    """A file not scanned may use an API only where its name is a whole word: a file that does not parse,
    holding ``optax.adamax(1e-3)``, does not put ``optax.adam``'s findings among the team's ("cannot tell
    for files not scanned")."""
    entry = usage_files.NotScanned("broken.py", "does not parse", b"import optax\nopt = optax.adamax(1e-3)\nx = (\n")
    assert usage_files.may_use(entry, "optax.adamax") and not usage_files.may_use(entry, "optax.adam")
    assert not usage_files.may_use(entry, "optax.adamw") and usage_files.may_use(entry, "optax")
    assert usage_files.may_use(usage_files.NotScanned("x.py", "unreadable", None), "optax.adam")  # unread: anything


@pytest.mark.timeout(30)
def test_a_named_pipe_is_listed_never_read(tmp_path: Path) -> None:
    """A named pipe (even one called pipe.py) is listed, never read: reading waits for a writer and would hang the
    gate at "checking the inputs"."""
    import os

    from optax_gate.gate.inputs import usage_files

    (tmp_path / "good.py").write_text("import optax\n")
    os.mkfifo(tmp_path / "pipe.py")
    parsed = usage_files.parse([tmp_path], base=tmp_path)
    assert [(n.path, n.reason) for n in parsed.not_scanned] == [("pipe.py", "not a regular file (a named pipe)")]
    assert list(parsed.trees) == ["good.py"]
