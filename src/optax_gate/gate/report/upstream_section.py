"""The report's "Upstream tests, cross-run" section and its findings' lines (``--upstream-tests``)."""

from __future__ import annotations

from optax_gate.gate.base import model
from optax_gate.gate.base.plain_text import shorten
from optax_gate.gate.upstream.failures import INFRA, KIND_WORDS, OTHERS


def finding_line(finding: model.Finding) -> str:
    """The Markdown line of a cross-run finding, numbered."""
    return (
        f"{finding['number']}. **{finding['change']}** {finding['text']} (every one of its upstream tests is in "
        "report.json's `upstream_tests`; how the cross-run ran: [upstream tests, "
        "cross-run](#upstream-tests-cross-run) below)"
    )


def _control_words(control: model.UpstreamControl | None) -> str:
    if not control or not (control["tests"] or control["files"]):
        return ""
    return (
        f"; control run in the tests' own environment ({control['seconds']:.0f} s): {control['tests']} "
        "failing tests re-run, "
        f"{control['files']} test files that did not import there, only collected"
    )


def _split_words(split: model.UpstreamSplit | None) -> str:
    if not split or not split["tests"]:
        return ""
    return (
        f"; split by cause ({split['seconds']:.0f} s): {split['tests']} test runs with one side's optax on "
        "the other's packages" + (f" ({split['error']})" if split["error"] else "")
    )


def markdown(report: model.Report) -> list[str]:
    """The report's "Upstream tests, cross-run" section (nothing without ``--upstream-tests``):
    per direction the counts and time, the overlay, the failures that could not be told and those
    that move with the other packages, not with optax."""
    section = report.get("upstream_tests")
    if not section:
        return []
    out = [
        "",
        "## Upstream tests, cross-run",
        "",
        f"{len(section['changed_modules'])} optax modules differ; their shipped tests ran across in "
        f"{section['seconds']:.0f} s. "
        "Findings from here are listed with the others and do not change the verdict.",
        "",
    ]
    if section.get("other_packages"):
        out += [
            f"Besides optax, {len(section['other_packages'])} distributions differ "
            f"({', '.join(section['other_packages'][:5])}"
            + (" …" if len(section["other_packages"]) > 5 else "")
            + "): a failure that the candidate's optax alone leaves as in the baseline, and its other packages "
            "alone move, "
            "is listed under its direction as not optax, never as an optax finding.",
            "",
        ]
    for d in section["directions"]:
        kinds: dict[str, int] = {}
        for f in d["failures"]:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
        out.append(
            f"- {d['label']}: {len(d['files'])} test files, {d['ran']} tests run, {d['failed']} failed "
            f"({', '.join(f'{n} {KIND_WORDS.get(k, k)}' for k, n in sorted(kinds.items())) or 'none'}), "
            f"{d['seconds']:.0f} s"
            + (
                f"; test dependencies the environment lacks, run from an overlay: {', '.join(d['overlay'])}"
                if d["overlay"]
                else ""
            )
            + _control_words(d.get("control"))
            + _split_words(d.get("split"))
        )
        unimported = [f for f in d["failures"] if "::" not in f["test"] and f["kind"] != INFRA]
        for f in unimported[:20]:  # a file that failed to collect: none of its tests ran across
            out.append(
                f"  - did not run: `{f['test']}` does not import there ({shorten(f['text'], 100)}), so none "
                "of its tests ran"
            )
        unknown = [f for f in d["failures"] if f["kind"] == INFRA]
        for f in unknown[:20]:
            out.append(f"  - could not tell `{f['test']}`: {f['subject']} ({shorten(f['text'], 100)})")
        if len(unknown) > 20:
            out.append(f"  - … and {len(unknown) - 20} more (report.json)")
        elsewhere = [f for f in d["failures"] if f["kind"] == OTHERS]
        for f in elsewhere[:20]:
            out.append(f"  - not optax: `{f['test']}` {f['subject']} ({shorten(f['text'], 100)})")
        if len(elsewhere) > 20:
            out.append(f"  - … and {len(elsewhere) - 20} more that move with the other packages (report.json)")
    return out
