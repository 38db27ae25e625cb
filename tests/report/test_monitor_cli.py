"""``skcalib monitor FILE``: a predictions log read in chunks, one pass."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from _cli_helpers import run_cli
from _logs import direct, looks_of, make_log, minutes, read_back, write_log

from skcalib._report import stream


@pytest.fixture
def small_head(monkeypatch):
    """The first 100 rows decide the layout (10 000 by default), so that
    small files are read in many chunks."""
    monkeypatch.setattr(stream, "HEAD_ROWS", 100)


def monitor(capsys, *args):
    return run_cli(capsys, "monitor", *args)


def json_lines(out):
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture
def drift_log(tmp_path):
    y, p = make_log(3000, drift_at=1500, temperature=2.0)
    return write_log(tmp_path / "drift.csv", y, p, minutes(3000))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_chunked_output_equals_one_shot(capsys, small_head, drift_log, fmt):
    outputs = {}
    for spec in ("500", "2h"):
        for chunk in (7, 1000, 10**6):
            code, out, err = monitor(
                capsys,
                drift_log,
                "--time-col",
                "time",
                "--window",
                spec,
                "--chunk-rows",
                chunk,
                "--look-rows",
                200,
                "--format",
                fmt,
            )
            assert code == 0, err
            outputs[spec, chunk] = out
        assert outputs[spec, 7] == outputs[spec, 1000] == outputs[spec, 10**6]
    assert "window" in outputs["500", 7]


def test_windows_equal_the_report_and_the_monitor_fed_directly(
    capsys, small_head, drift_log
):
    code, out, err = monitor(
        capsys,
        drift_log,
        "--time-col",
        "time",
        "--window",
        "2h",
        "--chunk-rows",
        64,
        "--look-rows",
        50,
        "--format",
        "json",
    )
    assert code == 0, err
    lines = json_lines(out)
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "summary"
    windows = [o for o in lines if o["type"] == "window"]
    code, rep, err = run_cli(
        capsys,
        "report",
        drift_log,
        "--time-col",
        "time",
        "--window",
        "2h",
        "--look-rows",
        50,
        "--methods",
        "temperature",
        "--cv",
        2,
        "--quiet",
        "--format",
        "json",
    )
    assert code == 0, err
    report = json.loads(rep)["monitor"]
    assert [{**w, "type": None} for w in windows] == [
        {**r, "type": None} for r in report["rows"]
    ]
    assert (
        lines[-1]["alarm"] == report["alarm"]
        and lines[-1]["e_value"] == report["e_value"]
    )
    # and both are CalibrationMonitor fed the looks directly
    y, p = read_back(drift_log, 10)
    keys = minutes(3000).astype("datetime64[ns]").astype(np.int64) // (2 * 3600 * 10**9)
    mon, _ = direct(y, p, looks_of(keys, 50), "2h", times=minutes(3000))
    want = mon.windows()
    assert [w["n"] for w in windows] == [r["n"] for r in want] == [120] * 25
    for got, exp in zip(windows, want, strict=True):
        for key in ("ece", "ece_low", "ece_high", "brier", "nll", "accuracy"):
            assert got[key] == pytest.approx(exp[key], rel=1e-12, abs=1e-15)
    alarm = next(o for o in lines if o["type"] == "alarm")
    assert alarm["rows"] == mon.alarm_sample_ and alarm["look"] == mon.alarm_ + 1
    assert mon.alarm_sample_ > 1500  # after the jump, not before


def test_alarm_on_drift_and_none_on_a_calibrated_log(capsys, tmp_path, drift_log):
    code, out, _ = monitor(capsys, drift_log, "--window", "500", "--time-col", "time")
    assert code == 0
    lines = out.splitlines()
    alarm = next(
        i for i, ln in enumerate(lines) if ln.startswith("ALARM at alpha=0.05")
    )
    # printed as it happens: after the windows up to it, before the last line
    table = [i for i, ln in enumerate(lines) if ln[:1].isdigit()]
    assert table[0] < alarm < len(lines) - 1
    # temperature 1 -> 2 at row 1500 (window 3): flagged in window 3, 4 or 5
    assert re.search(r"in window [345]: ", lines[alarm]), lines[alarm]
    assert "under-confident" in lines[alarm]
    assert lines[-1].startswith("end: 3000 rows in 6 looks")
    y, p = make_log(3000)
    calm = write_log(tmp_path / "calm.csv", y, p)
    code, out, _ = monitor(capsys, calm, "--window", "500")
    assert code == 0
    assert "ALARM" not in out and "no alarm at alpha=0.05" in out
    assert [ln.split()[0] for ln in out.splitlines() if ln[:1].isdigit()] == list(
        "012345"
    )


def test_out_of_order_timestamps_name_the_line(capsys, small_head, tmp_path):
    y, p = make_log(400, k=3)
    t = minutes(400)
    t[[249, 250]] = t[[250, 249]]
    path = write_log(tmp_path / "swap.csv", y, p, t)
    for chunk in (7, 50, 1000):  # inside a chunk, across two chunks
        code, out, err = monitor(
            capsys, path, "--time-col", "time", "--chunk-rows", chunk
        )
        assert code == 1
        assert "line 252: timestamp 2024-01-01T04:09:00 comes before" in err, err


def test_empty_windows(capsys, small_head, tmp_path):
    y, p = make_log(400, k=3)
    t = minutes(400)
    t[200:] += np.timedelta64(3, "h")  # two empty hours
    t[300:] += np.timedelta64(10, "h")  # then ten
    path = write_log(tmp_path / "gaps.csv", y, p, t)
    code, out, err = monitor(
        capsys,
        path,
        "--time-col",
        "time",
        "--window",
        "1h",
        "--chunk-rows",
        30,
        "--format",
        "json",
    )
    assert code == 0, err
    objs = json_lines(out)[1:-1]
    shown = [
        (o["type"], o.get("n", o.get("count"))) for o in objs if o["type"] != "alarm"
    ]
    assert shown == [
        ("window", 60),
        ("window", 60),
        ("window", 60),
        ("window", 20),
        ("window", 0),
        ("window", 0),
        ("window", 40),
        ("window", 60),
        ("empty_windows", 10),
        ("window", 60),
        ("window", 40),
    ]
    empty = objs[4]
    assert empty["start"] == "2024-01-01T04:00:00" and empty["ece"] is None
    gap = next(o for o in objs if o["type"] == "empty_windows")
    assert gap["start"] == "2024-01-01T08:00:00" and gap["end"] == "2024-01-01T18:00:00"
    code, out, _ = monitor(capsys, path, "--time-col", "time", "--window", "1h")
    assert "windows " in out and "no rows (10 empty windows" in out
    assert any(
        ln.split()[3:5] == ["0", "-"] for ln in out.splitlines() if ln[:1].isdigit()
    )


@pytest.mark.parametrize("spec", ["5x", "0", "1.5h", "-1"])
def test_bad_window_is_a_usage_error(capsys, drift_log, spec):
    code, _, err = monitor(capsys, drift_log, "--window", spec)
    assert code == 2 and "--window" in err


def test_duration_needs_time_col(capsys, drift_log):
    code, _, err = monitor(capsys, drift_log, "--window", "6h")
    assert code == 2 and "pass --time-col" in err


def test_a_later_row_that_is_not_a_probability(capsys, small_head, tmp_path):
    y, p = make_log(300, k=3)
    path = write_log(tmp_path / "bad.csv", y, p)
    lines = path.read_text().splitlines()
    lines[151] = "1,0.5,0.9,0.1"  # data row 150: sums to 1.5
    path.write_text("\n".join(lines) + "\n")
    code, _, err = monitor(capsys, path, "--chunk-rows", 40)
    assert code == 1
    assert "line 152" in err and "--score-type logit" in err


def test_a_class_the_first_rows_miss(capsys, small_head, tmp_path):
    y, p = make_log(300, k=3)
    y[:150] = np.minimum(y[:150], 1)  # class 2 only after the first rows
    path = write_log(tmp_path / "late.csv", y, p)
    code, _, err = monitor(capsys, path)
    assert code == 1
    assert "'p_2' looks like the score of a class" in err and "--classes" in err
    code, out, err = monitor(capsys, path, "--classes", "0,1,2")
    assert code == 0, err
    # a label that the first rows do not hold, without a column for it
    y, p = make_log(300, k=2)
    y[250] = 2
    path = write_log(tmp_path / "new.csv", y, p)
    code, _, err = monitor(capsys, path, "--chunk-rows", 64)
    assert code == 1
    assert "line 252: label 2 is not among the classes [0, 1]" in err


def test_logits_and_one_binary_column(capsys, small_head, tmp_path):
    rng = np.random.default_rng(1)
    s = rng.normal(size=400) * 3
    y = (rng.uniform(size=400) < 1 / (1 + np.exp(-s))).astype(int)
    path = tmp_path / "bin.csv"
    path.write_text(
        "label,logit\n" + "".join(f"{a},{b:.17g}\n" for a, b in zip(y, s, strict=True))
    )
    code, out, err = monitor(capsys, path, "--window", "200", "--format", "json")
    assert code == 0, err
    header, *objs = json_lines(out)
    assert header["score_type"] == "logit" and header["class_columns"] == {"1": "logit"}
    from skcalib.metrics import expected_calibration_error

    proba = 1 / (1 + np.exp(-s))
    assert objs[0]["ece"] == pytest.approx(
        expected_calibration_error(y[:200], proba[:200]), rel=1e-9
    )
    # the column is P(0): the same windows with the probabilities turned round
    code, flipped, err = monitor(
        capsys, path, "--window", "200", "--format", "json", "--positive-label", "0"
    )
    assert code == 0, err
    assert json_lines(flipped)[1]["ece"] == pytest.approx(
        expected_calibration_error(y[:200], 1 / (1 + np.exp(s[:200]))), rel=1e-9
    )


def test_markdown_puts_the_alarm_after_the_table(capsys, drift_log):
    code, out, _ = monitor(
        capsys,
        drift_log,
        "--window",
        "500",
        "--time-col",
        "time",
        "--format",
        "markdown",
    )
    assert code == 0
    lines = out.splitlines()
    rows = [i for i, ln in enumerate(lines) if ln.startswith("| ")]
    alarm = next(i for i, ln in enumerate(lines) if ln.startswith("ALARM"))
    assert lines[rows[0]].startswith("| window | start | end | first time |")
    assert alarm > rows[-1]


def test_npz_and_missing_files_are_refused(capsys, npz, tmp_path):
    code, _, err = monitor(capsys, npz)
    assert code == 1 and "reads CSV logs" in err
    code, _, err = monitor(capsys, tmp_path / "nope.csv")
    assert code == 1 and "no such file" in err


def test_monitor_help_in_a_subprocess():
    res = subprocess.run(
        [sys.executable, "-m", "skcalib", "monitor", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0 and "--chunk-rows" in res.stdout


def test_the_benchmark_log_reads_as_the_monitor_reads_it(capsys, tmp_path):
    bench = pytest.importorskip("benchmarks.bench_monitor_cli")
    path = tmp_path / "log.csv"
    bench.generate(path, 6000)
    code, out, err = monitor(
        capsys, path, "--time-col", "t", "--window", "1h", "--format", "json"
    )
    assert code == 0, err
    header, *objs = json_lines(out)
    assert header["score_type"] == "probability" and header["classes"] == list(
        range(10)
    )
    # one row a second from 22:13:20: 2800 rows until 23:00, then 3200
    assert [o["n"] for o in objs if o["type"] == "window"] == [2800, 3200]
    assert bench.main(["--sizes", "3000"]) == 0
    assert "peak growth" in capsys.readouterr().out
