"""Candidate requirement sets: the baseline's direct requirements with the
named packages replaced.

``requirements.in`` lists the baseline's direct requirements (one per line,
``name==version`` or bare ``name``). A candidate replaces the lines of the
packages it names and adds the others; the candidate lock is then compiled
with the baseline lock as preferences, so every package the candidate does not
name keeps its baseline version unless the resolver must move it.

A team's own baseline lock (``--baseline-lock``) may pin other versions than
``requirements.in`` does (jax 0.12.0.1 against ``jax==0.11.2``): an exact pin
there that the baseline lock contradicts takes the lock's version
(:func:`replace_held`), else a candidate naming only optax would move jax
backwards.
"""

from __future__ import annotations

import re

#: Packages a gate without arguments moves to their newest release.
NEWEST_DEFAULT = ("optax", "jax", "jaxlib", "flax")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical_name(spec: str) -> str:
    """PEP 503 normalised project name of a requirement ``spec``.

    Raises:
      ValueError: if ``spec`` does not start with a project name.
    """
    m = _NAME.match(spec)
    if not m:
        raise ValueError(f"not a requirement: {spec!r}")
    return re.sub(r"[-_.]+", "-", m.group(1)).lower()


def replace(requirements_in: str, specs: list[str]) -> str:
    """``requirements_in`` text with each spec's package line replaced by the spec.

    Comments and blank lines are dropped; specs for packages absent from the
    baseline are appended.

    Raises:
      ValueError: on a spec without a project name, or two specs naming the
        same project.
    """
    by_name: dict[str, str] = {}
    for spec in specs:
        name = canonical_name(spec)
        if name in by_name:
            raise ValueError(f"{name} named twice: {by_name[name]!r} and {spec!r}")
        by_name[name] = spec.strip()
    lines, seen = [], set()
    for raw in requirements_in.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name = canonical_name(line)
        seen.add(name)
        lines.append(by_name.get(name, line))
    lines += [spec for name, spec in by_name.items() if name not in seen]
    return "\n".join(lines) + "\n"


_EXACT = re.compile(r"^\s*[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?\s*==\s*([^\s;]+)\s*$")


def replace_held(requirements_in: str, specs: list[str], pins: dict[str, str]) -> tuple[str, list[str]]:
    """:func:`replace`, with each exact pin (``name==X``) that the specs do not
    name and the baseline lock's ``pins`` (canonical name -> version) contradict
    set to the lock's version; returns the text and the moves in words
    (``"jax==0.11.2 → jax==0.12.0.1 (the baseline lock's)"``).

    Raises:
      ValueError: as :func:`replace`.
    """
    named = {canonical_name(spec) for spec in specs}
    lines, moved = [], []
    for raw in requirements_in.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, m = canonical_name(line), _EXACT.match(line)
            if m and name not in named and name in pins and pins[name] != m.group(1):
                moved.append(f"{line} → {name}=={pins[name]} (the baseline lock's)")
                line = f"{name}=={pins[name]}"
        lines.append(line)
    return replace("\n".join(lines) + "\n", specs), moved
