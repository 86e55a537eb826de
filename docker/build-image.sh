#!/bin/sh
# Build the recallmesh image (make image), or another of the project's images from its own
# Dockerfile and context (make pg-textsearch-image): the engine and the base image first when
# missing, then `docker build`; prints the build time and the image size.
#   IMAGE (default recallmesh:local)   ORT (cpu | gpu; default cpu; for a Dockerfile that has it)
#   DOCKERFILE, CONTEXT (default Dockerfile, .; e.g. docker/pg_textsearch/Dockerfile and
#   docker/pg_textsearch for the pg_textsearch extension image)
#   BASE_IMAGE (default recallmesh-base:local, made by docker/base-image.sh when missing; set it
#   to python:3.12-slim, the Dockerfile's own default, where a registry is reachable)
# Builds use the host network (the only way to PyPI here). The host's extra CA certificates
# (/usr/local/share/ca-certificates/*.crt, e.g. a TLS-intercepting proxy) are passed to the build
# stages as EXTRA_CA_CERTS; the runtime stage never sees them.
set -eu
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-recallmesh:local}
ORT=${ORT:-cpu}
BASE_IMAGE=${BASE_IMAGE:-recallmesh-base:local}
DOCKERFILE=${DOCKERFILE:-Dockerfile}
CONTEXT=${CONTEXT:-.}

docker/ensure-docker.sh
if [ "$BASE_IMAGE" = recallmesh-base:local ]; then
    BASE_TAG=$BASE_IMAGE docker/base-image.sh
fi

extra_ca=""
for crt in /usr/local/share/ca-certificates/*.crt; do
    [ -f "$crt" ] && extra_ca="$extra_ca$(cat "$crt")
"
done

set -- --build-arg BASE_IMAGE="$BASE_IMAGE" --build-arg EXTRA_CA_CERTS="$extra_ca"
if grep -q '^ARG ORT' "$DOCKERFILE"; then
    set -- "$@" --build-arg ORT="$ORT"
    echo "building $IMAGE from $DOCKERFILE (ORT=$ORT, BASE_IMAGE=$BASE_IMAGE)"
else
    echo "building $IMAGE from $DOCKERFILE (BASE_IMAGE=$BASE_IMAGE)"
fi
start=$(date +%s)
# the classic builder: Debian's docker.io has no buildx; the Dockerfiles need nothing BuildKit-only
DOCKER_BUILDKIT=0 docker build --network host "$@" \
    -f "$DOCKERFILE" -t "$IMAGE" "$CONTEXT" >"${BUILD_LOG:-/tmp/recallmesh-image-build.log}" 2>&1 || {
    tail -40 "${BUILD_LOG:-/tmp/recallmesh-image-build.log}" >&2
    echo "docker build failed (full log: ${BUILD_LOG:-/tmp/recallmesh-image-build.log})" >&2
    exit 1
}
elapsed=$(( $(date +%s) - start ))
# drop the earlier builds this tag replaced (dangling final images: only they carry this image's
# title label); the build stages' images are dangling too, but they are the build cache
title=$(docker image inspect -f '{{index .Config.Labels "org.opencontainers.image.title"}}' "$IMAGE")
docker image prune -f --filter "label=org.opencontainers.image.title=$title" >/dev/null || true
echo "built $IMAGE in ${elapsed} s (log: ${BUILD_LOG:-/tmp/recallmesh-image-build.log})"
docker image ls "$IMAGE" --format 'image {{.Repository}}:{{.Tag}}  id {{.ID}}  size {{.Size}}'
