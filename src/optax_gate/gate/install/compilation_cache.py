"""JAX's persistent compilation cache, one folder shared by every environment of a gate.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path
from typing import Any

#: Set to ``0`` to turn the cache off everywhere.
SWITCH = "OPTAX_GATE_COMPILATION_CACHE"
FOLDER = "jax-compilation-cache"


def enabled(flag: bool = True) -> bool:
    """The cache is on unless ``flag`` is False or ``$OPTAX_GATE_COMPILATION_CACHE`` is ``0``."""
    return flag and os.environ.get(SWITCH, "1") != "0"


#: Megabytes the shared cache may hold after :func:`prune` (``$OPTAX_GATE_COMPILATION_CACHE_MB``).
SIZE_SWITCH, DEFAULT_MB = "OPTAX_GATE_COMPILATION_CACHE_MB", 2048


def shared(cache_dir: Path | None, envs_dir: Path) -> Path:
    """The folder that holds the shared cache folder: the gate's cache folder (``--cache-dir``), or the
    environments' folder when there is none."""
    return Path(cache_dir) if cache_dir is not None else Path(envs_dir)


def environment(parent: Path, on: bool = True) -> dict[str, str]:
    """Environment variables for a process that compiles with the cache in ``parent``/:data:`FOLDER`
    (:func:`shared`; JAX reads its configuration from ``JAX_*`` variables at import)."""
    if not enabled(on):
        return {"JAX_ENABLE_COMPILATION_CACHE": "false", "JAX_COMPILATION_CACHE_DIR": ""}
    return {
        "JAX_ENABLE_COMPILATION_CACHE": "true",
        "JAX_COMPILATION_CACHE_DIR": str(Path(parent).absolute() / FOLDER),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }


#: Warnings JAX raises about its persistent compilation cache (jax 0.11.2,
#: ``jax._src.compiler``: ``_cache_read``, ``_is_executable_in_cache``,
#: ``_cache_write``; ``jax._src.lru_cache``: an entry over the size limit).
OWN_WARNINGS = re.compile(
    r"^(?:Error (?:reading|writing) persistent compilation cache entry|"
    r"Persistent compilation cache inconsistency|Cache value for key .* exceeds the maximum cache size)"
)
#: JAX's file names of one cache entry (``jax._src.lru_cache``): the compressed
#: executable and its access time.
ENTRY, ATIME = "-cache", "-atime"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def is_own_warning(warning: dict[str, Any]) -> bool:
    """Whether a warning record (``{"category", "message", ...}``) is JAX's
    about the gate's compilation cache (:data:`OWN_WARNINGS`)."""
    return bool(OWN_WARNINGS.match(str(warning.get("message") or "")))


def _whole(data: bytes) -> bool:
    """Whether a cache entry's bytes are one complete compressed stream: zlib
    (JAX's choice without zstandard, Python 3.12) decompresses to its end;
    a zstd frame (``_ZSTD_MAGIC``, not readable without zstandard) counts as
    whole unless empty."""
    if data.startswith(_ZSTD_MAGIC):
        return len(data) > len(_ZSTD_MAGIC)
    d = zlib.decompressobj()
    try:
        while data:
            d.decompress(data, 1 << 20)  # bounded output per step: an entry is tens of MB at most
            data = d.unconsumed_tail
    except zlib.error:
        return False
    return d.eof


def _remove(entry: Path) -> None:
    """Delete one cache entry and its access-time file."""
    entry.unlink(missing_ok=True)
    entry.with_name(entry.name[: -len(ENTRY)] + ATIME).unlink(missing_ok=True)


def discard_corrupt(folder: Path | str | None) -> list[str]:
    """Delete the entries of the cache in ``folder`` that are not whole
    (:func:`_whole`) with their access-time files; the next run compiles those
    programs again and writes them whole. Returns the names discarded (none
    when ``folder`` is empty, None or absent).

    Deleting is safe while no process of the environment runs: the runner
    calls it after the side's pytest processes have exited."""
    if not folder or not Path(folder).is_dir():
        return []
    gone = []
    for entry in sorted(Path(folder).glob(f"*{ENTRY}")):
        try:
            whole = _whole(entry.read_bytes())
        except OSError:
            continue
        if not whole:
            _remove(entry)
            gone.append(entry.name)
    return gone


def limit() -> int:
    """The bound of :func:`prune` in bytes (``$OPTAX_GATE_COMPILATION_CACHE_MB``; a value that is not a
    whole number of megabytes is the default's)."""
    try:
        mb = int(os.environ.get(SIZE_SWITCH, DEFAULT_MB))
    except ValueError:
        mb = DEFAULT_MB
    return max(mb, 0) * 1024 * 1024


def prune(parent: Path, max_bytes: int | None = None) -> tuple[int, int]:
    """Bound the cache in ``parent``/:data:`FOLDER`: delete the entries written longest ago (with their
    access-time files) until the rest holds at most ``max_bytes`` (default :func:`limit`). Returns
    (entries deleted, bytes left). Call it while no process reads the cache (a gate's start)."""
    folder = Path(parent) / FOLDER
    if not folder.is_dir():
        return 0, 0
    bound = limit() if max_bytes is None else max_bytes
    entries = []
    for entry in folder.glob(f"*{ENTRY}"):
        try:
            st = entry.stat()
        except OSError:
            continue
        entries.append((st.st_mtime, st.st_size, entry))
    total = sum(size for _, size, _ in entries)
    gone = 0
    for _, size, entry in sorted(entries, key=lambda e: (e[0], e[2].name)):
        if total <= bound:
            break
        _remove(entry)
        total -= size
        gone += 1
    return gone, total
