"""Two installed environments (sites and locks) for the same-code check."""

from __future__ import annotations

import json
from pathlib import Path

HASH = "--hash=sha256:" + "a" * 64


def fake_site(root: Path, files: dict[str, str], version: str = "0.2.6", name: str = "optax") -> Path:
    """A site-packages folder holding one distribution with ``files`` and a RECORD naming them."""
    site = root / "lib" / "python3.12" / "site-packages"
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nlong text\n")
    (info / "INSTALLER").write_text(root.name)  # the installer's records differ between installs
    (info / "direct_url.json").write_text(json.dumps({"url": f"file:///{root.name}"}))
    rows = []
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
        rows.append(f"{rel},sha256=x,{len(text)}")
    (site / name / "__pycache__").mkdir(parents=True, exist_ok=True)
    (site / name / "__pycache__" / f"alias.{root.name}.pyc").write_bytes(root.name.encode())  # bytecode: left out
    rows += [
        f"{name}/__pycache__/alias.cpython-312.pyc,,",
        f"{info.name}/METADATA,,",
        f"{info.name}/INSTALLER,,",
        f"{info.name}/direct_url.json,,",
        f"{info.name}/RECORD,,",
        f"../../../bin/{name}-tool,sha256={root.name},9",
    ]
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return site


def fake_lock(path: Path, optax_line: str, extra: str = "") -> Path:
    path.write_text(
        f"# comment\njax==0.11.2 \\\n    {HASH}\n    # via optax\n{optax_line} \\\n    "
        f"{HASH.replace('a', 'b')}\n{extra}"
    )
    return path


INPUTS = {"format": "results-v1", "lock_sha256": "1", "files_sha256": "f", "python": "3.12.3", "environment": {}}


def lock_entry_end(text: str, start: int) -> int:
    """Where the lock entry that begins at ``start`` ends (its last continued line's newline)."""
    end = text.index("\n", start)
    while text[end - 1] == "\\":
        end = text.index("\n", end + 1)
    return end
