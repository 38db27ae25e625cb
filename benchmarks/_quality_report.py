"""Markdown report of the quality benchmark (:mod:`benchmarks.quality`).

The per-family comparison is :mod:`benchmarks.quality_families`; this module
renders the rest: the best method per set, mean ranks, the agreement of the
same method across libraries and the per-set tables.
"""

import numpy as np

from benchmarks import fmt, markdown_table
from benchmarks import quality_choosing as C
from benchmarks import quality_families as F

METRICS = ("NLL", "Brier", "ECE", "cwECE", "acc")


def _param_str(params):
    return ", ".join(f"{k}={fmt(v, 6)}" for k, v in params.items())


def _ranked(results):
    ok = [r for r in results if np.isfinite(r.scores.get("NLL", np.nan))]
    return sorted(ok, key=lambda r: r.scores["NLL"])


def agreement(results):
    """Same method in skcalib and a peer: same fitted parameter / test NLL?"""
    rows = []
    ours = {r.family: r for r in results if r.library == "skcalib" and r.scores}
    for r in results:
        if r.library in ("skcalib", "-") or not r.scores or r.family not in ours:
            continue
        ref = ours[r.family]
        d = r.scores["NLL"] - ref.scores["NLL"]
        shared = [k for k in ref.params if k in r.params]
        pdiff = "; ".join(
            f"{k} {fmt(ref.params[k], 7)} vs {fmt(r.params[k], 7)}" for k in shared
        )
        same = abs(d) <= 1e-6 * max(1.0, abs(ref.scores["NLL"]))
        rows.append(
            (
                ref.label.removeprefix("skcalib "),
                r.label,
                pdiff,
                d,
                "same optimum" if same else "differs",
            )
        )
    return rows


def _command(args):
    parts = ["python -m benchmarks quality"]
    if args.quick:
        parts.append("--quick")
    else:
        parts.append(f"--seeds {args.seeds}")
    if args.only:
        parts.append(f"--only {args.only}")
    if args.peers != "all":
        parts.append(f"--peers {args.peers}")
    if getattr(args, "families", None):
        parts.append(f"--families {args.families}")
    return " ".join(parts)


