// Owns getting llama.cpp for the GGUF backend, pinned: the prebuilt libllama + libggml (with ggml's per-CPU
// variants libggml-cpu-{haswell,...,zen4}.so, chosen at run time, and the GPU backend of a GPU build) from npm's
// `@node-llama-cpp/<platform>[-vulkan|-cuda]` packages, and llama.cpp's headers from the same release's source
// (the `node-llama-cpp` tarball's `llama/gitRelease.bundle`), against which native/llama_shim.c is compiled per
// variant. Every tarball is refused unless its sha512 matches. Which variant suits this host is decided by
// src/engines/llama/variants.ts (CUDA where an NVIDIA driver and CUDA 13 runtime are, Vulkan where a GPU and
// the Vulkan loader are, Metal on Apple silicon, CPU otherwise); the CPU build is always set up beside it.
// Output: native/build/llama/lib/ (CPU), lib-vulkan/, lib-cuda/ (libllama_shim.so beside libllama and ggml),
// and variant.json naming the host's default, which the server loads unless --llama-variant says otherwise.
// Takes seconds, not a build.
// Usage: deno run -A native/llama.ts [--if-missing] [--force] [--variant auto|cpu|vulkan|cuda|metal|all]
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  detectHardware,
  type Hardware,
  pickVariant,
  type Variant,
  VARIANT_IDS,
  type VariantId,
  variantLibDir,
  variantsFor,
} from "../src/engines/llama/variants.ts";
import { BUILD_DIR, exists, libName, NATIVE_DIR, SHIM_CFLAGS, sri } from "./build.ts";

export const LLAMA_PACKAGE_VERSION = "3.22.1";
/** npm `dist.integrity` of the source tarball (the prebuilt ones are pinned in variants.ts). */
const SOURCE_INTEGRITY =
  "sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw==";

export const LLAMA_DIR = join(BUILD_DIR, "llama");
/** The CPU build's folder (the default when no variant was set up). */
export const LLAMA_LIB_DIR = variantLibDir(LLAMA_DIR, "cpu");
export const LLAMA_SHIM_PATH = join(LLAMA_LIB_DIR, libName("llama_shim"));
/** Which variant this host should load, written at setup (the server cannot probe the host's drivers). */
export const VARIANT_FILE = join(LLAMA_DIR, "variant.json");
const HEADERS_DIR = join(LLAMA_DIR, "include");

