"""``./noxw`` answers a session name that ``noxfile.py`` does not define as a usage error (exit 2), before
anything is installed, and its list of names is the noxfile's."""

import ast
import re
import subprocess
from typing import Any

import pytest

from tests.meta.support.paths import ROOT


def _noxfile_sessions() -> set[str]:
    names: set[str] = set()
    for node in ast.parse((ROOT / "noxfile.py").read_text()).body:
        for deco in getattr(node, "decorator_list", []):
            if isinstance(deco, ast.Call) and ast.unparse(deco.func) == "nox.session":
                given = [
                    str(k.value.value) for k in deco.keywords if k.arg == "name" and isinstance(k.value, ast.Constant)
                ]
                names.add(given[0] if given else getattr(node, "name", ""))
    return names


def test_the_wrappers_session_names_are_the_noxfiles() -> None:
    listed = re.search(r'^sessions=" (.*) "$', (ROOT / "noxw").read_text(), re.M)
    assert listed is not None
    assert set(listed.group(1).split()) == _noxfile_sessions()


@pytest.mark.parametrize("args", [["-s", "gaet"], ["--session=gaet"], ["-s", "tests,gaet"], ["-e", "gaet", "--", "x"]])
def test_an_unknown_session_is_a_usage_error_that_names_the_sessions(args: Any) -> None:
    proc = subprocess.run(["bash", str(ROOT / "noxw"), *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert "there is no session 'gaet'; the sessions are: lint tests mutants" in proc.stderr
