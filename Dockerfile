# Multi-stage image mirroring exactly what CI does (.ci/run): Deno from npm, whisper.cpp built from the pinned
# npm source by native/build.ts, the pinned prebuilt llama.cpp set up by native/llama.ts, npm dependencies from
# deno.lock. The runtime stage holds the compiled binary, the whisper and llama.cpp libraries beside it
# (lib/, lib/llama/), the onnxruntime shim (lib/ort/), and a models volume; it runs as a non-root user with a health check.
# No Docker engine runs on the project's build machines, so this file is kept simple and untested there.

FROM node:20-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends cmake g++ make git ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
RUN npm install --prefix /opt/deno --no-save --no-audit --no-fund deno@2.9.6
ENV PATH=/opt/deno/node_modules/.bin:$PATH
COPY deno.json deno.lock ./
RUN deno install --frozen
COPY . .
RUN deno run -A native/build.ts --if-missing \
    && deno run -A native/llama.ts --if-missing \
    && deno run -A native/ort.ts --if-missing \
    && deno task compile

FROM debian:bookworm-slim AS runtime
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl libgomp1 \
        mesa-vulkan-drivers ffmpeg \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 app
WORKDIR /app
COPY --from=build /src/dist/openai-local /app/openai-local
COPY --from=build /src/native/build/lib/ /app/lib/
COPY --from=build /src/native/build/llama/lib/ /app/lib/llama/
COPY --from=build /src/native/build/ort/ /app/lib/ort/
COPY --from=build /src/models/manifest.json /app/models/manifest.json
RUN chown -R app:app /app
USER app
ENV OAI_HOST=0.0.0.0 OAI_PORT=8080 OAI_MODELS_DIR=/app/models OAI_WHISPER_LIB=/app/lib OAI_LLAMA_LIB=/app/lib/llama
VOLUME ["/app/models"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s CMD curl -fsS http://127.0.0.1:8080/health || exit 1
ENTRYPOINT ["/app/openai-local"]
