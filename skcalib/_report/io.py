"""Reading predictions for ``skcalib report``: CSV and NPZ files.

The layout of a CSV (encoding, delimiter, header, label column, which column
holds the score of which class) is decided from its first 64 KiB and the
column names; the numbers are then read by numpy's C parser
(:func:`numpy.loadtxt`), never by a Python loop over rows. Anything the file
does not decide is a :class:`DataError` naming the option that decides it.
"""

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from skcalib._report.columns import (
    DataError,
    _is_number,
    _py,
    choose_score_columns,
    parse_labels,
)

__all__ = []

#: Label and score key names understood in NPZ files (ours first, then the
#: names used by netcal, pycalib and splinecalib files).
NPZ_LABEL_KEYS = ("labels", "y", "ground_truth", "y_true", "target")
NPZ_SCORE_KEYS = {
    "probs": "probability",
    "predictions": "probability",
    "proba": "probability",
    "y_proba": "probability",
    "logits": "logit",
    "scores": None,
}
#: Header names taken as the label column (compared in lower case).
LABEL_COLUMN_NAMES = (
    "label",
    "labels",
    "y",
    "target",
    "class",
    "y_true",
    "true_label",
    "ground_truth",
    "truth",
)
_NPY_HINT = (
    "save labels and scores together with "
    "np.savez(path, labels=labels, probs=probs) (or logits=...)"
)
DELIMITERS = (",", ";", "\t", "|")
HEAD_BYTES = 65536


@dataclass
class Predictions:
    """What ``read_csv`` / ``read_npz`` found.

    ``scores`` has one column per class of ``classes`` (sorted), or is 1-D:
    the score of ``positive`` (a binary problem given by one column).
    """

    labels: np.ndarray
    scores: np.ndarray
    classes: np.ndarray
    source: str
    kind: str | None = None
    positive: object = None
    columns: dict = field(default_factory=dict)  # class -> column name
    notes: list = field(default_factory=list)  # lines for the header
    kind_reason: str | None = None  # where ``kind`` comes from
    #: ``{option: column}`` of the columns read besides labels and scores
    #: (``--time-col``, ``--group-col``): text for a CSV, the array for NPZ
    extra: dict = field(default_factory=dict)
    #: Line of the file that holds row 0 (a CSV; exact unless blank lines
    #: precede a row); None for NPZ
    first_line: int | None = None


# ----------------------------------------------------------------- helpers
def _sniff_encoding(path, head, encoding):
    """The text encoding of a CSV, refusing binary files."""
    if head.startswith(b"PK\x03\x04"):
        raise DataError(f"{path}: a ZIP (NPZ) file, not a CSV; name it *.npz")
    if head.startswith(b"\x93NUMPY"):
        raise DataError(f"{path}: a .npy array, not a CSV; {_NPY_HINT}")
    if encoding is None and head.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    if encoding is None:
        encoding = "utf-8-sig"
        nul = head.find(b"\x00")
        if nul >= 0:
            raise DataError(
                f"{path}: a binary file, not a text CSV (NUL byte at offset {nul})"
            )
    try:
        text = head.decode(encoding)
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at 64 KiB
            raise _decode_error(path, encoding, exc) from None
        text = head[: exc.start].decode(encoding)
    except LookupError:
        raise DataError(f"--encoding: unknown encoding {encoding!r}") from None
    return encoding, text


def _decode_error(path, encoding, exc):
    byte = exc.object[exc.start]
    return DataError(
        f"{path}: not {encoding.removesuffix('-sig')} text (byte 0x{byte:02x} at "
        f"offset {exc.start}); pass --encoding (e.g. --encoding latin-1)"
    )


