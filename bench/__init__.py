"""Benchmark and test tooling for the judge: a local Bedrock runtime stand-in and the ``make bench`` workload."""
