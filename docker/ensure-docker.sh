#!/bin/sh
# Make sure a Docker engine answers: install Debian's docker.io (and debootstrap, for the local
# base image) when missing, start dockerd in the background when it is not running. Idempotent.
# Installing and starting the daemon need root; without root, an engine must already be running.
set -eu

LOG=${DOCKERD_LOG:-/var/log/recallmesh-dockerd.log}

if docker info >/dev/null 2>&1; then
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "docker/ensure-docker.sh: no Docker engine answers and this is not root;" >&2
    echo "  start dockerd (or run as root so that it is installed and started here)." >&2
    exit 1
fi

missing=""
command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
if [ -n "$missing" ]; then
    echo "installing:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
    echo "starting dockerd (log: $LOG)"
    nohup dockerd >"$LOG" 2>&1 &
fi
i=0
until docker info >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -gt 60 ]; then
        echo "dockerd did not answer within 60 s; last lines of $LOG:" >&2
        tail -20 "$LOG" >&2 || true
        exit 1
    fi
    sleep 1
done
echo "docker engine ready: $(docker version --format '{{.Server.Version}}')"