def _sniff_delimiter(path, lines):
    """The delimiter that splits the first line into the most fields (2 or
    more) and at least half of the first lines into as many; ``,`` wins ties,
    then ``;``, tab and ``|``."""
    best = None
    for delim in DELIMITERS:
        counts = [len(r) for r in csv.reader(lines, delimiter=delim) if r]
        n = counts[0]
        if n >= 2 and 2 * counts.count(n) >= len(counts):
            if best is None or n > best[1]:
                best = (delim, n)
    if best is None:
        raise DataError(
            f"{path}: cannot find the delimiter: the first line does not split "
            f"into 2 or more fields on any of {' '.join(map(repr, DELIMITERS))} "
            f"(first line {lines[0][:80]!r}); a CSV needs a label column and "
            "score columns"
        )
    return best[0]


@dataclass
class _Layout:
    header: list | None
    rows: list  # sampled data rows (strings)
    delimiter: str
    encoding: str


def _sniff_layout(path, encoding):
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
        complete = len(head) < HEAD_BYTES or not f.read(1)
    encoding, text = _sniff_encoding(path, head, encoding)
    text = text.removeprefix("\ufeff")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not complete and lines:
        lines = lines[:-1]  # possibly cut at 64 KiB
    if not lines:
        raise DataError(f"{path}: the file is empty")
    sample = lines[:200]
    delim = _sniff_delimiter(path, sample)
    rows = [[c.strip() for c in r] for r in csv.reader(sample, delimiter=delim) if r]
    first = rows[0]
    if len(rows) == 1:
        if not all(_is_number(c) for c in first):
            raise DataError(f"{path}: only a header ({', '.join(first)}), no data rows")
        return _Layout(None, rows, delim, encoding)
    has_header = any(
        not _is_number(a) and _is_number(b)
        for a, b in zip(first, rows[1], strict=False)
    ) or (all(not _is_number(c) for c in first) and len(rows) > 1)
    if has_header:
        return _Layout(first, rows[1:], delim, encoding)
    return _Layout(None, rows, delim, encoding)


def _column_index(spec, header, n_cols, path, what):
    spec = spec.strip()
    if header is not None and spec in header:
        return header.index(spec)
    if spec.lstrip("-").isdigit():
        idx = int(spec)
        if not -n_cols <= idx < n_cols:
            raise DataError(
                f"{path}: {what} column index {idx} out of range (0..{n_cols - 1})"
            )
        return idx % n_cols
    if header is None:
        raise DataError(
            f"{path}: {what} column {spec!r} given by name but the file has no "
            "header; give its 0-based index"
        )
    raise DataError(f"{path}: no {what} column {spec!r}; columns are {header}")


def _name(layout, idx):
    return layout.header[idx] if layout.header else f"column {idx}"


def _find_label_column(path, layout, label_col, exclude=()):
    """The label column: ``label_col``, else by name, else the only text
    column; the columns of ``exclude`` (``--time-col``, ...) are never it."""
    n_cols = len(layout.rows[0])
    if label_col is not None:
        return _column_index(label_col, layout.header, n_cols, path, "label")
    header = layout.header
    if header is not None:
        known = [
            i
            for i, h in enumerate(header)
            if h.lower() in LABEL_COLUMN_NAMES and i not in exclude
        ]
        if len(known) == 1:
            return known[0]
        text_cols = [
            i
            for i in range(n_cols)
            if i not in exclude
            and not all(_is_number(r[i]) for r in layout.rows if len(r) == n_cols)
        ]
        if len(known) > 1 or len(text_cols) != 1:
            raise DataError(
                f"{path}: cannot tell the label column: columns are {header} "
                f"(none or several named {'/'.join(LABEL_COLUMN_NAMES[:5])}/...); "
                "pass --label-col NAME"
            )
        return text_cols[0]
    first = [r[0] for r in layout.rows]
    if all(_is_number(c) for c in first):
        values = np.array(first, dtype=np.float64)
        if not np.all(values == np.round(values)):
            raise DataError(
                f"{path}: no header and column 0 holds non-integer numbers "
                f"({', '.join(first[:3])}, ...), not labels; pass --label-col INDEX "
                "(or add a header with a 'label' column)"
            )
    return 0


