"""Benchmarks, run on demand (not part of the test suite); see docs/performance.md."""
