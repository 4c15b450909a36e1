"""Fold a pytest report log (``pytest-reportlog`` JSON lines) into one outcome
per contract.

A test produces up to three reports (setup, call, teardown); its outcome is:

- ``error``: setup or teardown failed;
- ``failed``: the call failed (a strict xfail that passed also arrives as a
  failed call);
- ``xfailed``: the call (or setup) was skipped with ``wasxfail``;
- ``skipped``: skipped otherwise;
- ``passed``: the call passed.

Only tests whose reports carry the ``contract_api`` user property (set by
``optax_gate.pytest_plugin``) are contracts; the suite's own tests are ignored.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optax_gate.gate.base import plain_text


@dataclass
class ContractOutcome:
    """Outcome of one contract test in one environment."""

    id: str
    api: str
    guide: str
    kind: str
    outcome: str
    detail: str = ""
    defect: str = ""  # "id: reason" when the contract pins a known upstream defect
    configuration: str = ""  # JSON of the configuration marker's keywords ({"weight_decay": "a schedule"}), or ""


@dataclass
class ReportLog:
    """What one report log says: contracts, collection errors, exit status."""

    contracts: dict[str, ContractOutcome] = field(default_factory=dict)
    collection_errors: list[str] = field(default_factory=list)
    exitstatus: int | None = None


def _diff_entries(lines: list[tuple[str, bool]]) -> dict[str, str]:
    """``{key: value}`` of one side of a YAML diff (its context and its own
    changed lines, in order: ``(line, changed)``), for the entries one of whose
    lines changed (each key once, the first). A value YAML wrapped onto
    indented lines is joined again (a corner's record is longer than YAML's
    80 columns)."""
    found: dict[str, str] = {}
    key, value, indent, changed = None, "", 0, False

    def close() -> None:
        if key is not None and changed:
            found.setdefault(key, value)

    for line, moved in lines:
        if line.startswith("@@"):  # a new hunk: the entry before it ended
            close()
            key = None
            continue
        body = line[1:]
        depth = len(body) - len(body.lstrip())
        if key is not None and value and depth > indent:  # a wrapped value goes on
            value, changed = f"{value} {body.strip()}", changed or moved
            continue
        close()
        name, sep, rest = body.strip().partition(": ")
        if not sep and body.rstrip().endswith(":"):  # a mapping's key: what follows is its entries
            name, rest = body.strip()[:-1], ""
        elif not sep:
            key = None
            continue
        key, value, indent, changed = name.strip("'"), rest.strip(), depth, moved
    close()
    return found


def snapshot_diff(message: str) -> str:
    """The leaves that moved, from a ``pytest-regressions`` "FILES DIFFER"
    message: ``"path: old -> new; ..."`` (each path once; a value YAML wrapped
    over several lines joined again), or "" when the message is not such a diff."""
    if "FILES DIFFER" not in message:
        return ""
    body = message.splitlines()
    first = next((i for i, line in enumerate(body) if line.startswith("@@")), len(body))
    hunks = [line for line in body[first:] if line[:1] in (" ", "-", "+", "@") and not line.startswith(("---", "+++"))]
    old = _diff_entries([(line, line[0] == "-") for line in hunks if line[0] != "+"])
    new = _diff_entries([(line, line[0] == "+") for line in hunks if line[0] != "-"])
    moved = [
        f"{k}: {old.get(k, 'absent')} -> {new.get(k, 'absent')}" for k in {**old, **new} if old.get(k) != new.get(k)
    ]
    return "snapshot drift: " + "; ".join(moved) if moved else "snapshot differs (see the pytest output)"


#: What differs between two runs of one failure without being the failure: a memory
#: address, a folder of the environment or of pytest's temporary files, a duration.
_VOLATILE = (
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x#"),
    (re.compile(r"\S*/(?:site-packages|dist-packages)/"), "<site>/"),
    (re.compile(r"\S*/pytest-of-[^/\s]+/pytest-\d+/"), "<tmp>/"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|seconds)\b"), "<time>"),
)


def failure_signature(detail: str) -> str:
    """A failure's detail without what differs between two runs of the same
    failure (memory addresses, the environment's ``site-packages`` folder,
    pytest's temporary folders, durations), its exception type, message and
    values kept: two contracts failing in both environments with different
    signatures fail differently (``optax_gate.gate.judge.compare``: ``changed``)."""
    text = " ".join((detail or "").split())
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text


_RAISES = re.compile(r"^\s*with\s+pytest\.raises\(\s*(\([^)]*\)|[\w.]+)")
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration))(?::|$)")


def expected_raise(longrepr: dict[str, Any]) -> str:
    """The exception type a ``with pytest.raises(T):`` block expected, when the
    failing line of a traceback entry sits inside one (``"AssertionError"``,
    ``"TypeError, ValueError"`` for a tuple); "" otherwise.

    Read from the traceback's source lines (pytest's long form: the test's
    lines up to the failing one, marked ``>``), innermost block first."""
    for entry in reversed((longrepr.get("reprtraceback") or {}).get("reprentries") or []):
        lines = (entry.get("data") or {}).get("lines") or []
        failing = next((i for i, ln in enumerate(lines) if ln.startswith(">")), None)
        if failing is None:
            continue
        indent = len(lines[failing][1:]) - len(lines[failing][1:].lstrip())
        for line in reversed(lines[:failing]):
            code = line[1:] if line[:1] in "> " else line
            if not code.strip():
                continue
            depth = len(code) - len(code.lstrip())
            if depth >= indent:
                continue
            indent = depth
            m = _RAISES.match(code)
            if m:
                return ", ".join(n.strip().rsplit(".", 1)[-1] for n in m[1].strip("()").split(",") if n.strip())
            if code.lstrip().startswith(("def ", "class ")):
                break
    return ""


def _raised_instead(longrepr: dict[str, Any], text: str) -> str:
    """``"raised TypeError instead of AssertionError: <message>"`` when an
    exception escaped a ``pytest.raises`` block that expected another type
    (pytest itself then shows only the escaped exception); ``text`` otherwise."""
    m = _EXCEPTION.match(text)
    expected = expected_raise(longrepr) if m else ""
    if m is None or not expected or m[1].rsplit(".", 1)[-1] in expected.split(", "):
        return text
    rest = text[m.end() :]
    return f"raised {m[1]} instead of {expected}" + (f":{rest}" if rest.strip() else "")


def _numbers(text: str) -> list[float]:
    """The numbers of a line of pytest-regressions' table, in order (nan and inf included)."""
    out = []
    for token in text.split():
        with contextlib.suppress(ValueError):
            out.append(float(token.strip("(),")))
    return out


