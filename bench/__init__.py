"""Benchmarks that guard the plugin's stated targets (see bench/README.md); run each as a module
from the repository root, e.g. `python -m bench.turn_overhead [--quick]` (see bench/harness.py)."""
