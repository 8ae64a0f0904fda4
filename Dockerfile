# The server's container image, built from source exactly as CI sets the project up (.ci/run): Deno from npm
# (its tarball checked against a pinned sha512), npm dependencies from deno.lock, whisper.cpp built from its
# pinned npm source (native/build.ts), the pinned prebuilt llama.cpp of the chosen variant (native/llama.ts),
# the onnxruntime shim (native/ort.ts). It runs `deno task serve` (the scoped permissions `deno task start`
# uses) as a non-root user, with the models folder as a volume and a health check. No single binary: `deno
# compile` downloads a runtime that build machines without the internet cannot reach.
#
# CPU image (built and tested by CI on a debootstrapped Debian base, .ci/image.sh):
#   podman build --isolation chroot -t openai-local:cpu .        (or: docker build -t openai-local:cpu .)
# GPU images:
#   Vulkan (AMD, Intel, and NVIDIA with the host's driver): --build-arg LLAMA_VARIANT=vulkan
#   CUDA (NVIDIA; needs the CUDA 13 runtime):  --build-arg LLAMA_VARIANT=cuda \
#        --build-arg BASE=nvidia/cuda:13.0.0-runtime-ubuntu24.04, run with --gpus all (Docker) or
#        --device nvidia.com/gpu=all (podman with the NVIDIA container toolkit)
# Run: docker run -p 8080:8080 -v ./models:/app/models openai-local:cpu
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS build
ARG LLAMA_VARIANT=cpu
ARG DENO_VERSION=2.9.6
ARG DENO_SHA512=de67784ca2c2bb3b0b0e67cea02e4a37b34065ac525643209bae2f83a7e80f4d090400c2a584b6ff942a5dfce09cfe59433de22cff6f05026d120735d7a380a1
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates curl cmake g++ make git \
    && rm -rf /var/lib/apt/lists/*
# A TLS-intercepting proxy's CA, where the build needs one (deploy/ca-certificates/README.md).
COPY deploy/ca-certificates/ /usr/local/share/ca-certificates/extra/
RUN update-ca-certificates
# Deno's npm cache goes into the image with the app: the server resolves npm packages again at run time
# (workers import transformers.js lazily) and must not need the registry for it.
ENV DENO_TLS_CA_STORE=system,mozilla DENO_DIR=/app/.deno-dir
RUN curl -fsSL -o /tmp/deno.tgz \
        "https://registry.npmjs.org/@deno/linux-x64-glibc/-/linux-x64-glibc-${DENO_VERSION}.tgz" \
    && echo "${DENO_SHA512}  /tmp/deno.tgz" | sha512sum -c - \
    && tar xzf /tmp/deno.tgz -C /tmp && install -m 755 /tmp/package/deno /usr/local/bin/deno \
    && rm -rf /tmp/deno.tgz /tmp/package
WORKDIR /app
COPY deno.json deno.lock ./
RUN deno install --frozen
COPY . .
RUN deno run -A native/build.ts --if-missing \
    && deno run -A native/llama.ts --if-missing --variant "${LLAMA_VARIANT}" \
    && deno run -A native/ort.ts --if-missing \
    && rm -rf native/build/*.tgz native/build/*.o native/build/src native/build/cmake

FROM ${BASE} AS runtime
ARG LLAMA_VARIANT=cpu
# Debian 12's own Mesa (22.3.6) corrupts its heap in lavapipe under llama.cpp's batched decoding, and its RADV
# and ANV are as old: the Vulkan image on bookworm takes Mesa 25 from bookworm-backports, as CI does (.ci/run).
RUN mesa=mesa-vulkan-drivers; \
    if [ "${LLAMA_VARIANT}" = vulkan ] && grep -qs 'VERSION_CODENAME=bookworm' /etc/os-release; then \
        printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            > /etc/apt/sources.list.d/bookworm-backports.sources; \
        mesa=mesa-vulkan-drivers/bookworm-backports; \
    fi; \
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates curl libgomp1 ffmpeg \
        $(if [ "${LLAMA_VARIANT}" = vulkan ]; then echo libvulkan1 "$mesa"; fi) \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 app
COPY --from=build /usr/local/bin/deno /usr/local/bin/deno
COPY --from=build --chown=app:app /app /app
WORKDIR /app
USER app
ENV OAI_HOST=0.0.0.0 OAI_PORT=8080 OAI_MODELS_DIR=/app/models DENO_DIR=/app/.deno-dir \
    OAI_LLAMA_VARIANT=${LLAMA_VARIANT}
VOLUME ["/app/models"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s --start-period=30s CMD curl -fsS "http://127.0.0.1:${OAI_PORT}/health" || exit 1
ENTRYPOINT ["deno", "task", "serve"]
