#!/usr/bin/env bash
# CI step: the container images (Dockerfile). Registries of images are unreachable here, so the base is Debian
# bookworm made by debootstrap from the Debian mirror and imported into podman; then the CPU image and the Vulkan
# image are built (podman, chroot isolation), each started with the generated models mounted read-only as its
# models volume and a manifest of them, and checked from outside (tests/container/image_check.ts): /health, chat
# (ONNX and GGUF), embeddings, transcription (WAV and MP3 through the image's ffmpeg), as the image's non-root
# user, nothing fetched at run time; the Vulkan image's GGUF model on Mesa's llvmpipe, the only Vulkan device
# here (ggml-vulkan takes it with GGML_VK_VISIBLE_DEVICES=0), eight streams at once, with the image's Mesa >= 25.
# Needs root (debootstrap, podman's storage). Usage: bash .ci/image.sh   (after the models are generated;
# OAI_IMAGE_VARIANTS="vulkan" builds and checks one image only)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=${OAI_IMAGE_WORK:-/tmp/oai-image}
export CONTAINERS_CONF=$ROOT/.ci/containers.conf
need=()
for pkg in podman runc debootstrap fuse-overlayfs; do dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg"); done
if [ ${#need[@]} -gt 0 ]; then
  echo "--- apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# Overlay storage through fuse-overlayfs (layers shared, not copied: vfs copied the whole tree at every step and
# filled the disk with about 30 GB for the two images) and runc, with no kernel overlay mounts or systemd
# cgroups needed inside CI's sandbox.
P=(podman --runtime runc --storage-driver overlay --storage-opt overlay.mount_program=/usr/bin/fuse-overlayfs
  --root "$WORK/storage" --runroot "$WORK/run")
t0=$(date +%s)
stamp() { echo "--- [$(($(date +%s) - t0)) s] $*"; }

if ! "${P[@]}" image exists localhost/oai-base:bookworm; then
  stamp "debootstrap bookworm"
  rm -rf "$WORK/rootfs"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log"
  tar -C "$WORK/rootfs" -c . | "${P[@]}" import - localhost/oai-base:bookworm >/dev/null
  rm -rf "$WORK/rootfs"
fi

# This machine's own CAs (a TLS-intercepting proxy's), for the build stage only.
cp /usr/local/share/ca-certificates/*.crt deploy/ca-certificates/ 2>/dev/null || true
conf=$(mktemp -d)
name=""
cleanup() {
  rm -f deploy/ca-certificates/*.crt
  if [ -n "$name" ]; then
    "${P[@]}" logs "$name" >"$WORK/container.log" 2>&1 || true
    "${P[@]}" rm -f "$name" >/dev/null 2>&1 || true
  fi
  rm -rf "$conf"
}
trap cleanup EXIT
chmod 755 "$conf"
deno eval --ext=ts "import { GENERATED_MODELS } from './tests/helpers.ts';
const m = structuredClone(GENERATED_MODELS);
m.models['chat-gguf'] = { task: 'chat', path: 'generated/chat-tiny/gguf/chat-tiny-F32.gguf' };
Deno.writeTextFileSync('$conf/manifest.json', JSON.stringify(m));"
chmod 644 "$conf/manifest.json"

for variant in ${OAI_IMAGE_VARIANTS:-cpu vulkan}; do
  image=localhost/openai-local:$variant
  stamp "podman build ($variant image)"
  "${P[@]}" build --isolation chroot --format docker --build-arg BASE=localhost/oai-base:bookworm \
    --build-arg LLAMA_VARIANT=$variant -t "$image" . >"$WORK/build-$variant.log" 2>&1 ||
    { tail -40 "$WORK/build-$variant.log"; exit 1; }
  "${P[@]}" image inspect "$image" --format '{{.Size}}' | awk '{printf "image size: %.0f MB\n", $1/1e6}'

  stamp "start it with the generated models"
  port=$(deno eval 'const l = Deno.listen({ port: 0 }); console.log(l.addr.port); l.close();')
  name=oai-image-check-$variant-$$
  "${P[@]}" run -d --rm --name "$name" --network host -e OAI_PORT="$port" -e OAI_OFFLINE=true \
    -e OAI_MANIFEST=/app/config/manifest.json -e GGML_VK_VISIBLE_DEVICES=0 \
    -v "$ROOT/models:/app/models:ro" -v "$conf:/app/config:ro" "$image" >/dev/null
  for _ in $(seq 120); do
    curl -fs "http://127.0.0.1:$port/health" >/dev/null && break
    "${P[@]}" container exists "$name" || { echo "the container exited"; "${P[@]}" logs "$name" | tail -30; exit 1; }
    sleep 1
  done
  uid=$("${P[@]}" exec "$name" id -u)
  if [ "$variant" = vulkan ]; then
    # Debian 12's own Mesa (22.3.6) corrupts lavapipe's heap under batched decoding; the image takes 25 (Dockerfile).
    mesa=$("${P[@]}" exec "$name" dpkg-query -W -f='${Version}' mesa-vulkan-drivers)
    echo "image's mesa-vulkan-drivers: $mesa"
    dpkg --compare-versions "$mesa" ge 25.0 || { echo "the Vulkan image has Mesa $mesa (< 25.0)"; exit 1; }
  fi
  stamp "check the endpoints (server uid $uid)"
  deno run -A tests/container/image_check.ts "http://127.0.0.1:$port" "$uid" "$variant"
  # The image must serve without a registry: nothing fetched at run time.
  if "${P[@]}" logs "$name" 2>&1 | grep -q "Download http"; then
    echo "the container downloaded packages at run time:"; "${P[@]}" logs "$name" 2>&1 | grep "Download http" | head
    exit 1
  fi
  "${P[@]}" logs "$name" >"$WORK/container-$variant.log" 2>&1 || true
  "${P[@]}" rm -f "$name" >/dev/null 2>&1 || true
  name=""
done
# Give the disk back (a fresh CI machine keeps nothing anyway).
"${P[@]}" rmi -a -f >/dev/null 2>&1 || true
stamp "image step passed"