# -------------------------------------------------------------------- CSV
@dataclass
class ReadOptions:
    label_col: str | None = None
    score_cols: str | None = None
    classes: str | None = None
    positive_label: str | None = None
    encoding: str | None = None
    header: bool = True  # set by the reader
    #: ``{option: column spec}`` of other columns to read, never scores
    #: (``{"--time-col": "ts"}``)
    extra: dict = field(default_factory=dict)


@dataclass
class Columns:
    """Where the label, the candidate score columns and the ``extra``
    columns are in a CSV (file indices)."""

    names: list
    label: int
    candidates: list
    extra: dict  # option -> index


def find_columns(path, layout, opts):
    """The columns of a CSV with the layout ``layout`` (see :class:`Columns`)."""
    n_cols = len(layout.rows[0])
    names = layout.header or [str(i) for i in range(n_cols)]
    extra = {
        option: _column_index(spec, layout.header, n_cols, path, option)
        for option, spec in opts.extra.items()
    }
    seen = {}
    for option, idx in extra.items():
        if idx in seen:
            raise DataError(
                f"{path}: {seen[idx]} and {option} name the same column {names[idx]!r}"
            )
        seen[idx] = option
    label_idx = _find_label_column(path, layout, opts.label_col, set(extra.values()))
    if label_idx in seen:
        raise DataError(
            f"{path}: the label column {names[label_idx]!r} is also {seen[label_idx]}"
        )
    if opts.score_cols:
        candidates = [
            _column_index(s, layout.header, n_cols, path, "score")
            for s in opts.score_cols.split(",")
            if s.strip()
        ]
        if label_idx in candidates:
            raise DataError(f"{path}: --score-cols includes the label column")
        clash = [seen[i] for i in candidates if i in seen]
        if clash:
            raise DataError(f"{path}: --score-cols includes the {clash[0]} column")
    else:
        candidates = [i for i in range(n_cols) if i != label_idx and i not in seen]
    if not candidates:
        raise DataError(f"{path}: no score column besides the label column")
    return Columns(names, label_idx, candidates, extra)


def read_csv(path, options=None):
    """Labels and scores of a CSV file (see the module docstring)."""
    opts = ReadOptions() if options is None else options
    path = Path(path)
    layout = _sniff_layout(path, opts.encoding)
    opts.header = layout.header is not None
    cols = find_columns(path, layout, opts)
    names, label_idx, candidates = cols.names, cols.label, cols.candidates
    numeric_label = all(_is_number(r[label_idx]) for r in layout.rows)
    raw = _load_columns(path, layout, label_idx, candidates, numeric_label)
    labels = parse_labels(raw[0])
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        row = int(np.flatnonzero(~np.isfinite(labels))[0])
        raise DataError(
            f"{path}, line {row + 1 + opts.header}: label {labels[row].item()}"
        )
    classes = np.unique(labels)
    choice = choose_score_columns(path, names, candidates, classes, opts)
    pos = [candidates.index(i) for i in choice.idx]
    if pos == list(range(raw[1].shape[1])):
        scores = raw[1][:, 0] if len(pos) == 1 else raw[1]  # no copy
    else:
        scores = raw[1][:, pos[0]] if len(pos) == 1 else raw[1][:, pos]
    del raw
    _check_finite(path, layout, scores, [names[i] for i in choice.idx])
    notes = [f"label column {names[label_idx]!r}", *choice.notes]
    notes += [f"{opt} column {names[i]!r}" for opt, i in cols.extra.items()]
    extra = {opt: _load_text(path, layout, i) for opt, i in cols.extra.items()}
    columns = (
        {_py(choice.positive): names[choice.idx[0]]}
        if choice.positive is not None
        else {_py(c): names[i] for c, i in zip(classes, choice.idx, strict=True)}
    )
    return Predictions(
        labels,
        np.ascontiguousarray(scores),
        classes,
        str(path),
        None,
        _py(choice.positive),
        columns,
        notes,
        extra=extra,
        first_line=1 + opts.header,
    )


