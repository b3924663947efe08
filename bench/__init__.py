"""Benchmarks: speed targets printed as ratios (never timed asserts). Not part of `make test`."""
