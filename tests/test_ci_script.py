"""The structure of ``.ci/run`` and of the test extras (issue 31, items 7
and 8): the README's test command installs no torch (pip's default torch is
a CUDA build of several GB), the array-API tests run in their own step with
the ``array-api`` extra, and the coverage table reaches the log."""

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / ".ci" / "run"
TESTS = ROOT / "tests"

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11


def _extras():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def _names(requirements):
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def _ci_text():
    if not CI.exists():
        pytest.skip(".ci/run is not in this checkout")
    return CI.read_text()


def _readme_test_command():
    lines = (ROOT / "README.md").read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if "install and run the tests" in line)
    return lines[i + 1].strip()


def test_the_test_extra_pulls_no_torch():
    extras = _extras()
    for extra in ("test", "docs"):
        assert not {"torch", "array-api-strict"} & _names(extras[extra])
    assert {"torch", "array-api-strict"} <= _names(extras["array-api"])


def test_the_readme_command_is_one_line_of_the_test_extra():
    command = _readme_test_command()
    assert command == 'python -m pip install -e ".[test]" && python -m pytest -q'
    # CI runs it as typed, pip's --quiet aside
    assert command in _ci_text().replace(" --quiet", "")


def _steps(text):
    """``{title: body}`` of the ``step "..."`` sections of .ci/run."""
    parts = re.split(r'^[ ]*step "([^"]*)"$', text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_array_api_tests_run_in_their_own_step_after_the_readme_command():
    steps = _steps(_ci_text())
    titles = list(steps)
    readme = next(t for t in titles if t.startswith("README test command"))
    xp = next(t for t in titles if t.startswith("array-API tests"))
    assert titles.index(xp) > titles.index(readme)
    assert '".[test,array-api]"' in steps[xp]
    assert "array-api" not in steps[readme]
    # the docs build runs the GPU guide's torch examples
    docs = next(t for t in titles if t.startswith("docs build"))
    assert '".[docs,array-api,onnx]"' in steps[docs]
    # the step picks the test files by their import of tests/_xp.py
    assert "_xp import" in steps[xp]


def test_the_onnx_tests_run_in_their_own_step_after_the_array_api_one():
    steps = _steps(_ci_text())
    titles = list(steps)
    xp = next(t for t in titles if t.startswith("array-API tests"))
    export = next(t for t in titles if t.startswith("ONNX export tests"))
    assert titles.index(export) == titles.index(xp) + 1
    assert '".[test,onnx]"' in steps[export]
    assert "tests/export" in steps[export] and "-rs" in steps[export]
    assert "onnx" not in steps[next(t for t in titles if t.startswith("README"))]
    # the extra the step installs
    assert {"onnx", "onnxruntime", "skl2onnx"} <= _names(_extras()["onnx"])


def test_the_engine_tests_run_in_their_own_steps_after_the_onnx_one():
    steps = _steps(_ci_text())
    titles = list(steps)
    export = next(t for t in titles if t.startswith("ONNX export tests"))
    spark = next(t for t in titles if t.startswith("Spark engine tests"))
    ray = next(t for t in titles if t.startswith("Ray engine tests"))
    assert titles.index(export) < titles.index(spark) < titles.index(ray)
    assert '".[test,spark]"' in steps[spark] and "-rs" in steps[spark]
    assert "tests/backends/test_spark.py" in steps[spark]
    assert "openjdk-17-jre-headless" in steps[spark]  # Java where missing
    assert "SKIPPED" in steps[spark]  # says so when the tests skip
    assert '".[test,ray]"' in steps[ray] and "tests/backends/test_ray.py" in steps[ray]
    extras = _extras()
    assert "pyspark" in _names(extras["spark"]) and "ray" in _names(extras["ray"])
    readme = steps[next(t for t in titles if t.startswith("README"))]
    assert "spark" not in readme and "ray" not in readme


#: Files that name torch without asking for it, each with its reason.
NAMES_TORCH_ONLY = {
    "test_import_cost.py": "torch is a module that import skcalib must not load",
}


def _namespace_files():
    """The test files that ask for torch or array-api-strict."""
    pattern = re.compile(r"[\"'](torch|array_api_strict)[\"']")
    return sorted(
        p
        for p in TESTS.rglob("test_*.py")
        if p.name not in NAMES_TORCH_ONLY and pattern.search(p.read_text())
    )


def _named_in_the_xp_step():
    """The test files the array-API step adds by name (``xp_tests+=(...)``)."""
    steps = _steps(_ci_text())
    body = steps[next(t for t in steps if t.startswith("array-API tests"))]
    return [
        word
        for group in re.findall(r"^\s*xp_tests\+=\(([^)]*)\)", body, re.MULTILINE)
        for word in shlex.split(group)
    ]


def test_the_files_named_in_the_xp_step_exist_and_ask_for_torch():
    named = _named_in_the_xp_step()
    assert "tests/export/test_torch.py" in named
    for rel in named:
        path = ROOT / rel
        assert path.is_file(), f".ci/run names {rel}, which does not exist"
        assert path in _namespace_files(), f"{rel} does not ask for torch"
        # named and found by the grep: the step would run it twice
        assert "_xp import" not in path.read_text(), rel


def test_every_file_using_torch_goes_through_the_xp_helpers():
    files = _namespace_files()
    assert files, "no test asks for torch"
    named = {ROOT / rel for rel in _named_in_the_xp_step()}
    for path in files:
        assert "_xp import" in path.read_text() or path in named, (
            f"{path.relative_to(ROOT)} asks for torch or array-api-strict but "
            "neither imports tests/_xp.py nor is named in the array-API step "
            "of .ci/run (xp_tests+=(...)): that step would not run it"
        )


def _pytest_calls(text):
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line for line in joined.splitlines() if "-m pytest" in line]


def test_the_coverage_run_cannot_stop_early():
    # pytest-cov prints no table when the run is interrupted (-x, --maxfail)
    calls = [c for c in _pytest_calls(_ci_text()) if "--cov" in c]
    assert len(calls) == 1
    words = shlex.split(calls[0])
    assert "-x" not in words and "--exitfirst" not in words
    assert not any(w.startswith("--maxfail") for w in words)
    assert any(w.startswith("--cov-report=term") for w in words)
    # only the oldest-versions run skips the slow tests: they run once
    slow = [c for c in _pytest_calls(_ci_text()) if "not slow" in c]
    assert slow == calls