def values_drift(message: str) -> str:
    """What moved, from a ``pytest-regressions`` ``ndarrays_regression``
    message ("Values are not sufficiently close"): per array, how many
    elements differ, of how many, and the largest absolute and relative
    difference; "" when the message is not such a comparison."""
    if "Values are not sufficiently close" not in message:
        return ""
    arrays = []
    for block in re.finditer(
        r"^(?P<name>\S[^\n]*):\n\s+Shape: (?P<shape>\([^)]*\))\n\s+Number of differences: (?P<n>\d+) / "
        r"(?P<of>\d+)[^\n]*"
        r"(?P<rest>(?:\n[ \t]+.*)*)",
        message,
        re.M,
    ):
        maxima = [float(x) for x in re.findall(r"Max:\s+(\S+)", block["rest"])]
        row = re.search(
            r"Difference\n([^\n]*)", block["rest"]
        )  # the first element: index (a tuple may hold spaces), obtained, expected, difference
        first = _numbers(row[1])[-3:] if row else []
        if maxima and maxima[0] == maxima[0]:  # not NaN
            moved = f", largest {maxima[0]:.2g}" + (f" (relative {maxima[1]:.2g})" if len(maxima) > 1 else "")
        elif maxima:
            moved = ", where the recorded values were not finite"
        else:  # a scalar: pytest-regressions gives no statistics, only the element
            moved = f": {first[0]:.4g} where {first[1]:.4g} was recorded" if len(first) == 3 else ""
        arrays.append(f"`{block['name']}` {block['n']} of {block['of']} elements{moved}")
    shown = "; ".join(arrays[:3]) + (f"; and {len(arrays) - 3} more arrays" if len(arrays) > 3 else "")
    return "snapshot drift of values: " + (shown or "beyond the recorded tolerance")


