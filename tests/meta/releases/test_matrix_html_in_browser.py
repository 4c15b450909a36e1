"""The matrix grid renders in a real headless browser (Debian's ``chromium``).

The page is the matrix around the real optax 0.2.8 rows
(``tests.meta.support.matrix_fakes.real_matrix``: optax-0.2.8 differs, optax-0.2.7 did
not import, jax-0.12.0.1 passes). The browser's own DOM must hold the API grid
(one row per API, one column-wide cell for the environment that did not run,
every ``<details>`` closed), and its screenshots must show it painted: the
red of a broken cell, and the grey of the not-run cell spanning the grid's
height. A second screenshot has every ``<details>`` opened.

Where chromium is missing the test is skipped, unless
``OPTAX_GATE_REQUIRE_BROWSER=1`` (``.ci/run`` sets it after installing
chromium), where it fails: CI never passes without having looked. The
screenshots are written to ``tmp_path``, and copied to
``$OPTAX_GATE_SCREENSHOTS`` when that is set (to look at them).
"""

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.report import matrix_page as report_matrix
from tests.meta.support.matrix_fakes import real_matrix

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--hide-scrollbars",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REQUIRED = os.environ.get("OPTAX_GATE_REQUIRE_BROWSER") == "1"


@pytest.fixture
def browser(tmp_path: Path) -> Any:
    if CHROMIUM is None:
        if REQUIRED:
            pytest.fail(
                "chromium is not installed, and OPTAX_GATE_REQUIRE_BROWSER=1 requires the browser check "
                "(apt-get install -y chromium)"
            )
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]


def read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit, non-interlaced RGB or
    RGBA PNG (what chromium writes); enough to look at colours."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 4 if colour == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        rows.append(bytes(v for x in range(width) for v in line[x * channels : x * channels + 3]))
    return width, height, rows


def rows_with(rows: list[bytes], colour: str) -> list[int]:
    """Indices of the pixel rows where ``colour`` (``#rrggbb``) fills at least 20 pixels in a run."""
    rgb = bytes.fromhex(colour[1:])
    return [y for y, row in enumerate(rows) if rgb * 20 in row]


def shoot(browser: Any, page: Path, shot: Path, size: str) -> bytes:
    subprocess.run(
        [*browser, f"--screenshot={shot}", f"--window-size={size}", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert shot.exists(), f"chromium wrote no screenshot {shot.name}"
    if os.environ.get("OPTAX_GATE_SCREENSHOTS"):
        keep = Path(os.environ["OPTAX_GATE_SCREENSHOTS"])
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, keep / shot.name)
    return shot.read_bytes()


def test_grid_opens_on_one_row_per_api_and_paints(browser: Any, tmp_path: Path) -> None:
    report = real_matrix()
    n_apis = len(report["apis"])
    page = tmp_path / "report.html"
    page.write_text(report_matrix.html_grid(report))
    dom = subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    # The browser's own DOM: the grid is a header row plus one row per API ...
    grid = dom[dom.index('<table class="grid">') : dom.index("</table>")]
    assert len(re.findall(r"<tr[ >]", grid)) == 1 + n_apis
    # ... with the environment that did not run as one cell spanning every API row, its reason in it ...
    assert re.findall(r'<td class="not-run" rowspan="(\d+)"', grid) == [str(n_apis)]
    assert "jax_pmap_shmap_merge" in grid and ">gone<" not in grid
    # ... and nothing expanded until asked: every <details> closed.
    differing_cells = sum(
        1 for a in report["apis"] for c in a["cells"].values() if c["worst"] not in ("unchanged", "gone")
    )
    assert differing_cells == 3  # MultiSteps, add_decayed_weights, inject_hyperparams in optax-0.2.8
    assert dom.count("<details") == n_apis + differing_cells and "<details open" not in dom

    width, height, rows = read_png(shoot(browser, page, tmp_path / "matrix-grid.png", "1280,720"))
    assert (width, height) == (1280, 720)
    red = rows_with(rows, report_matrix.COLOURS["broken"])
    grey = rows_with(rows, report_matrix.NOT_RUN)
    assert red, "no broken cell painted on the first screen"
    assert grey and grey[-1] - grey[0] > 20 * n_apis, "the not-run cell does not span the grid"
    assert grey[-1] < height - 1, "the grid does not fit on the first screen"

    opened = tmp_path / "report-open.html"
    opened.write_text(page.read_text().replace("<details", "<details open"))
    width, height, rows = read_png(shoot(browser, opened, tmp_path / "matrix-expanded.png", "1280,2400"))
    assert rows_with(rows, report_matrix.COLOURS["broken"]) and rows_with(rows, report_matrix.COLOURS["fixed"])
