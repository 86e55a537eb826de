"""The retrieval benchmark harness (`python -m benchmarks run|compare|diff|configs`) and the
helpers every benchmark script shares (script: comma-separated arguments, a timed stack start,
the machine; stats: percentile, bootstrap; load: asyncio gateway clients that count every
status code, window summaries, the lost-write check, process and Postgres samples)."""
