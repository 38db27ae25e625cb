"""ECE, a conformal threshold and a temperature fit on a Parquet file:
Spark, Dask and in memory.

``python -m benchmarks cluster [--quick] [--n N] [--out DIR]`` (from the
repository root) writes ``cluster.md``:

* a Parquet file of ``--n`` rows (1e7; ``--quick``: 1e5) of ``K = 10``
  classes is written row group by row group (the generated predictions of
  :mod:`benchmarks.bench_large`: float32 logits ``z0..z9``, their softmax
  ``p0..p9``, labels ``y``), never whole in memory;
* **Spark** (``local[2]``): ``spark.read.parquet``, then the confidence ECE
  (15 uniform bins, ``labels=`` given: one pass; 15 equal-mass bins: two
  more, the exact search of the edges), the threshold of
  ``ConformalClassifier()`` (LAC at ``alpha=0.1``: one survey, two passes of
  the exact search) and ``TemperatureCalibrator().fit`` on
  :func:`skcalib.cluster.spark_columns`;
* **Dask** (threads, two workers): ``dask.dataframe.read_parquet`` of the
  same file, as Dask arrays;
* **in memory**: the columns read into numpy arrays with pyarrow.

Reported per engine: wall time and the peak extra resident memory of the
Python driver process during the call (:class:`benchmarks.MemoryProbe`;
Spark's JVM and its Python workers are other processes, not counted), and
the value reached. The driver's memory of Spark and Dask does not grow with
``n``; that of the in-memory path holds the data.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import (
    MemoryProbe,
    environment,
    fmt,
    markdown_table,
    output_dir,
    write_report,
)
from benchmarks.bench_large import labels_block, logits_block

K = 10
BLOCK = 250_000


def write_parquet(path, n):
    """``n`` rows written row group by row group (``BLOCK`` rows each)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    for i, start in enumerate(range(0, n, BLOCK)):
        rows = min(BLOCK, n - start)
        z, y = logits_block(i, rows, K), labels_block(i, rows, K)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        cols = {"y": y.astype(np.int64)}
        cols.update({f"z{k}": z[:, k] for k in range(K)})
        cols.update({f"p{k}": p[:, k].astype(np.float32) for k in range(K)})
        table = pa.table(cols)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


def _names(prefix):
    return [f"{prefix}{k}" for k in range(K)]


def _calls(y, p, z):
    from skcalib import ConformalClassifier, TemperatureCalibrator
    from skcalib.metrics import expected_calibration_error

    labels = np.arange(K)
    return {
        "confidence ECE": lambda: expected_calibration_error(y, p, labels=labels),
        "quantile-bin ECE": lambda: expected_calibration_error(
            y, p, labels=labels, strategy="quantile"
        ),
        "conformal threshold": lambda: (
            ConformalClassifier(classes=labels).fit(p, y).threshold_
        ),
        "temperature fit": lambda: TemperatureCalibrator().fit(z, y).temperature_,
    }


def _run(probe, calls, engine, rows):
    for name, fn in calls.items():
        start = time.perf_counter()
        value, peak = probe.call(fn)
        seconds = time.perf_counter() - start
        rows.append([name, engine, fmt(seconds), fmt(peak / 2**20), repr(value)])


def spark_rows(path, probe, rows):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from skcalib.cluster import spark_columns

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = spark.read.parquet(str(path))
        y, p = spark_columns(df, label="y", proba=_names("p"))
        _, z = spark_columns(df, label="y", proba=_names("z"))
        engine = f"Spark local[2], {df.rdd.getNumPartitions()} partitions"
        _run(probe, _calls(y, p, z), engine, rows)
    finally:
        spark.stop()


def dask_rows(path, probe, rows):
    import dask
    import dask.dataframe as dd

    with dask.config.set(scheduler="threads", num_workers=2):
        # one partition per row group whatever the columns read, so that
        # the three arrays have the same row blocks
        def read(columns):
            df = dd.read_parquet(str(path), columns=columns, split_row_groups=True)
            # dask-expr's lengths=True can count other partitions than the
            # array it builds; the array's own chunk sizes cannot
            return df.to_dask_array().compute_chunk_sizes()

        y, p, z = read(["y"])[:, 0], read(_names("p")), read(_names("z"))
        _run(probe, _calls(y, p, z), "Dask threads (2)", rows)


def memory_rows(path, probe, rows):
    import pyarrow.parquet as pq

    def load():
        t = pq.read_table(path)
        y = t.column("y").to_numpy()
        p = np.column_stack([t.column(c).to_numpy() for c in _names("p")])
        z = np.column_stack([t.column(c).to_numpy() for c in _names("z")])
        return y, p, z

    start = time.perf_counter()
    (y, p, z), peak = probe.call(load)
    rows.append(
        [
            "read into numpy",
            "in memory",
            fmt(time.perf_counter() - start),
            fmt(peak / 2**20),
            "",
        ]
    )
    _run(probe, _calls(y, p, z), "in memory", rows)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks cluster")
    parser.add_argument("--quick", action="store_true", help="n = 1e5")
    parser.add_argument("--n", type=float, default=None, help="rows (1e7)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    n = int(args.n or (1e5 if args.quick else 1e7))
    out = output_dir(args.out, args.quick)
    probe = MemoryProbe()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "predictions.parquet"
        write_parquet(path, n)
        size = path.stat().st_size
        memory_rows(path, probe, rows)
        dask_rows(path, probe, rows)
        spark_rows(path, probe, rows)
    text = "\n".join(
        [
            "# ECE, a conformal threshold and temperature scaling of a Parquet "
            "file: Spark, Dask, in memory",
            "",
            *environment(),
            "",
            f"n = {n:.0e} rows, K = {K} float32 columns of logits and of "
            f"probabilities; Parquet file of {size / 2**20:.0f} MiB. Peak memory: "
            f"{probe.description}, of the Python driver process only.",
            "",
            markdown_table(
                ["call", "engine", "seconds", "driver peak MiB", "value"],
                rows,
                align="llrrl",
            ),
        ]
    )
    path = write_report(out / "cluster.md", text)
    print(text)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
