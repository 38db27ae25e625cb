"""Which CSV column holds the score of which class, for ``skcalib report``.

Columns named after the classes are matched by name (``<label>``,
``p_<label>``, ``p<label>``, ``proba_<label>``, ``prob_<label>``,
``probability_<label>``, ``score_<label>``; numbers compared as numbers), in
any order; other columns are ignored and listed. One column of a binary
problem scores the class it names, else ``--positive-label`` (default: the
greater label). A headerless file lists the classes in sorted order. Anything
else is a :class:`DataError` that names ``--score-cols`` and ``--classes``.
"""

from dataclasses import dataclass, field

import numpy as np

__all__ = []

#: Prefixes of a column named after a class: ``<label>``, ``p_<label>``, ...
SCORE_PREFIXES = ("", "p_", "p", "proba_", "prob_", "probability_", "score_")
#: Names of the one score column of a binary problem that name no class.
BINARY_SCORE_NAMES = (
    "score",
    "scores",
    "p",
    "prob",
    "proba",
    "probability",
    "y_score",
    "y_proba",
    "y_prob",
    "logit",
    "decision_function",
)


class DataError(ValueError):
    """A problem with the user's data or options: one line, exit status 1."""


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _py(value):
    """A plain Python value for messages and JSON."""
    return value.item() if isinstance(value, np.generic) else value


def parse_labels(values):
    """Labels as int64 (integer-valued numbers), float64 (other numbers) or
    str; classes sorted numerically when numeric."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        return values.astype(np.int64)
    if values.dtype.kind != "f":
        try:
            values = values.astype(np.float64)
        except ValueError:
            return np.char.strip(values.astype(str))
    if np.all(np.isfinite(values)) and np.all(values == np.round(values)):
        return values.astype(np.int64)
    return values


def _stem_matches(name, label):
    """Whether column ``name`` is named after class ``label``."""
    low = name.lower()
    for prefix in SCORE_PREFIXES:
        if not low.startswith(prefix):
            continue
        stem = name[len(prefix) :]
        if isinstance(label, str):
            if stem == label:
                return True
        elif _is_number(stem) and float(stem) == float(label):
            return True
    return False


def match_columns(names, classes):
    """``{class: column index}`` of the columns named after the classes
    (exact, one column per class), the classes matched twice, and the
    columns matched to a class twice."""
    hits = {}
    for c in classes:
        c = _py(c)
        exact = [i for i, n in enumerate(names) if n == str(c)]
        found = exact or [i for i, n in enumerate(names) if _stem_matches(n, c)]
        if found:
            hits[c] = found
    ambiguous = [c for c, f in hits.items() if len(f) > 1]
    mapping = {c: f[0] for c, f in hits.items() if len(f) == 1}
    used = [i for i in mapping.values()]
    twice = sorted({i for i in used if used.count(i) > 1})
    return mapping, ambiguous, twice


def _parse_classes(spec, labels):
    """``--classes a,b,c`` in the type of the labels."""
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if labels.dtype.kind in "if":
        try:
            return parse_labels(np.array(items)).tolist()
        except ValueError:
            raise DataError(
                f"--classes {spec}: the labels are numbers; give numbers"
            ) from None
    return items


_FIX = "pass --score-cols COLUMNS and --classes LABELS (the class of each column)"


@dataclass
class _Choice:
    """Score columns (file indices) in class order, or one binary column."""

    idx: list
    positive: object = None
    notes: list = field(default_factory=list)


def choose_score_columns(path, names, candidates, classes, opts):
    """Which columns hold which class's score (see the module docstring)."""
    classes = [_py(c) for c in classes]
    if opts.classes is not None:
        given = _parse_classes(opts.classes, np.asarray(classes))
        return _by_classes_option(path, names, candidates, classes, given, opts)
    if not opts.header:
        return _unnamed(path, names, candidates, classes, opts)
    mapping, ambiguous, twice = match_columns([names[i] for i in candidates], classes)
    if ambiguous or twice:
        bad = ambiguous or [names[candidates[i]] for i in twice]
        raise DataError(
            f"{path}: ambiguous score columns for {bad} among "
            f"{[names[i] for i in candidates]}; {_FIX}"
        )
    if len(mapping) == len(classes):
        idx = [candidates[mapping[c]] for c in classes]
        return _Choice(idx, notes=_ignored(names, candidates, idx))
    if len(classes) == 2 and len(mapping) == 1:
        ((pos, j),) = mapping.items()
        notes = [f"score column {names[candidates[j]]!r} is P({pos}) (its name)"]
        _check_positive(path, opts, pos, names[candidates[j]])
        return _Choice(
            [candidates[j]], pos, notes + _ignored(names, candidates, [candidates[j]])
        )
    if mapping:
        missing = [c for c in classes if c not in mapping]
        raise DataError(
            f"{path}: no score column named after classes {missing} (columns "
            f"{[names[i] for i in candidates]}); {_FIX}"
        )
    return _unnamed(path, names, candidates, classes, opts)


