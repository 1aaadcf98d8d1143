"""Benchmarks that guard the plugin's stated targets: see bench/README.md."""
