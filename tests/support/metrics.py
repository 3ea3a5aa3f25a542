"""Reading this process's metrics in tests (prometheus_client's default registry: unit tests run
without PROMETHEUS_MULTIPROC_DIR)."""

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client import REGISTRY

from kourier import metrics
from tests.support.stack import REPO_ROOT


def sample(name: str, **labels: str) -> float:
    """The value of one sample now, 0 when it has not been recorded yet (counters start there)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def run_a_process_that_records(directory: Path, code: str) -> int:
    """Runs ``code`` in a Python process of its own writing into ``directory``; returns its pid."""
    env = {**os.environ, metrics.MULTIPROC_DIR_VARIABLE: str(directory)}
    done = subprocess.run(
        [sys.executable, "-c", f"import os\nfrom kourier import metrics\n{code}\nprint(os.getpid())"],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.strip())
