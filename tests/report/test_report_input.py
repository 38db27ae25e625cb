"""``skcalib report`` reads the file a user has: columns matched to classes by
name, numeric labels, BOM, delimiters, rounded probabilities (issue 15)."""

import json

import numpy as np
import pytest

from skcalib._report.cli import main
from skcalib.metrics import expected_calibration_error


def run_json(capsys, *args):
    """Run the command in this process; (exit code, parsed stdout, stderr)."""
    try:
        code = main(["report", *map(str, args), "--quiet", "--format", "json"])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def make_predictions(n=600, k=3, seed=0):
    """Labels 0..k-1 and over-confident probabilities that mostly point at
    the label (accuracy about 0.75)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), y] += 1.5
    p = np.exp(2 * logits)
    return y, p / p.sum(axis=1, keepdims=True)


def write_csv(path, header, rows, delimiter=",", bom=False, encoding="utf-8"):
    lines = ([delimiter.join(header)] if header else []) + [
        delimiter.join(map(str, r)) for r in rows
    ]
    text = ("\ufeff" if bom else "") + "\n".join(lines) + "\n"
    path.write_bytes(text.encode(encoding))
    return path


def rows_of(labels, p, fmt="{:.6f}", label_last=False, extra=None):
    out = []
    for i, (lab, q) in enumerate(zip(labels, p, strict=True)):
        vals = [fmt.format(v) for v in q]
        row = [*vals, lab] if label_last else [lab, *vals]
        if extra is not None:
            row = [extra(i), *row]
        out.append(row)
    return out


def accuracy(labels, p, column_classes):
    """By hand: the class of the most probable column against the label."""
    pred = np.asarray(column_classes, dtype=object)[np.argmax(p, axis=1)]
    return float(np.mean(pred == np.asarray(labels, dtype=object)))


def unc(report):
    return report["rows"][0]


def test_columns_named_after_string_classes_in_any_order(tmp_path, capsys):
    # cat, dog, bird columns (not in sorted order), label column 'animal'
    # last: matched by name; before, read by position (accuracy 0.131)
    names = np.array(["cat", "dog", "bird"])
    y, p = make_predictions()
    path = write_csv(
        tmp_path / "animals.csv",
        ["cat", "dog", "bird", "animal"],
        rows_of(names[y], p, label_last=True),
    )
    code, rep, err = run_json(capsys, path, "--methods", "temperature", "--cv", 2)
    assert code == 0, err
    true = accuracy(names[y], p, names)
    assert true > 0.7
    assert unc(rep)["accuracy"] == pytest.approx(true, abs=1e-12)
    assert rep["class_columns"] == {"bird": "bird", "cat": "cat", "dog": "dog"}
    assert "label column 'animal'" in rep["notes"]


@pytest.mark.parametrize("prefix", ["p_", "proba_", "prob_", ""])
def test_prefixed_columns_any_order(tmp_path, capsys, prefix):
    names = np.array(["cat", "dog", "bird"])
    y, p = make_predictions(seed=1)
    order = [2, 0, 1]  # bird, cat, dog
    path = write_csv(
        tmp_path / "a.csv",
        ["label", *(prefix + names[j] for j in order)],
        rows_of(names[y], p[:, order]),
    )
    code, rep, err = run_json(capsys, path, "--methods", "temperature", "--cv", 2)
    assert code == 0, err
    assert unc(rep)["accuracy"] == pytest.approx(accuracy(names[y], p, names))


def test_one_binary_column_named_after_the_smaller_label(tmp_path, capsys):
    # p_fraud with labels fraud/legit is P(fraud) (before: read as P(legit),
    # accuracy 0.225)
    y, p = make_predictions(k=2, seed=2)
    lab = np.array(["legit", "fraud"])[y]
    path = write_csv(
        tmp_path / "f.csv",
        ["label", "p_fraud"],
        [[a, f"{q:.6f}"] for a, q in zip(lab, p[:, 1], strict=True)],
    )
    code, rep, err = run_json(capsys, path, "--methods", "platt", "--cv", 2)
    assert code == 0, err
    true = float(np.mean((p[:, 1] > 0.5) == (lab == "fraud")))
    assert true > 0.7
    assert unc(rep)["accuracy"] == pytest.approx(true)
    assert rep["positive_label"] == "fraud"
    assert "score column 'p_fraud' is P(fraud) (its name)" in rep["notes"]


def test_one_binary_column_default_and_positive_label(tmp_path, capsys):
    y, p = make_predictions(k=2, seed=3)
    path = write_csv(
        tmp_path / "s.csv",
        ["label", "row_id", "score"],
        [
            [int(a), i, f"{q:.6f}"]
            for i, (a, q) in enumerate(zip(y, p[:, 1], strict=True))
        ],
    )
    code, rep, err = run_json(capsys, path, "--methods", "platt", "--cv", 2)
    assert code == 0, err
    # the row id never becomes a score; the default positive label is printed
    assert unc(rep)["accuracy"] == pytest.approx(float(np.mean((p[:, 1] > 0.5) == y)))
    assert (
        "score column 'score' is P(1) (the greater label; --positive-label to change)"
        in rep["notes"]
    )
    assert "ignored columns: row_id" in rep["notes"]
    code, rep, err = run_json(
        capsys, path, "--methods", "platt", "--cv", 2, "--positive-label", "0"
    )
    assert code == 0, err
    assert unc(rep)["accuracy"] == pytest.approx(
        float(np.mean((p[:, 1] > 0.5) == (y == 0)))
    )


def test_extra_unnamed_columns_are_an_error(tmp_path, capsys):
    # label,row_id,s: before, row_id was a class score (exit 0)
    y, p = make_predictions(k=2, seed=4)
    path = write_csv(
        tmp_path / "x.csv",
        ["label", "row_id", "s"],
        [
            [int(a), i, f"{q:.6f}"]
            for i, (a, q) in enumerate(zip(y, p[:, 1], strict=True))
        ],
    )
    code, _, err = run_json(capsys, path, "--cv", 2)
    assert code == 1
    assert "columns ['row_id', 's'] are not named after the classes [0, 1]" in err
    assert "--score-cols" in err and "--classes" in err
    code, rep, err = run_json(
        capsys, path, "--cv", 2, "--methods", "platt", "--score-cols", "s"
    )
    assert code == 0, err
    assert unc(rep)["accuracy"] == pytest.approx(float(np.mean((p[:, 1] > 0.5) == y)))


def test_classes_option_maps_unnamed_columns(tmp_path, capsys):
    y, p = make_predictions(seed=5)
    path = write_csv(
        tmp_path / "u.csv", ["label", "a", "b", "c"], rows_of(y, p[:, [2, 0, 1]])
    )
    code, _, err = run_json(capsys, path, "--cv", 2)
    assert code == 1 and "not named after the classes [0, 1, 2]" in err
    code, rep, err = run_json(
        capsys, path, "--cv", 2, "--methods", "temperature", "--classes", "2,0,1"
    )
    assert code == 0, err
    assert unc(rep)["accuracy"] == pytest.approx(accuracy(y, p, [0, 1, 2]))


def test_numeric_labels_sort_numerically(tmp_path, capsys):
    # labels 0.0 ... 10.0 and no header: before, "10.0" sorted before "2.0"
    y, p = make_predictions(n=1100, k=11, seed=6)
    path = write_csv(tmp_path / "n.csv", None, rows_of([f"{v:.1f}" for v in y], p))
    code, rep, err = run_json(capsys, path, "--methods", "temperature", "--cv", 2)
    assert code == 0, err
    assert rep["classes"] == list(range(11))
    assert unc(rep)["accuracy"] == pytest.approx(accuracy(y, p, list(range(11))))
    # named columns p0..p10 in a shuffled order are matched numerically
    order = np.random.default_rng(0).permutation(11)
    path = write_csv(
        tmp_path / "m.csv",
        ["label", *(f"p{j}" for j in order)],
        rows_of([f"{v:.1f}" for v in y], p[:, order]),
    )
    code, rep, err = run_json(capsys, path, "--methods", "temperature", "--cv", 2)
    assert code == 0, err
    assert unc(rep)["accuracy"] == pytest.approx(accuracy(y, p, list(range(11))))


@pytest.mark.parametrize("header", [True, False])
def test_bom_keeps_every_row_and_the_header_name(tmp_path, capsys, header):
    # before: 599 of 600 rows without a header, column '\ufefflabel' with one
    y, p = make_predictions(seed=7)
    path = write_csv(
        tmp_path / "b.csv",
        ["label", "p_0", "p_1", "p_2"] if header else None,
        rows_of(y, p),
        bom=True,
    )
    code, rep, err = run_json(capsys, path, "--methods", "temperature", "--cv", 2)
    assert code == 0, err
    assert rep["n_samples"] == 600
    assert unc(rep)["accuracy"] == pytest.approx(accuracy(y, p, [0, 1, 2]))
    if header:
        assert "label column 'label'" in rep["notes"]


def test_semicolons_and_quoted_numbers(tmp_path, capsys):
    y, p = make_predictions(seed=8)
    plain = write_csv(tmp_path / "c.csv", ["label", "p_0", "p_1", "p_2"], rows_of(y, p))
    quoted = write_csv(
        tmp_path / "q.csv",
        ['"label"', '"p_0"', '"p_1"', '"p_2"'],
        rows_of(y, p, fmt='"{:.6f}"'),
        delimiter=";",
    )
    reports = []
    for path in (plain, quoted):
        code, rep, err = run_json(capsys, path, "--methods", "temperature", "--cv", 2)
        assert code == 0, err
        reports.append(rep["rows"])
    for a, b in zip(*reports, strict=True):
        assert a["nll"] == b["nll"] and a["ece"] == b["ece"]


def test_label_column_not_first(tmp_path, capsys):
    y, p = make_predictions(seed=9)
    path = write_csv(
        tmp_path / "l.csv",
        ["p_0", "p_1", "p_2", "label"],
        rows_of(y, p, label_last=True),
    )
    code, rep, err = run_json(capsys, path, "--methods", "temperature", "--cv", 2)
    assert code == 0, err
    assert unc(rep)["accuracy"] == pytest.approx(accuracy(y, p, [0, 1, 2]))


@pytest.mark.parametrize(
    "content, message",
    [
        ("label,p0,p1\n", "only a header (label, p0, p1), no data rows"),
        (
            "p_0,p_1\n0.2,0.8\n0.7,0.3\n",
            "cannot tell the label column: columns are ['p_0', 'p_1']",
        ),
        ("0.2,0.8\n0.7,0.3\n", "no header and column 0 holds non-integer numbers"),
        ("label\n0\n1\n", "cannot find the delimiter"),
        ("", "the file is empty"),
    ],
)
def test_layout_messages_say_what_was_found(tmp_path, capsys, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    code, _, err = run_json(capsys, path, "--cv", 2)
    assert code == 1
    assert message in err and str(path) in err
    assert len(err.strip().splitlines()) == 1


def test_rounded_probabilities_are_probabilities(tmp_path, capsys):
    # float_format='%.4f', 10 classes: before read as logits (ECE 0.6877,
    # true 0.0703) and refused with --score-type probability
    y, p = make_predictions(n=2000, k=10, seed=10)
    path = write_csv(
        tmp_path / "r.csv",
        ["label", *(f"p_{j}" for j in range(10))],
        rows_of(y, p, "{:.4f}"),
    )
    true_ece = expected_calibration_error(y, p)
    for extra in ([], ["--score-type", "probability"]):
        code, rep, err = run_json(
            capsys, path, "--methods", "temperature", "--cv", 2, *extra
        )
        assert code == 0, err
        assert rep["score_type"] == "probability"
        assert unc(rep)["ece"] == pytest.approx(true_ece, abs=2e-3)
        assert rep["score_type_reason"]
        assert rep["n_renormalized_rows"] > 0 or extra


def test_header_prints_score_type_and_reason(tmp_path, capsys):
    y, p = make_predictions(seed=11)
    path = write_csv(tmp_path / "h.csv", ["label", "p_0", "p_1", "p_2"], rows_of(y, p))
    code = main(
        ["report", str(path), "--methods", "temperature", "--cv", "2", "--quiet"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "score type: probability (" in out
    assert "classes <- columns: 0 <- p_0, 1 <- p_1, 2 <- p_2" in out


def test_latin1_needs_encoding(tmp_path, capsys):
    y, p = make_predictions(k=2, seed=12)
    lab = np.array(["café", "thé"])[y]
    path = write_csv(
        tmp_path / "l1.csv",
        ["label", "p_café", "p_thé"],
        rows_of(lab, p),
        encoding="latin-1",
    )
    code, _, err = run_json(capsys, path, "--cv", 2)
    assert code == 1 and "not utf-8 text (byte 0xe9" in err and "--encoding" in err
    code, rep, err = run_json(
        capsys, path, "--cv", 2, "--methods", "platt", "--encoding", "latin-1"
    )
    assert code == 0, err
    assert unc(rep)["accuracy"] == pytest.approx(accuracy(lab, p, ["café", "thé"]))


@pytest.mark.parametrize("n, k, block", [(10, 4, 3), (7, 2, 1), (5, 11, 64), (0, 3, 2)])
def test_drop_last_column_in_place_equals_slicing(n, k, block):
    from skcalib._report.io import _drop_last_column

    data = np.arange(n * k, dtype=np.float64).reshape(n, k)
    expected = data[:, :-1].copy()
    out = _drop_last_column(data, block=block)
    np.testing.assert_array_equal(out, expected)
    assert out.flags.c_contiguous