def _load_text(path, layout, idx):
    """One column as stripped text (the time or group column)."""
    try:
        return np.char.strip(_loadtxt(path, layout, [idx], str)[:, 0])
    except UnicodeDecodeError as exc:
        raise _decode_error(path, layout.encoding, exc) from None


def _loadtxt(path, layout, cols, dtype):
    return np.loadtxt(
        path,
        delimiter=layout.delimiter,
        skiprows=1 if layout.header else 0,
        usecols=cols,
        dtype=dtype,
        quotechar='"',
        encoding=layout.encoding,
        comments=None,
        ndmin=2,
    )


def _load_columns(path, layout, label_idx, candidates, numeric_label):
    """(labels, scores): one C-parser pass for numeric labels, two for text."""
    try:
        if numeric_label:
            data = _loadtxt(path, layout, [*candidates, label_idx], np.float64)
            return data[:, -1].copy(), _drop_last_column(data)
        scores = _loadtxt(path, layout, candidates, np.float64)
        labels = _loadtxt(path, layout, [label_idx], str)[:, 0]
        return labels, scores
    except UnicodeDecodeError as exc:
        raise _decode_error(path, layout.encoding, exc) from None
    except ValueError as exc:
        _diagnose(path, layout, label_idx, candidates)
        raise DataError(f"{path}: {exc}") from None


def _drop_last_column(data, block=1 << 16):
    """``data[:, :-1]`` as a C-contiguous array in ``data``'s own buffer (no
    second copy of the scores): rows move down in blocks, in increasing
    order, so a block never overwrites rows not yet moved."""
    n, k = data.shape
    if k == 1 or n == 0:
        return np.empty((n, k - 1), dtype=data.dtype)
    flat = data.reshape(-1)
    for start in range(0, n, block):
        stop = min(start + block, n)
        flat[start * (k - 1) : stop * (k - 1)] = data[start:stop, :-1].reshape(-1)
    return flat[: n * (k - 1)].reshape(n, k - 1)


def _diagnose(path, layout, label_idx, candidates):
    """Find the first bad line with the (slow) csv module: only on errors."""
    n_cols = len(layout.rows[0])
    with open(path, encoding=layout.encoding, newline="") as f:
        reader = csv.reader(f, delimiter=layout.delimiter)
        for line, row in enumerate(reader, start=1):
            if line == 1 and layout.header:
                continue
            if not row or not any(c.strip() for c in row):
                continue
            if len(row) != n_cols:
                raise DataError(
                    f"{path}, line {line}: {len(row)} fields, expected {n_cols}"
                )
            for c in candidates:
                text = row[c].strip()
                if not _is_number(text):
                    raise DataError(
                        f"{path}, line {line}, column {_name(layout, c)!r}: "
                        f"non-numeric score {text!r}"
                    )
            if not _is_number(row[label_idx].strip()):
                raise DataError(
                    f"{path}, line {line}, column {_name(layout, label_idx)!r}: "
                    f"label {row[label_idx]!r} is not a number like the labels of "
                    "the first lines"
                )


def _check_finite(path, layout, scores, names):
    bad = ~np.isfinite(scores)
    if not bad.any():
        return
    row, col = np.argwhere(bad.reshape(scores.shape[0], -1))[0]
    # Line number of the data row: exact unless blank lines precede it.
    line = int(row) + (2 if layout.header else 1)
    value = scores.reshape(scores.shape[0], -1)[row, col].item()
    raise DataError(f"{path}, line {line}, column {names[col]!r}: score is {value}")


