"""Reading a predictions log in chunks of lines, for ``skcalib monitor``.

The layout (encoding, delimiter, header, label column) is sniffed as
:mod:`skcalib._report.io` does for the report; the first
:data:`HEAD_ROWS` data rows then decide what the rest of the file cannot:
the classes (the labels of those rows, or ``--classes``), which column
scores which class (:func:`~skcalib._report.columns.choose_score_columns`,
the report's rules), the score type (the report's rule, on those rows) and
whether the time column holds numbers or ISO 8601 text. Every later chunk
must agree; where one does not, the error names its line. The numbers of a
chunk are parsed by :func:`numpy.loadtxt` (numpy's C parser) on its list of
lines; at most ``max(HEAD_ROWS, chunk_rows)`` rows are held at once.
"""

import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from skcalib._report.columns import (
    SCORE_PREFIXES,
    DataError,
    _is_number,
    _parse_classes,
    _py,
    choose_score_columns,
    parse_labels,
)
from skcalib._report.io import (
    Predictions,
    _decode_error,
    _name,
    _sniff_layout,
    find_columns,
)

__all__ = []

#: Data rows that decide the classes, the score columns, the score type and
#: the format of the time column.
HEAD_ROWS = 10_000


@dataclass
class Chunk:
    """Rows of the log: labels, scores (as the report prepares them: a 1-D
    binary column oriented to the greater label, rounded rows
    renormalised) and timestamps (int64 ns) or None."""

    labels: np.ndarray
    scores: np.ndarray
    ns: np.ndarray | None


