"""One local Spark session (``local[2,2]``: two cores, a failed task retried
once) and one local Ray (two CPUs) for the engine tests, each started at the
first test that needs it and stopped at the end of the session. Each skips,
saying why, when its extra or Java is missing. Fixtures of
``tests/conftest.py`` (imported there): a ``conftest.py`` of its own in
``tests/backends/`` collided with the root one under ``--doctest-modules``
on the oldest versions (pytest's "import file mismatch")."""

import os
import shutil
import sys

import pytest


def _java_missing():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return (
            "Java is not installed (Spark needs a JVM: "
            "apt-get install openjdk-17-jre-headless)"
        )
    return None


@pytest.fixture(scope="session")
def spark():
    """A ``SparkSession`` on ``local[2,2]`` (no UI, 8 shuffle partitions)."""
    pytest.importorskip(
        "pyspark", reason="the spark extra is not installed: pip install -e '.[spark]'"
    )
    pytest.importorskip("pyarrow")
    if (why := _java_missing()) is not None:
        pytest.skip(why)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("skcalib-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray with two CPUs (no dashboard); the workers import this
    checkout's skcalib."""
    ray = pytest.importorskip(
        "ray", reason="the ray extra is not installed: pip install -e '.[ray]'"
    )
    pytest.importorskip("ray.data")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    try:
        yield ray
    finally:
        ray.shutdown()
