#!/usr/bin/env bash
# The device check of issue 18: run once on a machine with a CUDA GPU, from
# the repository root (about 5-8 minutes on an H200):
#
#     OUT=/some/folder bash benchmarks/device_check.sh
#
# 1. a virtual environment ($VENV, default /tmp/skcalib-venv-gpu) that sees
#    the packages of the machine's python3 (its CUDA build of torch, numpy,
#    scipy, scikit-learn, pytest; through a .pth file, as python3 may itself
#    be a venv), with skcalib installed editable from this tree;
# 2. the CUDA cases of tests/test_array_api.py (-k cuda);
# 3. python -m benchmarks.bench_gpu --out $OUT/gpu (writes $OUT/gpu/gpu.md;
#    copy it to benchmarks/results/gpu.md).
#
# Needs: python3 >= 3.10 with a CUDA build of torch >= 2.3 that sees the GPU,
# numpy, scipy >= 1.14, scikit-learn >= 1.8, threadpoolctl, pytest and
# setuptools >= 64 (for the editable install). Do not install torch==2.13.0
# from this project's CPU wheel there: it would replace the CUDA build.
# Offline machines: `pip install -e ".[test]"` is tried with --no-index
# (and --find-links .whl when a .whl/ folder of carried wheels exists); when
# some test extra is missing (array-api-strict, numpydoc, betacal, mapie,
# dask, distributed, hypothesis, numba are not all there), skcalib is
# installed alone (--no-deps) and the missing modules are listed: the CUDA
# tests and the benchmark need none of them. Each step prints its status;
# the script goes on after a failed step and exits with the number of
# failed steps. Here (no GPU), to try the steps on an existing environment:
#     REUSE_VENV=1 VENV=/path/to/venv OUT=/tmp/dc bash benchmarks/device_check.sh
set -u
OUT=${OUT:-/tmp/skcalib-device-check}
PY=${PYTHON:-python3}
VENV=${VENV:-/tmp/skcalib-venv-gpu}
export SCIPY_ARRAY_API=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
mkdir -p "$OUT/gpu"
failed=0
step() {  # step NAME COMMAND...: run it, print its status
    local name=$1 t0=$SECONDS rc
    shift
    echo "=== $name"
    "$@"
    rc=$?
    echo "=== $name: $([ $rc -eq 0 ] && echo ok || echo "FAILED (rc=$rc)") in $((SECONDS - t0)) s"
    [ $rc -eq 0 ] || failed=$((failed + 1))
    return $rc
}

install() {
    if [ "${REUSE_VENV:-0}" = 1 ] && [ -x "$VENV/bin/python" ]; then
        echo "REUSE_VENV=1: using $VENV as it is"
        return 0
    fi
    "$PY" -m venv --without-pip "$VENV" || return 1  # pip: the host's
    # python3 may itself be a venv (/opt/torch/.venv on the H200 image), whose
    # packages `venv --system-site-packages` would not see: a .pth adds them.
    "$PY" -c 'import site, sys; print("\n".join(site.getsitepackages()))' \
        > "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/_host_site.pth" \
        || return 1
    local links=()
    [ -d .whl ] && links=(--find-links .whl)
    "$VENV/bin/python" -m pip install -q --no-index --no-build-isolation \
        "${links[@]}" -e ".[test]" && return 0
    echo "the test extra is not all installable here; skcalib alone (--no-deps)"
    "$VENV/bin/python" -m pip install -q --no-index --no-deps \
        --no-build-isolation -e . && return 0
    echo "no editable install either: skcalib from the tree (PYTHONPATH=$PWD)"
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
}

report_env() {
    "$VENV/bin/python" - <<'EOF'
import importlib, platform
print("python", platform.python_version())
missing = []
for name in ["torch", "numpy", "scipy", "sklearn", "threadpoolctl", "pytest",
             "array_api_strict", "hypothesis", "pandas", "numba", "dask",
             "distributed", "numpydoc", "betacal", "mapie", "matplotlib"]:
    try:
        mod = importlib.import_module(name)
        print(f"  {name} {getattr(mod, '__version__', '?')}")
    except Exception as exc:
        missing.append(f"{name} ({type(exc).__name__})")
print("missing:", ", ".join(missing) or "none")
import torch
print("cuda available:", torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
import skcalib, skcalib.metrics
print("skcalib", skcalib.__version__, "from", skcalib.__file__)
raise SystemExit(0 if torch.cuda.is_available() else 3)
EOF
}

cuda_tests() {
    timeout 240 "$VENV/bin/python" -m pytest -q -p no:randomly tests/test_array_api.py \
        -k cuda -rs 2>&1 \
        | tee "$OUT/gpu/test_array_api_cuda.log"
    return "${PIPESTATUS[0]}"
}

bench() {
    # BENCH_ARGS: e.g. --quick, to try the script on a machine without a GPU
    timeout 420 "$VENV/bin/python" -m benchmarks.bench_gpu --out "$OUT/gpu" \
        ${BENCH_ARGS:-} 2>&1 \
        | tee "$OUT/gpu/bench_gpu.log"
    return "${PIPESTATUS[0]}"
}

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
step "install skcalib into $VENV" install || { echo "cannot go on"; exit 1; }
step "environment" report_env
step "CUDA cases of tests/test_array_api.py" cuda_tests
step "benchmarks/bench_gpu.py --out $OUT/gpu" bench
echo "failed steps: $failed; results in $OUT/gpu"
exit "$failed"
