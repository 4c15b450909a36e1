"""The report's "Upstream tests, cross-run" section and its findings' lines (``--upstream-tests``)."""

from __future__ import annotations

from collections.abc import Mapping

from typing import Any

from optax_gate.gate.base.plain_text import shorten
from optax_gate.gate.upstream.failures import INFRA


def finding_line(finding: dict[str, Any]) -> str:
    """The Markdown line of a cross-run finding, numbered."""
    return f"{finding['number']}. **{finding['change']}** {finding['text']} (see [upstream tests, cross-run](#upstream-tests-cross-run) below)"


def _control_words(control: dict[str, Any] | None) -> str:
    if not control or not (control["tests"] or control["files"]):
        return ""
    return (
        f"; control run in the tests' own environment ({control['seconds']:.0f} s): {control['tests']} failing tests re-run, "
        f"{control['files']} files that failed to collect collected only"
    )


def markdown(report: Mapping[str, Any]) -> list[str]:
    """The report's "Upstream tests, cross-run" section (nothing without ``--upstream-tests``):
    per direction the counts and time, the overlay, and the failures that could not be told."""
    section = report.get("upstream_tests")
    if not section:
        return []
    out = [
        "",
        "## Upstream tests, cross-run",
        "",
        f"{len(section['changed_modules'])} optax modules differ; their shipped tests ran across in {section['seconds']:.0f} s. "
        "Findings from here are listed with the others and do not change the verdict.",
        "",
    ]
    for d in section["directions"]:
        kinds: dict[str, int] = {}
        for f in d["failures"]:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
        out.append(
            f"- {d['label']}: {len(d['files'])} test files, {d['ran']} tests run, {d['failed']} failed "
            f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items())) or 'none'}), {d['seconds']:.0f} s"
            + (f"; test dependencies the environment lacks, run from an overlay: {', '.join(d['overlay'])}" if d["overlay"] else "")
            + _control_words(d.get("control"))
        )
        unknown = [f for f in d["failures"] if f["kind"] == INFRA]
        for f in unknown[:20]:
            out.append(f"  - could not tell `{f['test']}`: {f['subject']} ({shorten(f['text'], 100)})")
        if len(unknown) > 20:
            out.append(f"  - … and {len(unknown) - 20} more (report.json)")
    return out
