"""``skcalib report --time-col/--window/--group-col``: calibration over time
and the subgroup audit."""

import base64
import json
import re

import numpy as np
import pytest
from _cli_helpers import run_cli
from _logs import direct, looks_of, make_log, minutes, read_back, write_log

from skcalib._report import groups
from skcalib._report.windows import look_starts, window_spec
from skcalib.metrics import expected_calibration_error

FAST = ("--methods", "temperature", "--cv", "2", "--quiet")
N = 6000  # rows of the drifting log
METRICS = ("n", "ece", "ece_low", "ece_high", "brier", "nll", "accuracy")


def report_json(capsys, *args):
    code, out, err = run_cli(capsys, "report", *args, *FAST, "--format", "json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def drift_log(tmp_path):
    y, p = make_log(N, drift_at=N // 2)
    return write_log(tmp_path / "drift.csv", y, p, minutes(N))


def test_row_windows_equal_the_monitor_fed_directly(capsys, drift_log):
    mon_json = report_json(capsys, drift_log, "--time-col", "time", "--window", "700")[
        "monitor"
    ]
    y, p = read_back(drift_log, 10)
    keys = np.arange(N) // 700
    looks = looks_of(keys, 500)  # 500 rows, or the end of a window
    assert looks[:3] == [(0, 500), (500, 700), (700, 1200)]
    mon, _ = direct(y, p, looks, 700)
    want = mon.windows()
    assert [r["window"] for r in mon_json["rows"]] == list(range(9))
    assert len(want) == 9 and mon_json["n_looks"] == len(looks) == 17
    for got, exp in zip(mon_json["rows"], want, strict=True):
        assert (got["start"], got["end"]) == (exp["start"], exp["end"])
        for key in (*METRICS, "e_value"):
            assert got[key] == pytest.approx(exp[key], rel=1e-12, abs=1e-15), key
        # a row window with a time column says when its rows were written
        first = (minutes(N)[exp["start"]]).astype(str)
        assert got["first_time"] == first
    assert mon_json["rows"][-1]["complete"] is False  # 6000 = 8 * 700 + 400
    # the window ECE is the metric of its rows (another implementation)
    assert mon_json["rows"][1]["ece"] == pytest.approx(
        expected_calibration_error(y[700:1400], p[700:1400], labels=np.arange(10))
    )
    alarm = mon_json["alarm"]
    assert alarm["look"] == mon.alarm_ + 1 and alarm["rows"] == mon.alarm_sample_
    assert alarm["drivers"][0]["bin"] == mon.drivers_[0]["bin"]
    assert alarm["window"] == (mon.alarm_sample_ - 1) // 700


def test_time_windows_equal_the_monitor_fed_directly(capsys, drift_log):
    res = report_json(
        capsys, drift_log, "--time-col", "time", "--window", "6h", "--look-rows", "100"
    )
    rows = res["monitor"]["rows"]
    y, p = read_back(drift_log, 10)
    ns = minutes(N).astype("datetime64[ns]").astype(np.int64)
    hours6 = 6 * 3600 * 10**9
    keys = ns // hours6
    looks = looks_of(keys, 100)
    mon, after = direct(y, p, looks, "6h", times=minutes(N))
    want = mon.windows()
    assert [r["n"] for r in rows] == [360] * 16 + [240]
    assert rows[0]["start"] == "2024-01-01T00:00:00"
    assert rows[0]["end"] == "2024-01-01T06:00:00"
    last_look = {int(keys[a]): e for (a, _), e in zip(looks, after, strict=True)}
    for got, exp in zip(rows, want, strict=True):
        assert got["window"] == exp["window"]
        for key in METRICS:
            assert got[key] == pytest.approx(exp[key], rel=1e-12, abs=1e-15), key
        # the e-value at the end of the window: after its own last look
        assert got["e_value"] == pytest.approx(last_look[exp["window"]], rel=1e-12)


def test_drift_raises_the_alarm_and_a_calibrated_log_does_not(capsys, tmp_path):
    y, p = make_log(6000, drift_at=3000)
    drift = write_log(tmp_path / "drift.csv", y, p, minutes(6000))
    code, out, err = run_cli(
        capsys, "report", drift, "--time-col", "time", "--window", "1000", *FAST
    )
    assert code == 0, err
    section = out[out.index("calibration over time:") :]
    line = next(ln for ln in section.splitlines() if ln.startswith("ALARM"))
    # temperature 1 -> 1.6 at row 3000 (window 3): flagged in window 3 or 4
    assert "ALARM at alpha=0.05" in line
    assert re.search(r"in window [34]: [34]000 to [45]000", line), line
    assert "under-confident" in line  # T > 1 flattens the probabilities
    y, p = make_log(6000)
    calm = write_log(tmp_path / "calm.csv", y, p, minutes(6000))
    code, out, err = run_cli(
        capsys, "report", calm, "--time-col", "time", "--window", "1000", *FAST
    )
    assert code == 0, err
    assert "ALARM" not in out
    assert "no alarm at alpha=0.05" in out
    # the main table comes first, the windows after it
    assert out.index("uncalibrated") < out.index("calibration over time:")


def test_empty_time_windows_are_reported_with_n_0(capsys, tmp_path):
    y, p = make_log(600, k=3)
    t = minutes(600)
    t[300:] += np.timedelta64(3, "h")  # no rows for three hours
    path = write_log(tmp_path / "gap.csv", y, p, t)
    res = report_json(capsys, path, "--time-col", "time", "--window", "1h")
    rows = res["monitor"]["rows"]
    assert [r["n"] for r in rows] == [60] * 5 + [0, 0, 0] + [60] * 5
    empty = rows[5]
    assert empty["start"] == "2024-01-01T05:00:00"
    assert empty["ece"] is None and empty["brier"] is None
    assert empty["e_value"] == rows[4]["e_value"]  # nothing moved it
    code, out, _ = run_cli(
        capsys, "report", path, "--time-col", "time", "--window", "1h", *FAST
    )
    line = next(
        ln for ln in out.splitlines() if ln.split()[1:2] == ["2024-01-01T05:00:00"]
    )
    assert line.split()[3] == "0" and line.split()[4] == "-"


def test_out_of_order_timestamps_are_an_error_naming_the_line(capsys, tmp_path):
    y, p = make_log(300, k=3)
    t = minutes(300)
    t[[100, 101]] = t[[101, 100]]
    path = write_log(tmp_path / "swap.csv", y, p, t)
    code, _, err = run_cli(capsys, "report", path, "--time-col", "time", *FAST)
    assert code == 1
    # data row 101 is line 103 (after the header)
    assert "line 103: timestamp 2024-01-01T01:40:00 comes before" in err
    assert "sort the file by time" in err


@pytest.mark.parametrize("spec", ["5x", "0", "-3", "1.5h", "h"])
def test_a_bad_window_is_a_usage_error(capsys, drift_log, spec):
    code, _, err = run_cli(capsys, "report", drift_log, "--window", spec, *FAST)
    assert code == 2
    assert "--window" in err and "duration" in err


def test_a_duration_needs_a_time_column(capsys, drift_log):
    code, _, err = run_cli(capsys, "report", drift_log, "--window", "1D", *FAST)
    assert code == 2 and "pass --time-col" in err


def test_window_spec_reads_rows_and_durations():
    assert window_spec("1000") == 1000 and window_spec(" 6h ") == "6h"
    assert window_spec("30min") == "30min" and window_spec("1D") == "1D"


def test_looks_end_at_window_ends():
    keys = np.array([0, 0, 0, 0, 0, 1, 1, 3, 3, 3])
    assert look_starts(keys, 2).tolist() == [0, 2, 4, 5, 7, 9]
    assert looks_of(keys, 2) == [(0, 2), (2, 4), (4, 5), (5, 7), (7, 9), (9, 10)]


def test_the_time_column_is_never_a_score_column(capsys, tmp_path):
    # no header: four numeric columns after the label; without --time-col the
    # fourth would be a score column of a 3-class file (and refused)
    y, p = make_log(300, k=3)
    secs = 1.7e9 + 30 * np.arange(300)
    rows = [
        f"{a},{b[0]:.17g},{b[1]:.17g},{b[2]:.17g},{s:.0f}"
        for a, b, s in zip(y, p, secs, strict=True)
    ]
    path = tmp_path / "nohead.csv"
    path.write_text("\n".join(rows) + "\n")
    code, _, err = run_cli(capsys, "report", path, *FAST)
    assert code == 1 and "4 score columns but 3 classes" in err
    res = report_json(capsys, path, "--time-col", "4", "--window", "1h")
    assert res["class_columns"] == {"0": "1", "1": "2", "2": "3"}
    assert "--time-col column '4'" in res["notes"]
    first = res["monitor"]["rows"][0]
    # numbers are Unix seconds: 1.7e9 s is 2023-11-14T22:13:20 UTC
    assert first["start"] == "2023-11-14T22:00:00" and first["n"] == 94


def test_numeric_time_units(capsys, tmp_path):
    y, p = make_log(200, k=2)
    ms = 1_700_000_000_000 + 60_000 * np.arange(200)
    path = write_log(tmp_path / "ms.csv", y, p, ms)
    res = report_json(
        capsys, path, "--time-col", "time", "--time-unit", "ms", "--window", "1h"
    )
    assert [r["n"] for r in res["monitor"]["rows"]] == [47, 60, 60, 33]


def test_npz_logits_and_row_windows(capsys, npz):
    from scipy.special import softmax

    res = report_json(capsys, npz, "--window", "100")
    rows = res["monitor"]["rows"]
    data = np.load(npz)
    proba = softmax(data["logits"], axis=1)
    assert [r["n"] for r in rows] == [100, 100, 100]
    for i, row in enumerate(rows):
        part = slice(100 * i, 100 * (i + 1))
        assert row["ece"] == pytest.approx(
            expected_calibration_error(data["labels"][part], proba[part]), rel=1e-9
        )
        assert "first_time" not in row


def test_html_has_the_figure_of_calibration_over_time(capsys, drift_log, tmp_path):
    pytest.importorskip("matplotlib")
    page = tmp_path / "r.html"
    code, _, err = run_cli(
        capsys,
        "report",
        drift_log,
        "--time-col",
        "time",
        "--window",
        "1000",
        "--html",
        page,
        "--out",
        tmp_path / "out",
        *FAST,
    )
    assert code == 0, err
    text = page.read_text()
    assert "<h2>Calibration over time</h2>" in text
    assert "own (uncalibrated) probabilities" in text
    src = re.search(
        r'alt="calibration over time" src="data:image/png;base64,([^"]+)"', text
    )
    assert base64.b64decode(src.group(1)).startswith(b"\x89PNG")
    png = (tmp_path / "out" / "calibration_over_time.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert "calibration_over_time.png" in manifest["files"]


def test_markdown_prints_the_window_table(capsys, drift_log):
    code, out, _ = run_cli(
        capsys,
        "report",
        drift_log,
        "--time-col",
        "time",
        "--window",
        "2000",
        *FAST,
        "--format",
        "markdown",
    )
    assert code == 0
    i = out.index("calibration over time:")
    table = out[i:].splitlines()[1:5]
    assert table[0].startswith("| window | start | end | first time | last time | n |")
    assert table[2].startswith("| 0 | 0 | 2000 | 2024-01-01T00:00:00 | ")


# ------------------------------------------------------------------ groups
def test_group_rows_are_those_of_calibration_by_group():
    from skcalib.monitoring import calibration_by_group

    y, p = make_log(600, k=3)
    g = np.where(np.arange(600) < 595, np.where(np.arange(600) % 2, "x", "y"), "z")
    res = calibration_by_group(y, p, g, n_resamples=50, random_state=0)
    rows = groups.group_rows(res)
    assert [r["group"] for r in rows] == ["x", "y", "z"]
    for row, n, ece in zip(rows, res.n, res.ece, strict=True):
        assert row["n"] == n and row["ece"] == pytest.approx(ece)
        assert "weight" not in row  # equal to n without weights
    assert rows[2]["pvalue"] is None and rows[2]["note"]  # 5 rows: a note
    text = groups.format_groups(rows, "text").splitlines()
    assert text[0].split()[:3] == ["group", "n", "accuracy"]
    assert text[4].split()[0] == "z" and "-" in text[4].split()


def test_group_col_audit(capsys, tmp_path):
    from skcalib.monitoring import calibration_by_group

    y, p = make_log(2000, k=3)
    g = np.where(np.arange(2000) % 2, "x", "y")
    path = write_log(tmp_path / "g.csv", y, p, g)
    res = report_json(capsys, path, "--group-col", "time")
    assert res["groups"]["column"] == "time"
    assert "--group-col column 'time'" in res["notes"]
    assert res["class_columns"] == {"0": "p_0", "1": "p_1", "2": "p_2"}
    want = calibration_by_group(y, p, g, n_resamples=200, random_state=0)
    rows = res["groups"]["rows"]
    assert [r["group"] for r in rows] == ["x", "y"]
    np.testing.assert_allclose([r["ece"] for r in rows], want.ece, rtol=1e-6)
    np.testing.assert_allclose([r["nll"] for r in rows], want.nll, rtol=1e-6)
    np.testing.assert_allclose(
        [r["pvalue_adjusted"] for r in rows], want.pvalue_adjusted, rtol=1e-6
    )


def test_npz_time_array_and_classwise_test(capsys, tmp_path):
    y, p = make_log(3000, k=3, drift_at=1000, temperature=2.5)
    path = tmp_path / "log.npz"
    np.savez(path, labels=y, probs=p, time=minutes(3000))
    res = report_json(
        capsys, path, "--time-col", "time", "--window", "12h", "--kind", "classwise"
    )
    mon = res["monitor"]
    assert [r["n"] for r in mon["rows"]] == [720] * 4 + [120]
    assert mon["rows"][0]["classwise_ece"] is not None
    assert {d["class"] for d in mon["alarm"]["drivers"]} <= {0, 1, 2}
    assert all(isinstance(d["class"], int) for d in mon["alarm"]["drivers"])
    code, out, _ = run_cli(
        capsys,
        "report",
        path,
        "--time-col",
        "time",
        "--window",
        "12h",
        "--kind",
        "classwise",
        *FAST,
    )
    assert "cw-ECE" in out and "driven by class " in out
    # an NPZ without that array
    code, _, err = run_cli(capsys, "report", path, "--time-col", "when", *FAST)
    assert code == 1 and "--time-col when: no such array" in err
