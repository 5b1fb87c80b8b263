"""Benchmarks: each script prints a side-by-side table (docs/performance.md)."""
