"""Paths read from where the user stands, and ``--usage`` checked before
anything runs (``optax_gate.gate.inputs.user_paths``): one path per ``--usage``,
repeatable; a SPEC that is a path is refused with a hint; a dangling or
looping ``--usage`` link is exit 2 up front."""

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate import cli_parser
from optax_gate.gate.inputs import typed_path, user_paths, validate
from optax_gate.gate.team_code import usage as usage_mod
from tests.meta.support.gate_cli import gate_cli, not_judged_report
from tests.meta.support.paths import LOCK, ROOT


def test_a_relative_path_is_read_from_the_folder_noxw_was_started_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tests" / "contracts").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(typed_path.INVOKED_FROM, str(tmp_path / "tests"))
    assert typed_path.user_path("contracts/team") == Path("tests/contracts/team")  # inside the project: kept relative
    assert typed_path.user_path("../../elsewhere") == Path(os.path.normpath(tmp_path / "../elsewhere"))
    assert typed_path.user_path("/abs/x") == Path("/abs/x")
    monkeypatch.delenv(typed_path.INVOKED_FROM)
    assert typed_path.user_path("contracts/team") == Path("contracts/team")


def test_usage_takes_one_path_each_and_is_repeatable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(typed_path.INVOKED_FROM, raising=False)
    args = cli_parser.parse(["gate", "--usage", "src", "optax==0.2.8", "--usage", "notebooks", "jax==0.12.0.1"])
    assert args.usage == [Path("src"), Path("notebooks")] and args.specs == ["optax==0.2.8", "jax==0.12.0.1"]
    defaults = cli_parser.parse(["gate"])
    assert defaults.usage is None and defaults.out == Path("reports/gate")  # defaults stay the project's


def test_a_spec_that_is_a_path_is_refused_with_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notebooks").mkdir()
    monkeypatch.setenv(typed_path.INVOKED_FROM, str(tmp_path))
    with pytest.raises(
        validate.InvalidInput,
        match=r"'notebooks' is a file or folder, not a requirement SPEC: did you mean --usage notebooks\?",
    ):
        user_paths.refuse_paths_as_specs(["optax==0.2.8", "notebooks"], {"optax"})
    user_paths.refuse_paths_as_specs(["optax==0.2.8"], {"optax"})  # no path, no refusal


