#!/bin/sh
# Build the recallmesh image (make image): the engine and the base image first when missing,
# then `docker build`; prints the build time and the image size.
#   IMAGE (default recallmesh:local)   ORT (cpu | gpu; default cpu)
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

docker/ensure-docker.sh
if [ "$BASE_IMAGE" = recallmesh-base:local ]; then
    BASE_TAG=$BASE_IMAGE docker/base-image.sh
fi

extra_ca=""
for crt in /usr/local/share/ca-certificates/*.crt; do
    [ -f "$crt" ] && extra_ca="$extra_ca$(cat "$crt")
"
done

echo "building $IMAGE (ORT=$ORT, BASE_IMAGE=$BASE_IMAGE)"
start=$(date +%s)
# the classic builder: Debian's docker.io has no buildx; the Dockerfile needs nothing BuildKit-only
DOCKER_BUILDKIT=0 docker build --network host \
    --build-arg BASE_IMAGE="$BASE_IMAGE" \
    --build-arg ORT="$ORT" \
    --build-arg EXTRA_CA_CERTS="$extra_ca" \
    -t "$IMAGE" . >"${BUILD_LOG:-/tmp/recallmesh-image-build.log}" 2>&1 || {
    tail -40 "${BUILD_LOG:-/tmp/recallmesh-image-build.log}" >&2
    echo "docker build failed (full log: ${BUILD_LOG:-/tmp/recallmesh-image-build.log})" >&2
    exit 1
}
elapsed=$(( $(date +%s) - start ))
# drop the earlier builds this tag replaced (dangling final images: only they carry the title
# label); the builder and model stages' images are dangling too, but they are the build cache
docker image prune -f --filter label=org.opencontainers.image.title=recallmesh >/dev/null || true
echo "built $IMAGE in ${elapsed} s (log: ${BUILD_LOG:-/tmp/recallmesh-image-build.log})"
docker image ls "$IMAGE" --format 'image {{.Repository}}:{{.Tag}}  id {{.ID}}  size {{.Size}}'
