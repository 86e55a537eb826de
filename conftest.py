"""The test suites' shared fixtures (tests/fixtures.py), for the product's tests (tests/) and the
lab's (benchmarks/tests/) alike: one embedded Postgres and one stack per session."""

pytest_plugins = ["tests.fixtures"]