def test_a_spec_that_names_another_command_or_a_run_record_is_refused_with_that_commands_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spec that names another command (``./noxw -s gate -- compare A/evidence/baseline.json ...``)
    or a run record is refused with the line of the command that was meant (``./noxw -s compare --
    BASELINE.json CANDIDATE.json``), never "did you mean --usage …baseline.json?"."""
    (tmp_path / "baseline.json").write_text("{}")
    monkeypatch.setenv(typed_path.INVOKED_FROM, str(tmp_path))
    with pytest.raises(
        validate.InvalidInput,
        match=r"'compare' is a command of its own, not a requirement SPEC: "
        r"\./noxw -s compare -- BASELINE\.json CANDIDATE\.json",
    ):
        user_paths.refuse_paths_as_specs(["compare", "baseline.json"], {"optax"})
    with pytest.raises(
        validate.InvalidInput,
        match=r"'baseline\.json' is a file, not a requirement SPEC: to re-judge two run "
        r"records, \./noxw -s compare",
    ):
        user_paths.refuse_paths_as_specs(["baseline.json"], {"optax"})


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda t: (t / "gone.py").symlink_to("missing.py") or t / "gone.py", "is a dangling symlink (to missing.py)"),
        (lambda t: (t / "self").symlink_to("self") or t / "self", "is a symlink loop"),
        (lambda t: t / "nope", "does not exist"),
        (lambda t: (t / "notes.md").write_text("x") and t / "notes.md", "is not a .py or .ipynb file (nor a folder)"),
    ],
)
def test_a_bad_usage_path_is_refused(tmp_path: Path, make: Any, message: Any) -> None:
    path = make(tmp_path)
    with pytest.raises(
        validate.InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")
    ):
        user_paths.check_usage([path])


def test_a_dangling_usage_link_is_exit_2_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "team").symlink_to(tmp_path / "moved-away")
    out = tmp_path / "out"
    status, stdout, stderr, seconds = gate_cli(
        "--candidate-lock", str(LOCK), "--usage", str(tmp_path / "team"), out=out
    )
    assert status == 2 and "is a dangling symlink" in stderr and "Traceback" not in stderr, stdout + stderr
    assert seconds < 10 and not_judged_report(out)["verdict"] == "not-verified"


def test_noxw_passes_the_folder_it_was_started_from(tmp_path: Path) -> None:
    """noxw exports the folder before changing into the project (read by the noxfile's gate/matrix sessions)."""
    script = (ROOT / "noxw").read_text()
    export = script.index('export NOXW_INVOKED_FROM="$PWD"')
    assert export < script.index('cd "$root"')
    proc = subprocess.run(
        ["bash", "-c", script[: script.index('cd "$root"')] + 'echo "$NOXW_INVOKED_FROM"'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.stdout.strip() == str(tmp_path)
    assert 'OPTAX_GATE_INVOKED_FROM": os.environ.get("NOXW_INVOKED_FROM"' in (ROOT / "noxfile.py").read_text()


def test_a_refused_path_is_named_as_typed_and_as_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From a subfolder, a refusal names the path as the user typed it and the absolute path it was read as;
    an absolute path as typed, with no "(read from ...)"."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "README.md").write_text("x")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(typed_path.INVOKED_FROM, str(tmp_path / "tests"))
    with pytest.raises(validate.InvalidInput) as refused:
        user_paths.check_usage([typed_path.user_path("../nothere")])
    assert str(refused.value) == f"--usage ../nothere (= {tmp_path / 'nothere'}) does not exist"
    with pytest.raises(validate.InvalidInput) as refused:
        user_paths.check_usage([typed_path.user_path(str(tmp_path / "gone"))])
    assert str(refused.value) == f"--usage {tmp_path / 'gone'} does not exist"
    with pytest.raises(validate.InvalidInput) as refused:
        validate.writable_folder(typed_path.user_path("../README.md"))
    assert (
        str(refused.value)
        == f"the output folder ../README.md (= {tmp_path / 'README.md'}) (set with --out) exists and is not a folder"
    )


@pytest.mark.parametrize(
    "spec, path_like",
    [
        ("notebooks", True),
        ("src/nb", True),
        ("./nb", True),
        ("nb.v2", True),
        ("optx", False),
        ("rich==13", False),
        ("optax-x[cpu]", False),
    ],
)
def test_a_spec_that_may_be_a_missing_path_gets_the_usage_hint(spec: Any, path_like: Any) -> None:
    """A bare SPEC (no version, no extras) that is no package of the baseline and looks like a path (a / or a
    ., or close to no package) may be a second path after --usage that does not exist."""
    with pytest.raises(validate.InvalidInput) as refused:
        validate.parse_specs(["optax==0.2.8", spec], {"optax", "jax"})
    hint = f"if it is a path: --usage {spec} (one path per --usage)"
    assert (hint in str(refused.value)) == path_like, str(refused.value)


@pytest.mark.parametrize("usage", [["src"], ["src", "notebooks", "../shared"]])
def test_call_sites_are_named_from_the_folder_the_user_stood_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, usage: Any
) -> None:
    """Every file is named relative to where the user stood when they started the gate, with ``../`` for
    a path outside it: never absolute, never ambiguous; report.json the same. For example ``--usage
    src`` names ``src/train.py``, not ``train.py`` (ambiguous once a second folder holds a
    ``train.py``), and several ``--usage`` paths are not prefixed as the gate read them (absolute paths
    outside the project)."""
    team, shared = tmp_path / "team", tmp_path / "shared"
    for folder in (team / "src", team / "notebooks", shared):
        folder.mkdir(parents=True)
        (folder / "train.py").write_text("import optax\n\ntx = optax.adamw(1e-3)\n")
    project = tmp_path / "project"  # the gate runs in its own folder, as under ./noxw
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv(typed_path.INVOKED_FROM, str(team))
    scan = usage_mod.scan(user_paths.check_usage([typed_path.user_path(p) for p in usage]))
    named = sorted(u.where for u in scan.uses if u.how == "call")
    want = {"src": "src/train.py:3", "notebooks": "notebooks/train.py:3", "../shared": "../shared/train.py:3"}
    assert named == sorted(want[p] for p in usage)
    assert not any(os.path.isabs(name) for name in named)


def test_the_default_output_folder_is_printed_so_it_opens_from_where_the_user_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a subfolder (``cd tests && ../noxw -s gate -- ...``) the default output folders are
    printed as absolute paths, since ``reports/gate/runs/.../report.md``, relative to the project
    folder, does not exist from there; from the project folder they stay relative (shorter)."""
    from optax_gate.gate import cli_parser

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()
    monkeypatch.setenv(typed_path.INVOKED_FROM, str(tmp_path / "tests"))
    args = cli_parser.parse(["gate", "optax==0.2.8"])
    assert args.out == tmp_path / "reports" / "gate" and args.out.is_absolute()
    assert cli_parser.parse(["compare", "a.json", "b.json"]).out == tmp_path / "reports" / "compare"
    assert cli_parser.parse(["bisect"]).report == tmp_path / "reports" / "gate"
    assert cli_parser.parse(["matrix"]).out == tmp_path / "reports" / "matrix"
    monkeypatch.setenv(typed_path.INVOKED_FROM, str(tmp_path))
    assert cli_parser.parse(["gate", "optax==0.2.8"]).out == Path("reports/gate")
    monkeypatch.delenv(typed_path.INVOKED_FROM)
    assert cli_parser.parse(["gate", "optax==0.2.8"]).out == Path("reports/gate")


def test_a_usage_folder_without_code_is_refused(tmp_path: Path) -> None:
    """A --usage folder without code (a typo that exists, a docs folder) is refused, never PASS with "0 of 0 file(s)
    scanned"."""
    from optax_gate.gate.inputs import user_paths, validate

    (tmp_path / "empty").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# no code\n")
    (tmp_path / "docs" / ".venv").mkdir()
    (tmp_path / "docs" / ".venv" / "x.py").write_text("import optax\n")
    for folder in ("empty", "docs"):
        with pytest.raises(validate.InvalidInput, match="holds no .py or .ipynb file"):
            user_paths.check_usage([tmp_path / folder])
    # the team's code taken from --run-dir (no --usage given): the refusal names the option the user gave
    with pytest.raises(validate.InvalidInput, match=r"^--run-dir .* holds no .py or .ipynb file"):
        user_paths.check_usage([tmp_path / "empty"], "--run-dir")
    (tmp_path / "docs" / "train.py").write_text("import optax\n")
    assert user_paths.check_usage([tmp_path / "docs"]) == [tmp_path / "docs"]


def test_a_lock_file_given_as_a_spec_is_told_its_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock file given as a spec, as in ``./noxw -s gate -- requirements-lock.txt``, is told that a lock is a
    candidate or a baseline lock, never "did you mean --usage"."""
    from optax_gate.gate.inputs import user_paths, validate

    lock = tmp_path / "team-lock.txt"
    lock.write_text("optax==0.2.8 \\\n    --hash=sha256:" + "a" * 64 + "\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        validate.InvalidInput, match="did you mean --candidate-lock team-lock.txt .* or --baseline-lock"
    ):
        user_paths.refuse_paths_as_specs(["team-lock.txt"], {"optax"})
