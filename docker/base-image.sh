#!/bin/sh
# Build the local base image recallmesh-base:local (no image registry is reachable here):
# debootstrap a minimal Debian (minbase) with Debian's python3 + python3-venv from the Debian
# mirror apt already uses on this machine, then `docker import` it.
#   SUITE (default bookworm: python3 3.11, the oldest Python recallmesh supports; trixie gives 3.13)
#   BASE_TAG (default recallmesh-base:local)   MIRROR (default: read from /etc/apt/sources.list*)
# Needs root (debootstrap). Skips the build when the tag exists, unless FORCE=1.
set -eu

SUITE=${SUITE:-bookworm}
BASE_TAG=${BASE_TAG:-recallmesh-base:local}

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
    echo "base image $BASE_TAG exists (FORCE=1 rebuilds it)"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "docker/base-image.sh: debootstrap needs root" >&2
    exit 1
fi

if [ -z "${MIRROR:-}" ]; then
    # the first Debian archive URI apt uses: deb822 "URIs:" lines or one-line "deb URL suite"
    MIRROR=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
                 /etc/apt/sources.list.d/*.sources 2>/dev/null \
             | sed -n -e 's/^URIs:[[:space:]]*\(http[^[:space:]]*\/debian\)\/\{0,1\}[[:space:]]*$/\1/p' \
                      -e 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\(http[^[:space:]]*\/debian\)\/\{0,1\}[[:space:]].*/\2/p' \
             | head -n 1)
fi
if [ -z "$MIRROR" ]; then
    echo "docker/base-image.sh: no Debian mirror found in /etc/apt/sources.list*; set MIRROR=" >&2
    exit 1
fi

ROOT=$(mktemp -d /tmp/recallmesh-base.XXXXXX)
trap 'rm -rf "$ROOT"' EXIT
echo "debootstrap $SUITE (minbase) from $MIRROR into $ROOT"
start=$(date +%s)
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    "$SUITE" "$ROOT" "$MIRROR" >"$ROOT.log" 2>&1 || {
    tail -30 "$ROOT.log" >&2
    exit 1
}
# keep the image small: package lists, caches, docs
chroot "$ROOT" apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/* "$ROOT"/usr/share/doc/* \
       "$ROOT"/usr/share/man/* "$ROOT"/usr/share/info/* "$ROOT"/var/log/*
py=$(chroot "$ROOT" python3 --version)
tar -C "$ROOT" -c . | docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    --message "debootstrap --variant=minbase $SUITE + python3 python3-venv ($py)" \
    - "$BASE_TAG" >/dev/null
rm -f "$ROOT.log"
echo "base image $BASE_TAG: Debian $SUITE, $py, $(docker image inspect -f '{{.Size}}' "$BASE_TAG" | awk '{printf "%.0f MB", $1/1e6}'), built in $(( $(date +%s) - start )) s"