def render(
    done,
    env,
    notes,
    args,
    elapsed,
    adapters,
    skipped_data,
    fam,
    before,
    *,
    doc,
    excluded,
    raw,
):
    """The report: ``done`` is ``[(dataset, results averaged over seeds)]``,
    ``raw`` the same per seed, ``fam`` the
    :func:`benchmarks.quality_families.compare` rows, ``before``
    ``(summary of an earlier run, its path)`` or ``None``."""
    lines = [
        "# skcalib calibration quality on real predictions",
        "",
        f"Command: `{_command(args)}`; {elapsed / 60:.1f} min in all "
        f"({len(done)} data sets, seeds 0..{args.seeds - 1}).",
        "",
        *([f"Before: {args.note}", ""] if args.note else []),
        *env,
        "",
        "How to read this: each prediction set (a trained model's probabilities on "
        "a test set) is split into a calibration part, on which every calibrator "
        "is fitted, and a test part, on which it is scored. Lower is better for "
        "every score but accuracy. **NLL** is the mean negative log-likelihood "
        "(log loss); **Brier** the squared error summed over classes (halved for "
        "two classes, as `sklearn.metrics.brier_score_loss`); **ECE** the "
        "confidence (top-1) expected calibration error and **cwECE** the classwise "
        "ECE (mean over classes), both with 15 equal-width bins (L1). Methods are "
        "ranked by test NLL, the proper score that rewards both calibration and "
        "sharpness; ECE alone can be gamed (a constant prediction has ECE near 0).",
        "",
        "Protocol:",
        "",
        *_protocol(doc),
        "",
    ]
    if notes:
        lines += ["Peers skipped: " + "; ".join(notes) + ".", ""]
    if skipped_data:
        lines += skipped_data + [""]
    excluded = "; ".join(f"`{k}` ({v})" for k, v in excluded.items())
    lines += [f"Not benchmarked here: {excluded}.", ""]
    lines += F.render_summary(fam, args.seeds)
    if before is not None:
        lines += F.render_before_after(fam, before[0], before[1])
    lines += C.render(raw)
    lines += ["## Summary: best method per data set (by test NLL)", ""]
    summary = []
    for ds, results in done:
        ranked = _ranked(results)
        unc = results[0].scores
        best = ranked[0] if ranked else None
        best_ours = next((r for r in ranked if r.library == "skcalib"), None)
        summary.append(
            [
                ds.name,
                str(ds.k),
                f"{ds.y_cal.size}/{ds.y_test.size}",
                fmt(unc.get("NLL")),
                fmt(unc.get("ECE")),
                best.label if best else "-",
                fmt(best.scores["NLL"]) if best else "-",
                fmt(best.scores["ECE"]) if best else "-",
                best_ours.label.removeprefix("skcalib ") if best_ours else "-",
                fmt(best_ours.scores["NLL"]) if best_ours else "-",
            ]
        )
    lines.append(
        markdown_table(
            [
                "data set",
                "K",
                "cal/test",
                "NLL uncal.",
                "ECE uncal.",
                "best (NLL)",
                "NLL",
                "ECE",
                "best skcalib",
                "its NLL",
            ],
            summary,
            align="lrrrrlrrlr",
        )
    )
    lines += [
        "",
        "## Mean rank by test NLL",
        "",
        "Rank 1 is the lowest test NLL of a data set; a method that did not "
        "run on a data set is left out of that data set's ranks.",
        "",
    ]
    lines.append(_mean_ranks(done))
    lines += [
        "",
        "## Same method, same optimum?",
        "",
        "A peer's implementation of a method skcalib has, fitted on the same "
        "calibration data: the fitted parameters and the difference of test "
        "NLL (peer minus skcalib). Same optimum: |dNLL| <= 1e-6.",
        "",
    ]
    agree_rows = []
    for ds, results in done:
        for ours, peer, pdiff, d, verdict in agreement(results):
            agree_rows.append([ds.name, ours, peer, pdiff or "-", f"{d:+.1e}", verdict])
    lines.append(
        markdown_table(
            [
                "data set",
                "skcalib",
                "peer",
                "parameters (skcalib vs peer)",
                "dNLL",
                "verdict",
            ],
            agree_rows,
            align="llllrl",
        )
    )
    why = {}
    for a in adapters:
        if a.library != "skcalib" and a.why:
            why.setdefault(a.label, a.why)
    if why:
        lines += ["", "Why a peer can differ:", ""]
        lines += [f"- {label}: {text}" for label, text in why.items()]
    lines += [""] + F.render_detail(fam)
    lines += ["## Per data set", ""]
    for ds, results in done:
        seeds = "" if ds.own_split else f", seeds 0..{args.seeds - 1}; scores averaged"
        lines += [
            f"### {ds.name}",
            "",
            f"K={ds.k}; {ds.y_cal.size} calibration rows, {ds.y_test.size} "
            f"test rows ({ds.split}{seeds}).",
            "",
        ]
        ranked = _ranked(results)
        rank = {id(r): i + 1 for i, r in enumerate(ranked)}
        table = []
        for r in ranked + [r for r in results if id(r) not in rank]:
            s = r.scores
            table.append(
                [
                    str(rank.get(id(r), "-")),
                    r.label,
                    *(fmt(s.get(m)) if s else "-" for m in METRICS),
                    _param_str(r.params),
                    "-" if not np.isfinite(r.seconds) else f"{r.seconds:.2f}",
                    r.note,
                ]
            )
        lines.append(
            markdown_table(
                ["rank", "method", *METRICS, "fitted", "fit+predict s", "note"],
                table,
                align="rlrrrrrlrl",
            )
        )
        unc = results[0].scores.get("NLL")
        if ranked:
            best = ranked[0]
            lines += [
                "",
                "Ranking by test NLL: "
                + " < ".join(r.label.removeprefix("skcalib ") for r in ranked[:5])
                + (" < ..." if len(ranked) > 5 else "")
                + f". Best: {best.label} (NLL {fmt(unc)} -> "
                f"{fmt(best.scores['NLL'])}).",
                "",
            ]
    return "\n".join(lines)


def _protocol(doc):
    """The protocol bullets of the quality module's docstring, as markdown."""
    text = doc.split("\n\n")[2]
    items = [" ".join(part.split()) for part in text.split("\n* ")]
    return ["- " + item.removeprefix("* ").replace("``", "`") for item in items]


def _mean_ranks(done):
    ranks = {}
    for group in ("binary", "multiclass"):
        for ds, results in done:
            if (ds.k == 2) != (group == "binary"):
                continue
            for i, r in enumerate(_ranked(results)):
                ranks.setdefault(r.label, {}).setdefault(group, []).append(i + 1)
    rows = []
    for label, g in ranks.items():
        b, m = g.get("binary", []), g.get("multiclass", [])
        rows.append(
            [
                label,
                f"{np.mean(b):.1f}" if b else "-",
                str(len(b)),
                f"{np.mean(m):.1f}" if m else "-",
                str(len(m)),
            ]
        )
    rows.sort(
        key=lambda r: (
            float(r[1]) if r[1] != "-" else (float(r[3]) + 100 if r[3] != "-" else 1e9)
        )
    )
    return markdown_table(
        [
            "method",
            "mean rank, binary",
            "data sets",
            "mean rank, multiclass",
            "data sets",
        ],
        rows,
        align="lrrrr",
    )


def print_summary(fam):
    """The family summary table, printed as plain text."""
    cells = [F.SUMMARY_HEADERS, *F.summary_cells(F.summary(fam))]
    widths = [max(len(r[j]) for r in cells) for j in range(len(cells[0]))]
    print("\nour default against the best peer, per family (test NLL):")
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
