# recallmesh developer entry points. Every target installs what it needs into .venv.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(VENV)/bin/pip
STAMP   = $(VENV)/.installed

.PHONY: run test install protos check-protos lint-protos lint bench-lexical-latency clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

## Start the whole stack on the embedded Postgres, load the demo memories, serve on localhost:50051.
run: $(STAMP)
	$(VENV)/bin/recallmesh up --demo

## Regenerate the Python stubs from protos/ (committed under recallmesh/v1).
protos: $(STAMP)
	$(PY) -m grpc_tools.protoc -Iprotos --python_out=. --pyi_out=. --grpc_python_out=. protos/recallmesh/v1/*.proto

lint-protos: $(STAMP)
	$(VENV)/bin/buf lint

lint: $(STAMP)
	$(VENV)/bin/ruff check .

## The whole suite: proto lint, code lint, unit + integration tests (real Postgres, real gRPC).
test: $(STAMP)
	$(VENV)/bin/buf lint
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q

## p50/p95/p99 of ~1,000 sequential lexical recalls on the demo set (starts its own stack).
bench-lexical-latency: $(STAMP)
	$(PY) -m benchmarks.lexical_latency

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info
