// Owns what the Vulkan tests share: whether llama.cpp's Vulkan variant and Mesa's software Vulkan device
// (llvmpipe) are there, and the environment a server needs to use that device.
import { join } from "node:path";
import OpenAI from "openai";
import type { ManifestJson } from "../../src/engines/manifest.ts";
import { REPO_ROOT, type SpawnedServer, spawnServer } from "../helpers.ts";

export const VULKAN_SHIM = join(REPO_ROOT, "native/build/llama/lib-vulkan/libllama_shim.so");
export const WHISPER_VULKAN_SHIM = join(REPO_ROOT, "native/build/lib-vulkan/libwhisper_shim.so");
export const VULKAN_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";

/** Why the Vulkan tests cannot run here (null: they can); on CI (CI=true) that is an error, not a skip. */
export function vulkanMissing(what: string, whisper = false): string | null {
  const needs: [string, string][] = [
    whisper
      ? [WHISPER_VULKAN_SHIM, "deno run -A native/build.ts --gpu vulkan"]
      : [VULKAN_SHIM, "deno run -A native/llama.ts --variant vulkan"],
    [VULKAN_ICD, "Debian's mesa-vulkan-drivers"],
  ];
  for (const [file, how] of needs) {
    try {
      Deno.statSync(file);
    } catch {
      const why = `${file} is missing (${how})`;
      if (Deno.env.get("CI")) throw new Error(`${what} cannot run on CI: ${why}`);
      return why;
    }
  }
  return null;
}

/** ggml-vulkan takes a CPU-type device (llvmpipe) only when told to; the loader wants a runtime dir. */
export function vulkanEnv(): Record<string, string> {
  return { GGML_VK_VISIBLE_DEVICES: "0", XDG_RUNTIME_DIR: Deno.makeTempDirSync({ prefix: "oai-xdg-" }) };
}

/** The real server in its own process with `manifest`, able to use llvmpipe, and an `openai` client for it. */
export async function spawnOnVulkan(
  manifest: ManifestJson,
  flags: string[],
): Promise<{ server: SpawnedServer; client: OpenAI }> {
  const server = await spawnServer({ manifest, flags, env: vulkanEnv() });
  const client = new OpenAI({
    baseURL: `${server.url}/v1`,
    apiKey: "sk-test",
    maxRetries: 0,
    timeout: 300_000,
  });
  return { server, client };
}
