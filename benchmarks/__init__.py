"""recallmesh benchmarks (the numbers in benchmarks/reports come from here), by job:

harness/      `python -m benchmarks run|compare|diff|configs` and the helpers every script shares
quality/      retrieval quality from the harness's results: headline, report header, relabel,
              concept-name similarity
performance/  latency and throughput through the real services
replay/       candidate pools dumped once through the stack, replayed with the gateway's code
behaviour/    the behaviour suite and the leak benchmark: cases stored into a stack and asked
datasets/     extra retrieval sets in the harness's shape, committed with their licences
reports/      the committed reports
tests/        the lab's own tests (unit, integration), run by `make test`

A project of its own (pyproject.toml here: recallmesh-lab), run from the repository's root.
"""
