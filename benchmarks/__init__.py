"""recallmesh benchmarks (the numbers in benchmarks/reports come from here), by job:

harness/      `python -m benchmarks run|compare|diff|configs` and the helpers every script shares
quality/      retrieval quality from the harness's results: headline, report header, relabel,
              concept-name similarity
performance/  latency and throughput through the real services
replay/       candidate pools dumped once through the stack, replayed with the gateway's code
"""