class LogReader:
    """The chunks of a CSV predictions log, in file order (see the module
    docstring). ``opts``: :class:`~skcalib._report.io.ReadOptions` (its
    ``extra`` names the ``--time-col``); ``score_type``: ``--score-type``."""

    def __init__(self, path, opts, score_type, time_unit):
        self.path, self.opts, self.time_unit = path, opts, time_unit
        self.layout = _sniff_layout(path, opts.encoding)
        opts.header = self.layout.header is not None
        self.cols = find_columns(path, self.layout, opts)
        self.numeric_label = all(
            _is_number(r[self.cols.label]) for r in self.layout.rows
        )
        self.time_idx = self.cols.extra.get("--time-col")
        self.requested_type = score_type or "auto"
        self.time_kind = None
        self.last_ns = None
        self.notes = []

    # ------------------------------------------------------------ lines
    def _blocks(self, chunk_rows):
        """``(lines, line number of the first)``: the head, then chunks."""
        try:
            with open(self.path, encoding=self.layout.encoding) as f:
                number = 1
                if self.layout.header:
                    next(f, None)
                    number = 2
                size = HEAD_ROWS
                while block := list(itertools.islice(f, size)):
                    count = len(block)
                    yield block, number
                    del block  # before the next is read: one block at a time
                    number += count
                    size = chunk_rows
        except UnicodeDecodeError as exc:
            raise _decode_error(self.path, self.layout.encoding, exc) from None
        except OSError as exc:
            raise DataError(f"{self.path}: cannot read ({exc.strerror})") from None

    def _where(self, block, first):
        """``where(row)`` of a block: blank lines count as lines, not rows."""
        cache = []

        def where(row):
            if not cache:
                cache.extend(i for i, line in enumerate(block) if line.strip())
            return f"{self.path}, line {first + cache[row]}"

        return where

    def _loadtxt(self, block, cols, dtype):
        with warnings.catch_warnings():
            # a chunk of blank lines is no rows, not a problem
            warnings.filterwarnings("ignore", "loadtxt: input contained no data")
            return np.loadtxt(
                block,
                delimiter=self.layout.delimiter,
                usecols=cols,
                dtype=dtype,
                quotechar='"',
                comments=None,
                ndmin=2,
            )

    def _parse(self, block, where, score_idx):
        """Raw labels, scores and time text of a block of lines."""
        label = self.cols.label
        try:
            if self.numeric_label:
                data = self._loadtxt(block, [*score_idx, label], np.float64)
                labels, scores = data[:, -1], data[:, :-1]
            else:
                scores = self._loadtxt(block, score_idx, np.float64)
                labels = np.char.strip(self._loadtxt(block, [label], str)[:, 0])
            times = None
            if self.time_idx is not None:
                times = self._loadtxt(block, [self.time_idx], str)[:, 0]
                times = np.char.strip(times)
        except ValueError as exc:
            self._diagnose(block, where, score_idx)
            raise DataError(f"{where(0)} and below: {exc}") from None
        return labels, scores, times

    def _diagnose(self, block, where, score_idx):
        """The first bad row of a block that numpy refused (error path)."""
        import csv

        n_cols = len(self.layout.rows[0])
        rows = [r for r in csv.reader(block, delimiter=self.layout.delimiter) if r]
        rows = [r for r in rows if any(c.strip() for c in r)]
        for i, row in enumerate(rows):
            if len(row) != n_cols:
                raise DataError(f"{where(i)}: {len(row)} fields, expected {n_cols}")
            bad = [c for c in score_idx if not _is_number(row[c].strip())]
            if bad:
                name = _name(self.layout, bad[0])
                raise DataError(
                    f"{where(i)}, column {name!r}: non-numeric score "
                    f"{row[bad[0]].strip()!r}"
                )
            if self.numeric_label and not _is_number(row[self.cols.label].strip()):
                raise DataError(
                    f"{where(i)}: label {row[self.cols.label].strip()!r} is not a "
                    "number like the labels of the first lines"
                )

    # --------------------------------------------------------- decisions
    def _decide(self, block, first):
        """Classes, score columns and score type from the head rows."""
        where = self._where(block, first)
        labels, scores, times = self._parse(block, where, self.cols.candidates)
        labels = parse_labels(labels)
        found = np.unique(labels)
        if self.opts.classes is not None:
            classes = np.asarray(_parse_classes(self.opts.classes, labels))
            classes = np.unique(parse_labels(classes))
            if classes.size != len(self.opts.classes.split(",")):
                raise DataError(f"--classes {self.opts.classes}: a class twice")
            self._check_labels(labels, classes, where, "--classes")
        else:
            classes = found
            if classes.size < 2:
                held = f"only class {_py(classes[0])!r}" if classes.size else "no rows"
                raise DataError(
                    f"{self.path}: the first {labels.size} rows hold {held}; "
                    "pass --classes (every class, e.g. --classes 0,1)"
                )
        self.classes = classes
        names, cands = self.cols.names, self.cols.candidates
        choice = choose_score_columns(self.path, names, cands, classes, self.opts)
        if self.opts.classes is None:
            self._check_unmatched(choice, labels.size)
        self.score_idx = list(choice.idx)
        self.positive = _py(choice.positive)
        self.columns = (
            {self.positive: names[choice.idx[0]]}
            if choice.positive is not None
            else {_py(c): names[i] for c, i in zip(classes, choice.idx, strict=True)}
        )
        self.notes = [f"label column {names[self.cols.label]!r}", *choice.notes]
        if self.time_idx is not None:
            self.notes.append(f"--time-col column {names[self.time_idx]!r}")
        pos = [cands.index(i) for i in self.score_idx]
        scores = np.ascontiguousarray(
            scores[:, pos[0]] if len(pos) == 1 else scores[:, pos]
        )
        return self._prepare(labels, scores, times, where, decide=True)

    def _check_unmatched(self, choice, n_rows):
        """A column named like the score of a class that the head rows do
        not hold (``p_9`` when no label is 9 yet) is an error, not ignored."""
        prefixes = [p for p in SCORE_PREFIXES if len(p) > 1]
        names = self.cols.names
        for i in self.cols.candidates:
            low = names[i].lower()
            if i not in choice.idx and any(
                low.startswith(p) and len(low) > len(p) for p in prefixes
            ):
                raise DataError(
                    f"{self.path}: column {names[i]!r} looks like the score of a "
                    f"class not among the labels of the first {n_rows} rows "
                    f"({[_py(c) for c in self.classes]}); pass --classes (every "
                    "class, in the order of --score-cols)"
                )

    def _check_labels(self, labels, classes, where, source):
        bad = ~np.isin(labels, classes)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{where(row)}: label {_py(labels[row])!r} is not among the classes "
                f"{[_py(c) for c in classes]} ({source}); pass --classes with "
                "every class"
            )

    def _labels(self, raw, where):
        """Labels of a later chunk in the type of the classes."""
        if self.classes.dtype.kind == "i":
            whole = raw == np.round(raw)
            if not whole.all():
                row = int(np.flatnonzero(~whole)[0])
                raise DataError(
                    f"{where(row)}: label {raw[row]} is not one of the integer "
                    "labels of the first rows"
                )
            labels = raw.astype(np.int64)
        else:
            labels = raw
        source = "--classes" if self.opts.classes else f"the first {HEAD_ROWS} rows"
        self._check_labels(labels, self.classes, where, source)
        return labels

    # ----------------------------------------------------------- scores
    def _prepare(self, labels, scores, times, where, decide=False):
        from skcalib._core.scores import row_sums
        from skcalib._report.run import prepare_scores

        bad = ~np.isfinite(scores.reshape(scores.shape[0], -1)).all(axis=1)
        if bad.any():
            raise DataError(
                f"{where(int(np.flatnonzero(bad)[0]))}: a score is not finite"
            )
        kind = self.requested_type if decide else self.score_type
        if not decide and kind == "probability" and scores.size:
            flat = scores.reshape(scores.shape[0], -1)
            out = ((flat < 0) | (flat > 1)).any(axis=1)
            if not out.any() and flat.shape[1] > 1:
                sums = row_sums(flat)
                if not sums.rounded:
                    off = np.abs(sums.sums - 1.0) > sums.tolerance
                    out = np.zeros(flat.shape[0], bool)
                    out[sums.rows[off]] = True
            if out.any():
                row = int(np.flatnonzero(out)[0])
                raise DataError(
                    f"{where(row)}: scores {flat[row].tolist()} are not probabilities "
                    f"(the score type of the first rows: {self.reason}); pass "
                    "--score-type logit if the file holds logits"
                )
        pred = Predictions(labels, scores, self.classes, str(self.path))
        pred.positive = self.positive
        prepared, decision = prepare_scores(pred, kind)
        if decide:
            self.score_type, self.reason = decision.score_type, decision.reason
        ns = None
        if times is not None:
            from skcalib._report.times import check_order, parse_times

            ns, self.time_kind = parse_times(
                times, self.time_unit, where, self.time_kind
            )
            check_order(ns, self.last_ns, where, self.opts.extra["--time-col"])
            if ns.size:
                self.last_ns = int(ns[-1])
        return Chunk(labels, prepared, ns)

    def chunks(self, chunk_rows):
        """The :class:`Chunk` of every block of lines, the head first."""
        blocks = self._blocks(chunk_rows)
        head = next(blocks, None)
        if head is None:
            raise DataError(f"{self.path}: no data rows")
        chunk = self._decide(*head)
        del head
        yield chunk
        for block, first in blocks:
            chunk = self._chunk(block, first)
            del block  # the lines go before the caller works on the numbers
            yield chunk
            del chunk

    def _chunk(self, block, first):
        where = self._where(block, first)
        labels, scores, times = self._parse(block, where, self.score_idx)
        # C order, as the report reads them: row sums (and so the
        # probabilities) then agree to the last bit
        scores = np.ascontiguousarray(scores[:, 0] if scores.shape[1] == 1 else scores)
        labels = self._labels(labels, where) if self.numeric_label else labels
        if not self.numeric_label:
            self._check_labels(labels, self.classes, where, "the first rows")
        return self._prepare(labels, scores, times, where)