async function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "inherit" }).output();
  if (out.code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited with ${out.code}`);
  return new TextDecoder().decode(out.stdout);
}

/** The package's tarball in native/build/, fetched from the npm registry once and checked every time. */
async function tarball(pkg: string, integrity: string): Promise<string> {
  const file = join(BUILD_DIR, `${pkg.replace("@", "").replace("/", "-")}-${LLAMA_PACKAGE_VERSION}.tgz`);
  if (!await exists(file)) {
    const registry = (Deno.env.get("NPM_CONFIG_REGISTRY") ?? "https://registry.npmjs.org").replace(/\/$/, "");
    const url = `${registry}/${pkg}/-/${pkg.split("/").pop()}-${LLAMA_PACKAGE_VERSION}.tgz`;
    console.log(`fetching ${url}`);
    const res = await fetch(url);
    if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
    await Deno.mkdir(BUILD_DIR, { recursive: true });
    await Deno.writeFile(file, new Uint8Array(await res.arrayBuffer()));
  }
  const got = await sri(await Deno.readFile(file));
  if (got !== integrity) {
    await Deno.remove(file);
    throw new Error(`integrity mismatch for ${file}: got ${got}, want ${integrity}`);
  }
  return file;
}

/** A variant's libllama, libggml, the CPU variants and its GPU backend into its folder. */
async function extractLibraries(v: Variant, libDir: string): Promise<void> {
  if (!v.integrity) {
    throw new Error(
      `${v.pkg}@${LLAMA_PACKAGE_VERSION} is not pinned (no tarball of it on the registry this project was ` +
        "set up from): build llama.cpp and point --llama-lib at a folder holding libllama_shim beside libllama",
    );
  }
  const tgz = await tarball(v.pkg, v.integrity);
  const tmp = await Deno.makeTempDir({ dir: BUILD_DIR });
  try {
    await run("tar", ["xzf", tgz, "-C", tmp, `package/bins/${v.dir}`]);
    await Deno.mkdir(libDir, { recursive: true });
    const from = join(tmp, "package", "bins", v.dir);
    for await (const e of Deno.readDir(from)) {
      if (/\.(so|dylib|dll)$/.test(e.name) && !e.name.startsWith("libllama-common.")) {
        await Deno.copyFile(join(from, e.name), join(libDir, e.name));
      }
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

/** include/llama.h and ggml's headers of the same release, out of the source bundle. */
async function extractHeaders(): Promise<void> {
  const tgz = await tarball("node-llama-cpp", SOURCE_INTEGRITY);
  const tmp = await Deno.makeTempDir({ dir: BUILD_DIR });
  try {
    await run("tar", ["xzf", tgz, "-C", tmp, "package/llama/gitRelease.bundle"]);
    const repo = join(tmp, "src");
    await run("git", [
      "clone",
      "--quiet",
      "--no-checkout",
      join(tmp, "package/llama/gitRelease.bundle"),
      repo,
    ]);
    const files = (await run("git", ["ls-tree", "--name-only", "HEAD", "include/", "ggml/include/"], repo))
      .split("\n").filter((f) => f.endsWith(".h"));
    await Deno.mkdir(HEADERS_DIR, { recursive: true });
    for (const f of files) {
      const text = await run("git", ["show", `HEAD:${f}`], repo);
      await Deno.writeTextFile(join(HEADERS_DIR, f.split("/").pop()!), text);
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

async function buildShim(libDir: string): Promise<void> {
  const cc = Deno.env.get("CC") ?? "cc";
  const libllama = [...Deno.readDirSync(libDir)].find((e) => /^libllama\..*so$/.test(e.name))?.name;
  if (!libllama) throw new Error(`no libllama in ${libDir}`);
  const ggml = [...Deno.readDirSync(libDir)].find((e) => /^libggml\..*so$/.test(e.name))?.name;
  const args = [
    ...SHIM_CFLAGS,
    // The sampler's exponentials vectorize only so (native/sampling.h).
    "-O3",
    "-fno-trapping-math",
    // Each float step of the sampler rounds as the JavaScript twin's does: no fused multiply-adds.
    "-ffp-contract=off",
    "-I",
    HEADERS_DIR,
    join(NATIVE_DIR, "llama_shim.c"),
    "-o",
    join(libDir, libName("llama_shim")),
    join(libDir, libllama),
    ...(ggml ? [join(libDir, ggml)] : []),
    join(libDir, "libggml-base.so"),
    "-lpthread",
    "-lm",
    "-Wl,-rpath,$ORIGIN",
  ];
  console.log(`$ ${cc} ${args.join(" ")}`);
  await run(cc, args);
}

/** Sets one variant up in its folder (fresh when its shim is newer than the shim's source). */
async function setupVariant(v: Variant, opts: { ifMissing: boolean; force: boolean }): Promise<void> {
  const libDir = variantLibDir(LLAMA_DIR, v.id);
  const shim = join(libDir, libName("llama_shim"));
  const sources = await Promise.all(
    ["llama_shim.c", "buffer_sizes.h", "sampling.h"].map((f) =>
      Deno.stat(join(NATIVE_DIR, f)).then((s) => s.mtime?.getTime() ?? 0)
    ),
  );
  const built = await Deno.stat(shim).catch(() => undefined);
  const fresh = built && (built.mtime?.getTime() ?? 0) >= Math.max(...sources);
  if (opts.ifMissing && !opts.force && fresh) {
    console.log(`llama.cpp ${v.id} already set up: ${shim}`);
    return;
  }
  const started = performance.now();
  if (opts.force || !await exists(join(HEADERS_DIR, "llama.h"))) await extractHeaders();
  if (opts.force || !built) await extractLibraries(v, libDir);
  await buildShim(libDir);
  console.log(`set up llama.cpp ${v.id}: ${shim} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

/** What variant.json records. */
export interface VariantRecord {
  /** The variant the server loads by default on this host. */
  default: VariantId;
  installed: VariantId[];
  hardware: Hardware;
}

export async function setupLlama(
  opts: { ifMissing: boolean; force: boolean; variant?: VariantId | "auto" | "all" },
): Promise<void> {
  if (Deno.build.os !== "linux") {
    throw new Error(
      "the pinned prebuilt llama.cpp builds are for Linux; elsewhere point --llama-lib at a build",
    );
  }
  const hw = detectHardware();
  const wanted = opts.variant === "all"
    ? variantsFor(hw.os, hw.arch).filter((v) => v.integrity)
    : [pickVariant(hw, opts.variant)];
  const cpu = variantsFor(hw.os, hw.arch).find((v) => v.id === "cpu");
  // The CPU build always, beside any GPU build: the fallback when the GPU's driver is gone.
  if (cpu && !wanted.includes(cpu)) wanted.push(cpu);
  for (const v of wanted) await setupVariant(v, opts);
  const installed = VARIANT_IDS.filter((id) => {
    try {
      return Deno.statSync(join(variantLibDir(LLAMA_DIR, id), libName("llama_shim"))).isFile;
    } catch {
      return false;
    }
  });
  const record: VariantRecord = { default: pickVariant(hw, "auto", installed).id, installed, hardware: hw };
  await Deno.writeTextFile(VARIANT_FILE, JSON.stringify(record, null, 2) + "\n");
  console.log(`llama.cpp variant for this host: ${record.default} (installed: ${installed.join(", ")})`);
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      "if-missing": { type: "boolean", default: false },
      force: { type: "boolean", default: false },
      variant: { type: "string", default: Deno.env.get("OAI_LLAMA_VARIANT") ?? "auto" },
    },
  });
  const variant = values.variant as VariantId | "auto" | "all";
  if (![...VARIANT_IDS, "auto", "all"].includes(variant)) {
    throw new Error(`--variant must be one of auto, all, ${VARIANT_IDS.join(", ")}`);
  }
  await setupLlama({ ifMissing: values["if-missing"], force: values.force, variant });
}
