"""The matrix grid renders in a real headless browser (Debian's chromium).

Skipped, with the reason, where chromium is not installed
(``apt-get install chromium``); nothing it produces is kept.
"""

import re
import shutil
import subprocess

import pytest

from optax_gate.gate import report_matrix
from tests.meta.test_matrix import merged

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


def test_grid_parses_and_paints(tmp_path):
    report = merged()
    page = tmp_path / "report.html"
    page.write_text(report_matrix.html_grid(report))
    common = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    # The browser's own DOM: one header row plus one row per contract, one cell per environment.
    assert len(re.findall(r"<tr>", dom)) == 1 + len(report["contracts"])
    assert len(re.findall(r"<td ", dom)) == len(report["contracts"]) * len(report["environments"])
    shot = tmp_path / "grid.png"
    subprocess.run([*common, f"--screenshot={shot}", "--window-size=1280,600", page.as_uri()],
                   capture_output=True, timeout=120, check=False)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
