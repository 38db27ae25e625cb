"""
===================================
The ``skcalib report`` command
===================================

``python -m skcalib report`` is skcalib's main job from the command line: it
reads a predictions file (labels and scores, CSV or NPZ), or uses built-in
predictions when none is given, fits every calibrator with cross-validation,
prints a table (ECE with its confidence interval, MCE, Brier score, NLL,
accuracy and fit time per method) and writes a reliability diagram and a
JSON file of the numbers.

This example runs the command in a fresh folder, exactly as you would in a
terminal, shows what it prints and the figure it writes.
"""

# %%
# Run it
# ------
# ``sys.executable -m skcalib`` is the same Python that runs this example.
# ``--out .`` writes the files into the working directory, a temporary folder
# here; ``--quiet`` drops the progress lines.
import json
import subprocess
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path

import matplotlib.pyplot as plt

arguments = ["report", "--out", ".", "--quiet"]
workdir = Path(tempfile.mkdtemp(prefix="skcalib-report-"))

if find_spec("skcalib.__main__") is None:
    # Documentation built from a version without the command: say so instead
    # of failing.
    print("This skcalib has no `python -m skcalib report` command.")
    completed = None
else:
    completed = subprocess.run(
        [sys.executable, "-m", "skcalib", *arguments],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    print("$ python -m skcalib", *arguments)
    print(completed.stdout)
    if completed.returncode != 0:
        print(completed.stderr)
        code = completed.returncode
        raise RuntimeError(f"the report command failed (exit code {code})")

# %%
# What it wrote
# -------------
# The reliability diagram of every method, and the same numbers as the table
# in machine-readable form.
written = sorted(p for p in workdir.rglob("*") if p.is_file())
for path in written:
    print(path.relative_to(workdir))

figures = [p for p in written if p.suffix == ".png"]
if figures:
    image = plt.imread(figures[0])
    height, width = image.shape[:2]
    fig = plt.figure(figsize=(8, 8 * height / width))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.imshow(image)
    ax.set_axis_off()
    plt.show()

for path in written:
    if path.suffix == ".json":
        report = json.loads(path.read_text())
        rows = report.get("rows") if isinstance(report, dict) else None
        if isinstance(rows, list) and len(rows) > 1:  # show one row only
            report["rows"] = [rows[0], f"... and {len(rows) - 1} more rows"]
        print(path.name + ":")
        print(json.dumps(report, indent=2))

# %%
# The method marked ``*`` has the lowest out-of-fold log-loss: every score in
# the table is computed on folds the calibrator was not fitted on.
#
# Options
# -------
# Your own predictions file, a subset of methods, the folds, the output
# format:
if completed is not None:
    usage = subprocess.run(
        [sys.executable, "-m", "skcalib", "report", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    print(usage.stdout)
