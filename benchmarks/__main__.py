"""``python -m benchmarks {speed,quality,...} [options]`` (run from the repo root)."""

import sys

USAGE = """\
usage: python -m benchmarks COMMAND [options]

commands: speed, quality, auto, large, large-fit, conformal, report,
  regularisation, isotonic-ranking, decisions, gpu, smooth-ece,
  calibration-tests, ece-speed, vector-scaling, cross-conformal, prior-shift,
  cold-start, references, partial-fit, monitor, export, monitor-cli,
  multilabel, shift-conformal, risk-control, cluster

  speed    time skcalib's calibrators and metrics against sklearn, netcal,
           torchmetrics, ... (writes speed.md)
  quality  fit every calibrator on the real predictions in shared/data and
           score it on held-out rows over 5 split seeds (--seeds N); per
           method family, our default against the best peer and the
           uncalibrated model (writes quality.md)
  auto     AutoCalibrator against uncalibrated and every single candidate
           on the real predictions (writes auto.md)
  large    confidence ECE of 1e8 generated predictions through Dask, and
           Dask against in memory at 1e7 (writes large.md; needs the dask extra)
  large-fit  temperature scaling fitted on 1e8 generated logits through Dask,
           and Dask against in memory at 1e7 (writes large_fit.md)
  conformal  coverage and set size of ConformalClassifier over random splits
           of the real predictions, and its speed (writes conformal.md)
  report   python -m skcalib report on a generated 1e6-row, 10-class CSV:
           reading time, whole run and peak memory (prints; --before DIR
           compares with an older skcalib)
  regularisation  matrix scaling and Dirichlet: cold, warm-started and
           cross-validated fits of the regularisation path, and held-out NLL
           of the default strengths on every real set (prints)
  isotonic-ranking  ROC-AUC and NLL of centered against plain isotonic on
           the real binary sets (prints)
  decisions  expected cost of Bayes decisions (with an abstain option)
           before and after calibration on real sets (writes decisions.md)
  gpu      numpy on the CPU against torch on the GPU (or torch on the CPU
           where no GPU is): temperature fit, ECE, vector scaling
  smooth-ece  smooth ECE against relplot's smECE at n = 1e6 (prints)
  calibration-tests  Spiegelhalter, Hosmer-Lemeshow, KS and Kuiper tests at
           n = 1e6 against MAPIE's (prints)
  ece-speed  confidence and classwise ECE at 1e7 x 10 and 1e6 x 100 against
           P.sum(), P.max(axis=1) and torchmetrics, numba on and off (prints)
  vector-scaling  vector scaling fit at 1e6 x 100 float32 beside the
           temperature fit, with the NLL reached (writes vector_scaling.md)
  cross-conformal  CrossConformalClassifier (CV+) against the split mode
           and MAPIE's cross-conformal sets: coverage, size, speed (prints)
  prior-shift  EM and BBSE prior-shift adaptation after no calibration,
           temperature, BCTS and vector scaling on label-shifted splits of
           real sets: target NLL, accuracy, prior error (writes prior_shift.md)
  cold-start  first calls of every metric and calibrator in fresh processes
           (cold and warm numba cache, numba absent), import skcalib against
           import sklearn, and the score cache in a wrapper-mode grid
           (writes cold_start.md)
  references  published numbers that shared/data lets us recompute
           (papers, the data README, the authors' code): published | ours |
           difference | tolerance; exits 1 when a row drifts (writes
           references.md)
  partial-fit  partial_fit over 100 batches against one fit on their
           concatenation at 1e6 rows: time ratio and NLL difference for the
           five calibrators with partial_fit (writes partial_fit.md)
  monitor  CalibrationMonitor: false alarms on calibrated streams looked at
           after every batch against a repeated Hosmer-Lemeshow test, power
           and delay after a temperature jump, peak memory at 1e6 and 1e7
           rows (writes monitor.md and monitor_false_alarms.png)
  export   the exported ONNX graphs (skcalib.export.to_onnx) in onnxruntime
           against predict_proba at 1e5 rows: milliseconds, ratio, model
           size, largest difference (writes export.md; needs the onnx extra)
  monitor-cli  skcalib monitor (the command, reading the log in chunks) on
           generated logs of 1e5 and 1e6 rows (--max-rows 1e7 adds 1e7): file
           size, wall time and peak memory, which does not grow with the rows
           (prints; --out DIR writes monitor_cli.md)
  multilabel  MultiLabelCalibrator (per-label Platt, isotonic, temperature;
           shared temperature) on make_multilabel_classification: held-out
           macro NLL and Brier, and fit time against a loop of sklearn's
           CalibratedClassifierCV over the labels (writes multilabel.md)
  shift-conformal  coverage and set size of plain and weighted conformal
           sets under label shift (CIFAR-10, true and estimated priors) and
           covariate shift (Gaussian tilt, true and estimated ratios) over
           200 splits, and predict_set time (writes shift_conformal.md)
  risk-control  ConformalRiskController: realised FNR of multi-label sets and
           miscoverage over random calibration/test splits, set sizes against
           naive per-label thresholds, fit time (writes risk_control.md)
  cluster  confidence ECE and a temperature fit on a Parquet file of 1e7 rows
           through Spark (local[2]), Dask and in memory: seconds and the
           driver's peak memory (writes cluster.md; needs the spark extra)

Each command has --help. Full runs write benchmarks/results/; --quick runs
write to a temporary folder unless --out is given."""


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "speed":
        from benchmarks.speed import main as run
    elif command == "quality":
        from benchmarks.quality import main as run
    elif command == "auto":
        from benchmarks.bench_auto import main as run
    elif command == "large":
        from benchmarks.bench_large import main as run
    elif command == "large-fit":
        from benchmarks.bench_large_fit import main as run
    elif command == "conformal":
        from benchmarks.bench_conformal import main as run
    elif command == "report":
        from benchmarks.bench_report import main as run
    elif command == "regularisation":
        from benchmarks.bench_regularisation import main as run
    elif command == "isotonic-ranking":
        from benchmarks.bench_isotonic_ranking import main as run
    elif command == "decisions":
        from benchmarks.bench_decisions import main as run
    elif command == "gpu":
        from benchmarks.bench_gpu import main as run
    elif command == "ece-speed":
        from benchmarks.bench_ece_speed import main as run
    elif command == "vector-scaling":
        from benchmarks.bench_vector_scaling import main as run
    elif command == "smooth-ece":
        from benchmarks.bench_smooth_ece import main as run
    elif command == "calibration-tests":
        from benchmarks.bench_calibration_tests import main as run
    elif command == "cross-conformal":
        from benchmarks.bench_cross_conformal import main as run
    elif command == "prior-shift":
        from benchmarks.bench_prior_shift import main as run
    elif command == "cold-start":
        from benchmarks.bench_cold_start import main as run
    elif command == "references":
        from benchmarks.bench_references import main as run
    elif command == "partial-fit":
        from benchmarks.bench_partial_fit import main as run
    elif command == "monitor":
        from benchmarks.bench_monitor import main as run
    elif command == "export":
        from benchmarks.bench_export import main as run
    elif command == "monitor-cli":
        from benchmarks.bench_monitor_cli import main as run
    elif command == "multilabel":
        from benchmarks.bench_multilabel import main as run
    elif command == "shift-conformal":
        from benchmarks.bench_shift_conformal import main as run
    elif command == "risk-control":
        from benchmarks.bench_risk_control import main as run
    elif command == "cluster":
        from benchmarks.bench_cluster import main as run
    else:
        print(f"unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    sys.exit(main())
