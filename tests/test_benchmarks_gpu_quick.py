"""``python -m benchmarks.bench_gpu --quick`` runs end to end on the CPU.

Run as a subprocess from the repository root (SciPy must see
``SCIPY_ARRAY_API=1`` when it is first imported, which the script sets),
writing to a temporary folder; the test checks the exit status, that the
report names the device ("no GPU" here), every measure and its numpy and
torch timings, and that numpy and torch agree on the values they computed.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not (ROOT / "benchmarks" / "bench_gpu.py").exists(),
    reason="benchmarks/ not in this checkout",
)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from _xp import dispatch_reason, import_namespace

    if reason := dispatch_reason():  # e.g. the oldest declared versions
        pytest.skip(reason)
    torch = import_namespace("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the quick run would use it (device_check.sh)")
    out = tmp_path_factory.mktemp("gpu")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SCIPY_ARRAY_API", None)  # the script sets it itself
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_gpu", "--quick", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout, (out / "gpu.md").read_text()


def _row(text, label):
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| {label} |"))
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def test_report_names_the_device_and_every_measure(report):
    stdout, text = report
    assert text.startswith("# numpy on the CPU against torch on the device")
    assert "no GPU: torch-CPU only" in stdout
    assert "- device: no GPU: torch-CPU only" in text
    assert "SCIPY_ARRAY_API=1" in text
    for section in ("## Same rows", "## ECE memory bandwidth", "## Targets"):
        assert section in text
    # a CPU run has no full-size device table and checks no GPU target
    assert "## Full size on the device" not in text
    assert "targets of issue 18" in text
    for label in ("temperature fit", "ECE", "vector scaling fit"):
        assert f"- {label}: `" in text
        row = _row(text, label)
        # numpy and torch times are numbers (an error would be its message)
        float(row[2]), float(row[3])
        assert row[5] == "3, 3"


def test_numpy_and_torch_agree(report):
    _, text = report
    tolerances = {"temperature fit": 1e-4, "ECE": 1e-5, "vector scaling fit": 1e-3}
    for label, tol in tolerances.items():
        agreement = _row(text, label)[6]
        diff = float(re.search(r"([0-9.]+e[-+][0-9]+)$", agreement).group(1))
        assert diff <= tol, (label, agreement)


def test_bandwidth_is_bytes_read_over_time(report):
    _, text = report
    n, k = 200_000, 10  # the quick ECE size
    header = next(ln for ln in text.splitlines() if "## ECE memory bandwidth" in ln)
    assert "2e5 x 10" in header and f"{(n * k * 4 + n * 8) / 1e9:.2f} GB" in header
    row = _row(text, "ECE")
    bw_row = next(
        [c.strip() for c in ln.strip("|").split(" | ")]
        for ln in text.split("## ECE memory bandwidth")[1].splitlines()
        if ln.startswith("| ECE |")
    )
    assert row[3] == bw_row[1]  # the same ECE run, timed once
    seconds, gbs = float(bw_row[1]), float(bw_row[2])
    assert gbs == pytest.approx((n * k * 4 + n * 8) / seconds / 1e9, rel=1e-2)
    assert "Peak: not known" in text
