// Owns what the Vulkan tests share: whether llama.cpp's Vulkan variant and Mesa's software Vulkan device
// (llvmpipe) are there, and the environment a server needs to use that device.
import { join } from "node:path";
import OpenAI from "openai";
import type { ManifestJson } from "../../src/engines/manifest.ts";
import { REPO_ROOT, type SpawnedServer, spawnServer } from "../helpers.ts";

export const VULKAN_SHIM = join(REPO_ROOT, "native/build/llama/lib-vulkan/libllama_shim.so");
export const WHISPER_VULKAN_SHIM = join(REPO_ROOT, "native/build/lib-vulkan/libwhisper_shim.so");
/** Where Mesa puts lavapipe's ICD file: Mesa 22 named it per architecture, later releases do not. */
export const VULKAN_ICDS = [
  "/usr/share/vulkan/icd.d/lvp_icd.json",
  "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
];
/**
 * The oldest Mesa these tests trust. Debian 12's own 22.3.6 corrupts its heap inside lavapipe's queue thread
 * while llama.cpp decodes several sequences of one context (a replay of the server's llama calls in plain C,
 * no Deno, aborted in "corrupted double-linked list" or segfaulted in 2 of 3 runs); 25.0.7 from
 * bookworm-backports ran the same replay and the 8-stream test clean (.ci/run installs it).
 */
export const MESA_MIN = "25.0";

/** Why the Vulkan tests cannot run here (null: they can); on CI (CI=true) that is an error, not a skip. */
export function vulkanMissing(what: string, whisper = false): string | null {
  const needs: [string, string][] = [
    whisper
      ? [WHISPER_VULKAN_SHIM, "deno run -A native/build.ts --gpu vulkan"]
      : [VULKAN_SHIM, "deno run -A native/llama.ts --variant vulkan"],
  ];
  const fail = (why: string) => {
    if (Deno.env.get("CI")) throw new Error(`${what} cannot run on CI: ${why}`);
    return why;
  };
  for (const [file, how] of needs) {
    if (!exists(file)) return fail(`${file} is missing (${how})`);
  }
  if (!VULKAN_ICDS.some(exists)) {
    return fail(`Mesa's lavapipe is missing (${VULKAN_ICDS.join(" or ")}; Debian's mesa-vulkan-drivers)`);
  }
  const mesa = mesaVersion();
  if (mesa && versionBelow(mesa, MESA_MIN)) {
    return fail(
      `mesa-vulkan-drivers ${mesa} is older than ${MESA_MIN}: its lavapipe corrupts memory under llama.cpp's ` +
        "batched decoding (install it from bookworm-backports, as .ci/run does)",
    );
  }
  return null;
}

function exists(file: string): boolean {
  try {
    return Deno.statSync(file).isFile;
  } catch {
    return false;
  }
}

/** The installed mesa-vulkan-drivers' version where dpkg knows it (Debian and its kin), else null. */
function mesaVersion(): string | null {
  const out = dpkg("dpkg-query", ["-W", "-f=${Version}", "mesa-vulkan-drivers"]);
  const v = out ? new TextDecoder().decode(out.stdout).trim() : "";
  return out?.success && v ? v : null;
}

/** dpkg's own ordering of Debian versions (epochs, "~" pre-releases), as .ci/run compares them. */
function versionBelow(version: string, min: string): boolean {
  return dpkg("dpkg", ["--compare-versions", version, "lt", min])?.success ?? false;
}

function dpkg(command: string, args: string[]): Deno.CommandOutput | null {
  try {
    return new Deno.Command(command, { args, stdout: "piped", stderr: "null" }).outputSync();
  } catch {
    return null;
  }
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
