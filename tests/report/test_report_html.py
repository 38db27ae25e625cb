"""``skcalib report --html``: one self-contained page, checked in a real
headless browser when Chromium is installed (``.ci/run`` installs Debian's
``chromium`` package)."""

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from skcalib._report.cli import main

pytest.importorskip("matplotlib")

#: Appended to a copy of the page: after the load event, writes what it found
#: into the DOM, which ``--dump-dom`` prints.
CHECK_SCRIPT = """
<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(String(e.message)));
window.addEventListener("load", () => {
  const imgs = Array.from(document.images);
  const broken = imgs.filter(i => !(i.complete && i.naturalWidth > 0));
  const p = document.createElement("p");
  p.id = "skcalib-check";
  p.textContent = `images=${imgs.length} broken=${broken.length} ` +
                  `errors=${window.__errors.length}`;
  document.body.appendChild(p);
});
</script>
"""


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


def _flags(profile):
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # nothing from the network
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
    ]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("html")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 400)
    logits = rng.normal(size=(400, 3))
    logits[np.arange(400), y] += 1.5
    np.savez(tmp / "preds.npz", labels=y, logits=2 * logits)
    path = tmp / "report.html"
    code = main(
        [
            "report",
            str(tmp / "preds.npz"),
            "--methods",
            "temperature,histogram_binning",
            "--cv",
            "2",
            "--quiet",
            "--html",
            str(path),
        ]
    )
    assert code == 0
    return path


def test_page_is_self_contained_and_complete(page):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<script" not in text and "@import" not in text
    images = re.findall(
        r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text
    )
    assert len(images) >= 2  # uncalibrated and the best calibrator(s)
    for item in ("400", "0, 1, 2", "logit", "Recommendation", "uncalibrated"):
        assert item in text
    assert "temperature" in text and "histogram_binning" in text


def test_page_in_a_headless_browser(page, tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip(
            "Chromium is not installed (Debian: apt-get install -y chromium); "
            "the page was not opened in a browser"
        )
    checked = tmp_path / "checked.html"
    checked.write_text(
        page.read_text(encoding="utf-8").replace("</body>", CHECK_SCRIPT + "</body>"),
        encoding="utf-8",
    )
    res = subprocess.run(
        [chromium, *_flags(tmp_path / "profile"), "--dump-dom", checked.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    found = re.search(r'id="skcalib-check">([^<]*)<', res.stdout)
    assert found, res.stdout[-2000:]
    counts = dict(item.split("=") for item in found.group(1).split())
    assert int(counts["images"]) >= 2
    assert counts["broken"] == "0" and counts["errors"] == "0", found.group(1)
    console_errors = [
        line
        for line in res.stderr.splitlines()
        if "CONSOLE" in line and "ERROR" in line
    ]
    assert not console_errors, console_errors
    # and the page as a user gets it, without the check script
    shot = tmp_path / "page.png"
    subprocess.run(
        [
            chromium,
            *_flags(tmp_path / "profile2"),
            "--window-size=1100,1800",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000
    if os.environ.get("SKCALIB_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["SKCALIB_KEEP_SCREENSHOT"])
