"""Split the wide Markdown tables of a benchmark report so that each fits the
text column of the documentation (pure Python, no Sphinx: tested alone).

A report under ``benchmarks/results/`` is written for a terminal or a wide
screen; a per-data-set table of ten columns there is about 1100 px wide in a
text column of about 640 px. :func:`split_wide_tables` estimates the width
of each pipe table as a browser lays it out at its narrowest (every cell
wrapped at its spaces, so a column is as wide as its longest word) and
splits a table wider than the column into several: each part repeats the
columns that name a row (:func:`key_columns`) and takes as many of the other
columns, in their order, as fit. Rows, cells and column order are kept; a
table that fits is left as it is.
"""

import re

#: Width of the text column of a page with the "On this page" sidebar, at
#: the 1280 px window of ``.ci/check_docs_site.py``, in px (measured).
COLUMN_PX = 645
#: Width of one character and the horizontal padding of one cell of a
#: report table (``table.skcalib-report`` in ``_static/skcalib.css``: 0.8em
#: type), in px. Measured in Chromium on the 107 tables of the built
#: benchmark page: a table is at most 6.6 px a character of its columns'
#: longest words plus 20 px a column (least squares: 6.4 and 19.4); 3 px a
#: column more for a margin.
CHAR_PX = 6.6
CELL_PX = 23.0
#: The most columns repeated in every part of a split table.
MAX_KEY_COLUMNS = 2

_SPLIT_CELLS = re.compile(r"(?<!\\)\|")
_DELIMITER_CELL = re.compile(r"^\s*:?-{3,}:?\s*$")
_MARKUP = re.compile(r"\*\*|__|`|(?<!\w)\*|\*(?!\w)")


def _cells(line):
    """The cells of a pipe-table row (leading and trailing ``|`` dropped)."""
    text = line.strip()
    text = text[1:] if text.startswith("|") else text
    text = text[:-1] if text.endswith("|") and not text.endswith("\\|") else text
    return [cell.strip() for cell in _SPLIT_CELLS.split(text)]


def _is_row(line):
    return line.lstrip().startswith("|")


def _is_delimiter(line):
    return _is_row(line) and all(_DELIMITER_CELL.match(c) for c in _cells(line))


def _row(cells):
    return "| " + " | ".join(cells) + " |"


def column_px(cells, char_px=CHAR_PX, cell_px=CELL_PX):
    """The narrowest width of a column: its longest word (text between
    spaces, Markdown emphasis and code marks left out) plus the padding."""
    words = [w for cell in cells for w in _MARKUP.sub("", cell).split()]
    return char_px * max((len(w) for w in words), default=0) + cell_px


def key_columns(delimiter, widths, column):
    """The columns that name a row, repeated in every part of a split
    table: the first left-aligned (text) column, and the text column right
    after it when both fit the ``column`` with the widest other column
    (``rank | method | NLL``: method; ``family | data set | K``: family and
    data set; ``data set | K``: data set). A numeric column before them
    (``rank``) goes to the first part only."""
    left = [not c.strip().endswith(":") for c in delimiter]
    first = left.index(True) if True in left else 0
    keys = [first]
    second = first + 1
    if second < len(left) and left[second] and len(keys) < MAX_KEY_COLUMNS:
        others = [w for j, w in enumerate(widths) if j not in (first, second)]
        if widths[first] + widths[second] + max(others, default=0) <= column:
            keys.append(second)
    return keys


def split_table(lines, column=COLUMN_PX, char_px=CHAR_PX, cell_px=CELL_PX):
    """The lines of one pipe table (header, delimiter, rows) as one or more
    tables, separated by blank lines, each at most ``column`` px wide where
    the key columns and one other column fit; each part keeps the order of
    the columns."""
    rows = [_cells(line) for line in lines]
    n_cols = len(rows[1])
    rows = [(r + [""] * n_cols)[:n_cols] for r in rows]
    widths = [column_px([r[j] for r in rows], char_px, cell_px) for j in range(n_cols)]
    if sum(widths) <= column:
        return list(lines)
    keys = key_columns(rows[1], widths, column)
    key_px = sum(widths[j] for j in keys)
    groups, current, used = [], [], key_px
    for j in range(n_cols):
        if j in keys:
            continue
        if current and used + widths[j] > column:
            groups.append(current)
            current, used = [], key_px
        current.append(j)
        used += widths[j]
    groups.append(current)
    out = []
    for group in groups:
        keep = sorted(keys + group)
        if out:
            out.append("")
        out += [_row([r[j] for j in keep]) for r in rows]
    return out


def split_wide_tables(markdown, column=COLUMN_PX, char_px=CHAR_PX, cell_px=CELL_PX):
    """``markdown`` with every pipe table wider than ``column`` px split by
    :func:`split_table`; everything else as it was."""
    lines = markdown.splitlines()
    out, i = [], 0
    while i < len(lines):
        if _is_row(lines[i]) and i + 1 < len(lines) and _is_delimiter(lines[i + 1]):
            j = i + 2
            while j < len(lines) and _is_row(lines[j]):
                j += 1
            out += split_table(lines[i:j], column, char_px, cell_px)
            i = j
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out) + ("\n" if markdown.endswith("\n") else "")
