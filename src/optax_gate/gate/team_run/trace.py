"""The recorder's trace files read back: the observations of a run in execution order (``read``), and the events
apart from the calls that other modules read (``tagged_events``)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def tagged_events(folder: Path, tag: str) -> Iterator[dict[str, Any]]:
    """The events of the trace files in ``folder`` that carry ``tag`` (``"isolated"``, ``"memory"``: events apart
    from the calls, read by their own modules), in file order; a line that is not JSON is skipped."""
    for path in sorted(Path(folder).glob("trace-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if f'"{tag}"' not in line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict) and tag in event:
                yield event


def read(folder: Path) -> list[dict[str, Any]]:
    """The observations of the trace files in ``folder`` (one per process,
    ordered by process start), in execution order. Each is ``{"site", "api",
    "call", "phase", "args", "warnings", "exception", "in", "out", "order"}``.
    Host-callback values of one compiled program arrive together: within a
    run of consecutive ``run`` observations they are ordered by occurrence,
    then by the order their calls were traced in (the program's order; the
    callbacks are unordered effects), then by the device that ran them
    (``shard_map``, ``pmap``: one callback per device, in any order).

    Raises:
      ValueError: a trace file is not the recorder's (bad JSON, no header).
    """
    files = []
    for path in sorted(Path(folder).glob("trace-*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        try:
            header = json.loads(lines[0]) if lines else {}
            events = [json.loads(line) for line in lines[1:] if line.strip()]
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path.name} is not a trace: {exc}") from None
        if "trace" not in header:
            raise ValueError(f"{path.name} has no trace header")
        files.append((header.get("start", 0.0), path.name, events))
    observations: list[dict[str, Any]] = []
    for process, (_, _, events) in enumerate(sorted(files)):
        by_seq = {
            e["seq"]: e
            for e in events
            if "of" not in e and "replay" not in e and "isolated" not in e and "memory" not in e
        }
        block: list[dict[str, Any]] = []
        seen: Counter[tuple[int, int]] = Counter()

        def flush(block: list[dict[str, Any]] = block, seen: Counter[tuple[int, int]] = seen) -> None:
            block.sort(key=lambda o: o["order"])
            observations.extend(block)
            block.clear()
            seen.clear()

        for event in events:
            if (
                "replay" in event or "isolated" in event or "memory" in event
            ):  # read by birth.read_replays, isolated.read, memory.read
                continue
            if "of" in event:
                traced = by_seq.get(event["of"])
                if traced is None:
                    continue
                device = event.get("device", -1)  # shard_map / pmap: one callback per device, in any order
                seen[(event["of"], device)] += 1
                out = dict(traced.get("out") or {})
                out["leaves"] = _merge(out.get("leaves") or [], event.get("out") or [])
                block.append(
                    {
                        "site": traced["site"],
                        "api": traced["api"],
                        "call": traced["call"],
                        "phase": "run",
                        **({"via": traced["via"]} if traced.get("via") else {}),
                        **({"through": traced["through"]} if traced.get("through") else {}),
                        "args": None,
                        "warnings": [],
                        "exception": None,
                        "in": event.get("in") or [],
                        "out": out,
                        "order": (process, seen[(event["of"], device)], event["of"], device, event["seq"]),
                    }
                )
                continue
            flush()
            observations.append(
                {
                    "site": event["site"],
                    "api": event["api"],
                    "call": event["call"],
                    **({"via": event["via"]} if event.get("via") else {}),
                    **({"through": event["through"]} if event.get("through") else {}),
                    "phase": "trace" if event.get("traced") else "call",
                    "args": event.get("args"),
                    "warnings": event.get("warnings") or [],
                    "exception": event.get("exception"),
                    "in": event.get("in") or [],
                    "out": None if event.get("traced") else event.get("out"),
                    "record_error": event.get("record_error"),
                    "order": (process, event["seq"]),
                }
            )
        flush()
    return observations


def _merge(abstract: list[dict[str, Any]], stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The traced result's leaves with the callback's values in place of its array leaves."""
    out, it = [], iter(stored)
    for leaf in abstract:
        out.append(next(it, leaf) if "dtype" in leaf else leaf)
    return out