def _ignored(names, candidates, idx):
    rest = [names[i] for i in candidates if i not in idx]
    return [f"ignored columns: {', '.join(rest)}"] if rest else []


def _check_positive(path, opts, pos, column):
    if opts.positive_label is not None and str(opts.positive_label) != str(pos):
        raise DataError(
            f"{path}: --positive-label {opts.positive_label} but column {column!r} "
            f"is named after class {pos!r}"
        )


def _positive(path, classes, opts):
    if opts.positive_label is None:
        return classes[1], "the greater label; --positive-label to change"
    for c in classes:
        if str(c) == opts.positive_label.strip() or (
            not isinstance(c, str)
            and _is_number(opts.positive_label)
            and float(opts.positive_label) == c
        ):
            return c, "--positive-label"
    raise DataError(
        f"{path}: --positive-label {opts.positive_label!r} is not a class; "
        f"classes are {classes}"
    )


def _unnamed(path, names, candidates, classes, opts):
    """Columns that name no class: only a headerless file (columns in sorted
    class order) or one binary score column with a generic name decide."""
    cand_names = [names[i] for i in candidates]
    if len(classes) == 2:
        generic = [i for i in candidates if names[i].lower() in BINARY_SCORE_NAMES]
        one = generic if len(generic) == 1 else None
        if (
            one is None
            and (opts.score_cols or not opts.header)
            and len(candidates) == 1
        ):
            one = candidates
        if one is not None:
            pos, why = _positive(path, classes, opts)
            notes = [f"score column {names[one[0]]!r} is P({pos}) ({why})"]
            return _Choice(one, pos, notes + _ignored(names, candidates, one))
    if not opts.header and len(candidates) == len(classes):
        note = f"no header: columns taken as classes in sorted order {classes}"
        return _Choice(list(candidates), notes=[note])
    count = (
        f"{len(candidates)} score columns but {len(classes)} classes {classes}: "
        if len(candidates) != len(classes)
        else ""
    )
    raise DataError(
        f"{path}: {count}cannot tell which column holds which class's score: "
        f"columns {cand_names} are not named after the classes {classes} "
        f"(e.g. {classes[-1]!r}, 'p_{classes[-1]}', 'proba_{classes[-1]}'); {_FIX}"
    )


def _by_classes_option(path, names, candidates, classes, given, opts):
    if sorted(map(str, given)) != sorted(map(str, classes)) or len(set(given)) != len(
        given
    ):
        unknown = [c for c in given if c not in classes]
        raise DataError(
            f"{path}: --classes {given} does not list each class of the labels "
            f"{classes} once" + (f" (unknown {unknown})" if unknown else "")
        )
    if len(candidates) != len(given):
        raise DataError(
            f"{path}: --classes names {len(given)} classes but there are "
            f"{len(candidates)} score columns {[names[i] for i in candidates]}; "
            "pass --score-cols too"
        )
    order = {c: candidates[j] for j, c in enumerate(given)}
    idx = [order[c] for c in classes]
    note = "columns -> classes from --classes"
    return _Choice(idx, notes=[note])
