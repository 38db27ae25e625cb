"""Figures and the self-contained HTML page of ``skcalib report``.

matplotlib is imported only here, inside functions; the HTML page has its
images inlined (``data:image/png;base64``), no script, style sheet or font
from the network.
"""

import base64
import html
import io

import numpy as np

__all__ = []

MATPLOTLIB_HINT = (
    "matplotlib is not installed: no reliability diagram (pip install skcalib[plot])"
)


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from skcalib.plotting import ReliabilityDisplay
    except ImportError:
        return None, None
    return plt, ReliabilityDisplay


def reliability_png(y, probas, names, title, figsize=(6, 7), dpi=150):
    """PNG bytes of the reliability diagram of ``names`` overlaid, or None
    without matplotlib."""
    plt, display = _pyplot()
    if plt is None:
        return None
    classes = np.unique(y)
    fig, ax = plt.subplots(figsize=figsize)
    try:
        for name in names:
            label = name if name == "uncalibrated" else f"{name} (out of fold)"
            # the confidence curve: its legend ECE is the table's "ece" column
            display.from_predictions(
                y,
                probas[name],
                labels=classes,
                kind="confidence",
                ax=ax,
                name=label,
                show_histogram=True,
            )
        ax.set_title(title)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return buf.getvalue()


def _window_x(summary):
    """The middle and the end of each window (rows, or datetime64 for time
    windows), and the place of the alarm."""
    rows, alarm = summary["rows"], summary["alarm"]
    if summary["window_unit"] == "rows":
        start = np.array([r["start"] for r in rows], dtype=float)
        end = np.array([r["end"] for r in rows], dtype=float)
        at = None if alarm is None else alarm["rows"]
        return (start + end) / 2, end, at, "rows read"
    start = np.array([r["start"] for r in rows], dtype="datetime64[ns]")
    end = np.array([r["end"] for r in rows], dtype="datetime64[ns]")
    at = None
    if alarm is not None:
        at = np.datetime64(alarm["time"] or alarm["window_end"], "ns")
    return start + (end - start) // 2, end, at, "time (UTC)"


def over_time_png(summary, title, figsize=(8, 5.5), dpi=100):
    """PNG bytes of the ECE per window with its interval and, below, the
    e-process against 1/alpha, the alarm as a vertical line; None without
    matplotlib."""
    plt, _ = _pyplot()
    if plt is None:
        return None
    rows = summary["rows"]

    def values(key):
        return np.array([np.nan if r[key] is None else r[key] for r in rows])

    x, x_end, at, xlabel = _window_x(summary)
    fig, (ax, ax_e) = plt.subplots(2, 1, figsize=figsize, sharex=True)
    try:
        ax.fill_between(
            x, values("ece_low"), values("ece_high"), alpha=0.25, label="95% interval"
        )
        ax.plot(x, values("ece"), "o-", ms=3, label="ECE per window")
        ax.set_ylabel("confidence ECE")
        ax.set_title(title)
        ax_e.semilogy(
            x_end, values("e_value"), ".-", color="0.3", label="e-value (window end)"
        )
        ax_e.axhline(
            1 / summary["alpha"],
            ls="--",
            color="tab:red",
            lw=1,
            label=f"1/alpha = {1 / summary['alpha']:g}",
        )
        ax_e.set_ylabel("e-value (log)")
        ax_e.set_xlabel(xlabel)
        if at is not None:
            for a in (ax, ax_e):
                a.axvline(at, color="tab:red", lw=1.5, label="alarm")
        ax.legend(
            title="the model's own (uncalibrated) probabilities",
            fontsize="small",
            title_fontsize="small",
        )
        ax_e.legend(fontsize="small")
        if summary["window_unit"] == "time":
            fig.autofmt_xdate()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return buf.getvalue()


def section(title, rows, columns, cells, lines=(), images=()):
    """One more section of the page: a heading, a table, paragraphs (the
    alarm line, a legend) and figures ``[(caption, png)]``."""
    figs = "".join(
        '<figure><img alt="{0}" src="data:image/png;base64,{1}">'
        "<figcaption>{0}</figcaption></figure>".format(
            html.escape(caption), base64.b64encode(png).decode("ascii")
        )
        for caption, png in images
    )
    text = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return f"<h2>{html.escape(title)}</h2>\n{_table(rows, columns, cells)}\n{text}" + (
        f'<div class="figs">{figs}</div>' if figs else ""
    )


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tr.best { background: #e8f4e8; font-weight: bold; }
.figs { display: flex; flex-wrap: wrap; gap: 1em; }
.figs figure { margin: 0; }
.figs img { max-width: 520px; width: 100%; }
.rec { background: #f4f4fa; padding: 0.8em 1em; border-left: 4px solid #557; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dt { font-weight: bold; }
dd { margin: 0; }
"""


def _table(rows, columns, cells):
    head = "".join(f"<th>{html.escape(title)}</th>" for _, title in columns)
    body = []
    for row in rows:
        cls = ' class="best"' if row.get("best") else ""
        tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells(row))
        body.append(f"<tr{cls}>{tds}</tr>")
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _summary(meta):
    items = [
        ("source", meta["source"]),
        ("rows", str(meta["n_samples"])),
        ("classes", ", ".join(map(str, meta["classes"]))),
        ("score type", f"{meta['score_type']} ({meta['score_type_reason']})"),
        (
            "class mapping",
            "; ".join(f"{k} ← {v}" for k, v in meta["class_columns"].items()) or "—",
        ),
        (
            "cross-fitting",
            f"{meta['cv']} stratified folds, random_state {meta['random_state']}",
        ),
    ]
    items += [("note", n) for n in meta.get("notes", [])]
    return (
        "<dl>"
        + "".join(
            f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in items
        )
        + "</dl>"
    )


def html_page(meta, rows, columns, cells, legend, recommendation, images, sections=()):
    """The report as one HTML document (str). ``images``: ``[(caption,
    png bytes)]``; ``sections``: HTML of more sections (:func:`section`),
    after the calibrators."""
    figs = "".join(
        '<figure><img alt="{0}" src="data:image/png;base64,{1}">'
        "<figcaption>{0}</figcaption></figure>".format(
            html.escape(caption), base64.b64encode(png).decode("ascii")
        )
        for caption, png in images
    )
    if not images:
        figs = f"<p>{html.escape(MATPLOTLIB_HINT)}</p>"
    legend_html = (
        "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in legend) + "</ul>"
    )
    title = f"Calibration report: {meta['source']}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{_CSS}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<h2>Recommendation</h2>
<p class="rec">{html.escape(recommendation)}</p>
<h2>Data</h2>
{_summary(meta)}
<h2>Calibrators (scores out of fold)</h2>
{_table(rows, columns, cells)}
{legend_html}
{"".join(sections)}
<h2>Reliability diagrams</h2>
<div class="figs">{figs}</div>
<p><small>skcalib {html.escape(meta.get("skcalib_version", ""))}</small></p>
</body></html>
"""
