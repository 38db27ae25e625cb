"""Timestamps of ``--time-col`` (``skcalib report``, ``skcalib monitor``).

ISO 8601 text is read by numpy's ``datetime64`` (an offset such as
``+01:00`` or ``Z`` is converted to UTC); numbers count ``--time-unit``
units since 1970-01-01 UTC. Timestamps must not decrease down the file: the error
names the first line that goes back (rows are never reordered).
"""

import warnings

import numpy as np

from skcalib._report.columns import DataError

__all__ = []

#: Nanoseconds per unit of a numeric time column (``--time-unit``).
TIME_UNITS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def format_time(ns):
    """ISO 8601 of int64 nanoseconds since the epoch, to the second unless
    the value has a finer part."""
    units = (("s", 10**9), ("ms", 10**6), ("us", 10**3))
    unit = next((u for u, size in units if ns % size == 0), "ns")
    return str(np.datetime_as_string(np.datetime64(int(ns), "ns"), unit=unit))


def _numbers(values):
    """float64 of text values, or None when one is not a number."""
    try:
        return np.asarray(values).astype(np.float64)
    except ValueError:
        return None


def _first_bad(values, ok):
    return next(i for i, v in enumerate(values) if not ok(v))


def _is_float(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _from_numbers(numbers, unit, where):
    bad = ~np.isfinite(numbers)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(f"{where(row)}: timestamp {numbers[row]} is not finite")
    scale = TIME_UNITS[unit]
    limit = np.iinfo(np.int64).max / scale
    if numbers.size and np.abs(numbers).max() >= limit:
        row = int(np.argmax(np.abs(numbers)))
        raise DataError(
            f"{where(row)}: timestamp {numbers[row]:g} {unit} is out of the "
            "datetime64[ns] range (years 1678-2262); check --time-unit"
        )
    whole = numbers == np.round(numbers)
    if whole.all() and (numbers.size == 0 or np.abs(numbers).max() < 2.0**53):
        return numbers.astype(np.int64) * scale  # exact
    return np.round(numbers * scale).astype(np.int64)


def _from_iso(values, where):
    with warnings.catch_warnings():
        # numpy converts an offset (+01:00, Z) to UTC and warns that
        # datetime64 keeps no time zone: that is what is wanted here
        warnings.filterwarnings("ignore", "no explicit representation of timezones")
        try:
            ts = np.asarray(values).astype("datetime64[ns]")
        except ValueError:
            ts = None
        if ts is None:
            row = _first_bad(values, _parses)
            raise DataError(
                f"{where(row)}: timestamp {values[row]!r} is neither ISO 8601 "
                "(2024-05-01T13:00:00) nor a number"
            )
    nat = np.isnat(ts)
    if nat.any():
        row = int(np.flatnonzero(nat)[0])
        raise DataError(f"{where(row)}: no timestamp ({values[row]!r})")
    return ts.astype(np.int64)


def _parses(text):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.datetime64(text, "ns")
    except ValueError:
        return False
    return True


def parse_times(values, unit, where, kind=None):
    """``(nanoseconds since the epoch as int64, kind)`` of a time column.

    ``values``: text (a CSV column), numbers or datetime64 (an NPZ array);
    ``where(row)``: the place of a row in messages (``"file, line 12"``);
    ``kind``: ``"number"`` or ``"iso"`` once decided (by the first rows of
    a stream), None to decide from ``values`` (numbers when every value is
    one).
    """
    values = np.asarray(values)
    if values.dtype.kind == "M":
        ts = values.astype("datetime64[ns]")
        if np.isnat(ts).any():
            row = int(np.flatnonzero(np.isnat(ts))[0])
            raise DataError(f"{where(row)}: no timestamp (NaT)")
        return ts.astype(np.int64), "iso"
    if values.dtype.kind in "iufb":
        return _from_numbers(values.astype(np.float64), unit, where), "number"
    numbers = _numbers(values) if kind != "iso" else None
    if kind == "number" and numbers is None:
        row = _first_bad(values, _is_float)
        raise DataError(
            f"{where(row)}: timestamp {values[row]!r} is not a number like those "
            "of the first rows"
        )
    if numbers is not None:
        return _from_numbers(numbers, unit, where), "number"
    return _from_iso(values, where), "iso"


def check_order(ns, last, where, column):
    """Refuse timestamps that go back (``last``: the one before ``ns[0]``)."""
    if last is not None and ns.size and ns[0] < last:
        row, before = 0, last
    else:
        back = np.flatnonzero(np.diff(ns) < 0)
        if not back.size:
            return
        row = int(back[0]) + 1
        before = ns[row - 1]
    raise DataError(
        f"{where(row)}: timestamp {format_time(ns[row])} comes before the one of "
        f"the row above ({format_time(before)}); the rows must be in time order: "
        f"sort the file by {column} first (skcalib does not reorder them)"
    )
