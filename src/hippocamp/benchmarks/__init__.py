"""Benchmarks as plug-ins: what a suite is, how its runs are scored and reported.

Each benchmark is one class registered under kind ``benchmark`` (`hippocamp.registry`) that follows
`Benchmark`: HippoCamp (`benchmarks.hippocamp`: file profiles, synthetic profiles, imported releases)
and P-ContextBench (`benchmarks.pcontext`: personas' app logs). The runner, scoring, reports and the
CLI ask the registry; none of them names a benchmark.
"""

from hippocamp.benchmarks.base import Benchmark, get_benchmark

__all__ = ["Benchmark", "get_benchmark"]
