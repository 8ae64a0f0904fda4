import assert from "node:assert/strict";
import { join } from "node:path";
import { type Hardware, llamaLibFor, pickVariant, variantLibDir, VARIANTS } from "./variants.ts";

const NONE = { nvidiaDriver: false, cudaRuntime: false, vulkanGpu: false };
const linux: Hardware = { os: "linux", arch: "x86_64", ...NONE };

Deno.test("variants: each platform's choice from what its hardware has", () => {
  const pick = (hw: Partial<Hardware>) => pickVariant({ ...linux, ...hw }).pkg;
  assert.equal(pick({}), "@node-llama-cpp/linux-x64");
  assert.equal(
    pick({ nvidiaDriver: true, cudaRuntime: true, vulkanGpu: true }),
    "@node-llama-cpp/linux-x64-cuda",
  );
  // A driver without the CUDA runtime the build links: Vulkan where the loader is, else the CPU.
  assert.equal(pick({ nvidiaDriver: true, vulkanGpu: true }), "@node-llama-cpp/linux-x64-vulkan");
  assert.equal(pick({ nvidiaDriver: true }), "@node-llama-cpp/linux-x64");
  // The runtime without a driver (a container without the GPU passed in): the CPU.
  assert.equal(pick({ cudaRuntime: true }), "@node-llama-cpp/linux-x64");
  assert.equal(pick({ vulkanGpu: true }), "@node-llama-cpp/linux-x64-vulkan");
  assert.equal(pick({ arch: "aarch64", vulkanGpu: true }), "@node-llama-cpp/linux-arm64");
  assert.equal(pick({ os: "darwin", arch: "aarch64" }), "@node-llama-cpp/mac-arm64-metal");
  assert.equal(pick({ os: "darwin", arch: "x86_64" }), "@node-llama-cpp/mac-x64");
  assert.equal(
    pick({ os: "windows", nvidiaDriver: true, cudaRuntime: true }),
    "@node-llama-cpp/win-x64-cuda",
  );
  assert.equal(pick({ os: "windows", vulkanGpu: true }), "@node-llama-cpp/win-x64-vulkan");
  assert.equal(pick({ os: "windows" }), "@node-llama-cpp/win-x64");
  assert.equal(pick({ os: "windows", arch: "aarch64" }), "@node-llama-cpp/win-arm64");
});

Deno.test("variants: a requested variant is honoured or refused; the installed ones bound the auto choice", () => {
  // The user may know better than the probes (a driver in a path they don't look in).
  assert.equal(pickVariant(linux, "cuda").id, "cuda");
  assert.throws(
    () => pickVariant({ ...linux, os: "darwin", arch: "aarch64" }, "cuda"),
    /no cuda build .* darwin/,
  );
  assert.throws(() => pickVariant(linux, "metal"), /no metal build/);
  const gpuHost = { ...linux, nvidiaDriver: true, cudaRuntime: true, vulkanGpu: true };
  assert.equal(pickVariant(gpuHost, "auto", ["cpu", "vulkan"]).id, "vulkan");
  assert.equal(pickVariant(gpuHost, "auto", ["cpu"]).id, "cpu");
});

Deno.test("variants: every variant this platform sets up is pinned by integrity; folders side by side", () => {
  for (const v of VARIANTS.filter((v) => v.os === "linux")) {
    assert.match(v.integrity ?? "", /^sha512-[A-Za-z0-9+/]{86}==$/, v.pkg);
  }
  assert.equal(variantLibDir("/b/llama", "cpu"), join("/b/llama", "lib"));
  assert.equal(variantLibDir("/b/llama", "vulkan"), join("/b/llama", "lib-vulkan"));
});

Deno.test("variants: the server loads the named variant, or the one setup recorded for this host", () => {
  const dir = Deno.makeTempDirSync();
  try {
    assert.equal(llamaLibFor("auto", dir), undefined, "nothing recorded: the loader's default");
    assert.equal(llamaLibFor("cuda", dir), join(dir, "lib-cuda"));
    Deno.writeTextFileSync(
      join(dir, "variant.json"),
      JSON.stringify({ default: "vulkan", installed: ["cpu"] }),
    );
    assert.equal(llamaLibFor("auto", dir), join(dir, "lib-vulkan"));
    Deno.writeTextFileSync(join(dir, "variant.json"), JSON.stringify({ default: "nonsense" }));
    assert.equal(llamaLibFor("auto", dir), undefined);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
