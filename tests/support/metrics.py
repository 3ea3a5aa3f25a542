"""Reading this process's metrics in tests (prometheus_client's default registry: unit tests run
without PROMETHEUS_MULTIPROC_DIR)."""

from prometheus_client import REGISTRY


def sample(name: str, **labels: str) -> float:
    """The value of one sample now, 0 when it has not been recorded yet (counters start there)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0
