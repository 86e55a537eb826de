"""The retrieval benchmark harness: `python -m benchmarks run|compare`."""