#: Characters of a failure message kept in a contract row's detail (more when
#: pytest's "At index N diff" of two sequences ends later, up to twice this; twice
#: this for a snapshot drift, whose leaves are each a corner's whole record).
MESSAGE_LIMIT = 300


def short_message(report: dict[str, Any]) -> str:
    """Short reason of a failed or skipped report: one line, about
    :data:`MESSAGE_LIMIT` characters, never cut inside a value
    (``plain_text.shorten``)."""
    longrepr = report.get("longrepr")
    text = ""
    if isinstance(longrepr, dict):
        crash = longrepr.get("reprcrash") or {}
        text = crash.get("message") or ""
        text = snapshot_diff(text) or values_drift(text) or _raised_instead(longrepr, text)
        if not text:
            text = str(longrepr.get("longrepr", ""))
    elif isinstance(longrepr, list) and len(longrepr) == 3:  # skip: (path, line, reason)
        text = str(longrepr[2])
    elif longrepr:  # a collection error: the traceback's last "E" line says what failed
        lines = [ln.strip() for ln in str(longrepr).splitlines() if ln.strip()]
        errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
        text = errors[-1] if errors else lines[-1]
    if report.get("wasxfail"):
        text = text or f"xfail: {report['wasxfail']}"
    text = " ".join(text.split())
    # pytest's first difference of two sequences is the telling part: kept whole when not far beyond the limit
    at = re.search(r" At index \d+ diff: .*? != .*?(?= Full diff:| Use -v|$)", text)
    limit = max(MESSAGE_LIMIT, at.end() + 2 if at and at.end() <= 2 * MESSAGE_LIMIT else 0)
    if text.startswith("snapshot drift: "):  # two corners' records of the injected grid are about 330 characters
        limit = 2 * MESSAGE_LIMIT
    return plain_text.shorten(text, limit)  # never cut inside a value (a tuple pytest compared)


def _outcome(when: str, report: dict[str, Any]) -> str | None:
    outcome = report["outcome"]
    if outcome == "failed":
        return "failed" if when == "call" else "error"
    if outcome == "skipped":
        return "xfailed" if "wasxfail" in report else "skipped"
    if outcome == "passed" and when == "call":
        return "passed"
    return None


def parse(path: str | Path) -> ReportLog:
    """Read a report log.

    Args:
      path: the ``--report-log`` file of one pytest run.

    Returns:
      a :class:`ReportLog`; a missing ``SessionFinish`` line leaves
      ``exitstatus`` None (the run was killed).

    Raises:
      OSError: if the file cannot be read. A truncated last line (killed
        writer) is ignored.
    """
    log = ReportLog()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            report = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = report.get("$report_type")
        if kind == "SessionFinish":
            log.exitstatus = int(report.get("exitstatus", -1))
        elif kind == "CollectReport" and report.get("outcome") == "failed":
            log.collection_errors.append(f"{report.get('nodeid') or '<session>'}: {short_message(report)}")
        elif kind == "TestReport":
            props = dict(report.get("user_properties") or [])
            if "contract_api" not in props:
                continue
            outcome = _outcome(report["when"], report)
            if outcome is None:
                continue
            nodeid = report["nodeid"]
            current = log.contracts.get(nodeid)
            # A teardown error overrides a pass; the first failure's message wins.
            if current is None or (outcome in ("error", "failed") and current.outcome not in ("error", "failed")):
                log.contracts[nodeid] = ContractOutcome(
                    id=nodeid,
                    api=props["contract_api"],
                    guide=props["contract_guide"],
                    kind=props["contract_kind"],
                    outcome=outcome,
                    detail=short_message(report) if outcome != "passed" else "",
                    defect=props.get("contract_defect", ""),
                    configuration=props.get("contract_configuration", ""),
                )
    return log