# -------------------------------------------------------------------- NPZ
def read_npz(path):
    """Labels and scores of an NPZ file, with the score type its key implies."""
    path = Path(path)
    try:
        data = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "pickle" in str(exc).lower():
            raise DataError(
                f"{path}: holds pickled Python objects, which are refused "
                "(loading them can run code); save numeric arrays with np.savez"
            ) from None
        raise DataError(f"{path}: not a readable NPZ file ({exc})") from None
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: not a readable NPZ file ({exc})") from None
    if isinstance(data, np.ndarray):
        raise DataError(f"{path}: a .npy array, not an NPZ archive; {_NPY_HINT}")
    with data:
        keys = list(data.keys())
        if not keys:
            raise DataError(f"{path}: an empty NPZ archive (no arrays); {_NPY_HINT}")
        label_key = next((k for k in NPZ_LABEL_KEYS if k in keys), None)
        score_key = next((k for k in NPZ_SCORE_KEYS if k in keys), None)
        if label_key is None or score_key is None:
            raise DataError(
                f"{path}: needs a label array ({'/'.join(NPZ_LABEL_KEYS)}) and a score "
                f"array ({'/'.join(NPZ_SCORE_KEYS)}); found {keys}"
            )
        try:
            labels, scores = data[label_key], data[score_key]
        except ValueError:
            raise DataError(
                f"{path}: array {label_key!r} or {score_key!r} holds pickled Python "
                "objects, which are refused (loading them can run code); save "
                "numeric arrays with np.savez"
            ) from None
    for key, arr in ((label_key, labels), (score_key, scores)):
        if arr.ndim == 0:
            raise DataError(f"{path}: array {key!r} is a single value (0-d)")
    if labels.ndim != 1:
        raise DataError(f"{path}: labels {label_key!r} must be 1-D, got {labels.shape}")
    if scores.dtype.kind not in "fiu":
        raise DataError(f"{path}: array {score_key!r} is not numeric ({scores.dtype})")
    if scores.ndim not in (1, 2):
        raise DataError(f"{path}: scores must be 1-D or 2-D, got shape {scores.shape}")
    bad = ~np.isfinite(scores.reshape(scores.shape[0], -1)).all(axis=1)
    if bad.any():
        raise DataError(
            f"{path}: array {score_key!r} row {int(np.flatnonzero(bad)[0])} "
            "is not finite"
        )
    labels = parse_labels(labels)
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    classes = np.unique(labels)
    notes = []
    positive = None
    if scores.ndim == 1 and classes.size == 2:
        positive = _py(classes[1])
        notes.append(f"1-D scores {score_key!r} are P({positive}) (the greater label)")
    cols = (
        {}
        if positive is not None
        else {_py(c): f"{score_key}[:, {i}]" for i, c in enumerate(classes)}
    )
    return Predictions(
        labels,
        scores,
        classes,
        str(path),
        NPZ_SCORE_KEYS[score_key],
        positive,
        cols,
        [f"arrays {label_key!r} (labels) and {score_key!r} (scores)", *notes],
        f"the NPZ array is named {score_key!r}",
    )


def _npz_extra(path, extra, n_rows):
    """The arrays named by ``--time-col``/``--group-col`` in an NPZ file."""
    out = {}
    if not extra:
        return out
    with np.load(path, allow_pickle=False) as data:
        for option, key in extra.items():
            if key not in data:
                raise DataError(
                    f"{path}: {option} {key}: no such array; found {list(data.keys())}"
                )
            try:
                arr = data[key]
            except ValueError:
                raise DataError(
                    f"{path}: array {key!r} holds pickled Python objects, which "
                    "are refused"
                ) from None
            if arr.shape != (n_rows,):
                raise DataError(
                    f"{path}: {option} array {key!r} has shape {arr.shape}, "
                    f"expected ({n_rows},) (one value per row)"
                )
            out[option] = arr
    return out


def read_predictions(path, options):
    """Dispatch on the file: NPZ (by suffix or content), .npy refused, CSV."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: a folder, not a predictions file")
    if not path.exists():
        raise DataError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        raise DataError(f"{path}: .npy files hold one array; {_NPY_HINT}")
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from None
    if suffix == ".npz" or magic == b"PK\x03\x04":
        pred = read_npz(path)
        extra = options.extra if options is not None else {}
        pred.extra = _npz_extra(path, extra, pred.labels.shape[0])
        return pred
    try:
        return read_csv(path, options)
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from None
