// Owns getting llama.cpp for the GGUF backend, pinned: the prebuilt libllama + libggml (with ggml's per-CPU
// variants libggml-cpu-{haswell,...,zen4}.so, chosen at run time) from npm's `@node-llama-cpp/linux-x64`, and
// llama.cpp's headers from the same release's source (the `node-llama-cpp` tarball's `llama/gitRelease.bundle`),
// against which native/llama_shim.c is compiled. Both tarballs are refused unless their sha512 matches.
// Output: native/build/llama/lib/ (libllama_shim.so beside libllama and ggml). Takes seconds, not a build.
// Usage: deno run -A native/llama.ts [--if-missing] [--force]
import { join } from "node:path";
import { BUILD_DIR, exists, libName, NATIVE_DIR, setupFlags, SHIM_CFLAGS, sri } from "./build.ts";

export const LLAMA_PACKAGE_VERSION = "3.22.1";
/** npm `dist.integrity` of each pinned tarball. */
const INTEGRITY: Record<string, string> = {
  "@node-llama-cpp/linux-x64":
    "sha512-5uCCDNqWCNfaAm8aR/Uzxbo4HBpKgNF91kCHPepKhgMgV2OAmatoefbOlMihsqCiH2Od35E/eUHQCFbfRBJuOg==",
  "node-llama-cpp":
    "sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw==",
};

export const LLAMA_DIR = join(BUILD_DIR, "llama");
export const LLAMA_LIB_DIR = join(LLAMA_DIR, "lib");
export const LLAMA_SHIM_PATH = join(LLAMA_LIB_DIR, libName("llama_shim"));
const HEADERS_DIR = join(LLAMA_DIR, "include");

async function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "inherit" }).output();
  if (out.code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited with ${out.code}`);
  return new TextDecoder().decode(out.stdout);
}

/** The package's tarball in native/build/, fetched from the npm registry once and checked every time. */
async function tarball(pkg: string): Promise<string> {
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
  if (got !== INTEGRITY[pkg]) {
    await Deno.remove(file);
    throw new Error(`integrity mismatch for ${file}: got ${got}, want ${INTEGRITY[pkg]}`);
  }
  return file;
}

/** libllama, libggml and the CPU variants into lib/. */
async function extractLibraries(): Promise<void> {
  const tgz = await tarball("@node-llama-cpp/linux-x64");
  const tmp = await Deno.makeTempDir({ dir: BUILD_DIR });
  try {
    await run("tar", ["xzf", tgz, "-C", tmp, "package/bins/linux-x64"]);
    await Deno.mkdir(LLAMA_LIB_DIR, { recursive: true });
    const from = join(tmp, "package", "bins", "linux-x64");
    for await (const e of Deno.readDir(from)) {
      if (e.name.endsWith(".so") && e.name !== "libllama-common.so") {
        await Deno.copyFile(join(from, e.name), join(LLAMA_LIB_DIR, e.name));
      }
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

/** include/llama.h and ggml's headers of the same release, out of the source bundle. */
async function extractHeaders(): Promise<void> {
  const tgz = await tarball("node-llama-cpp");
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

async function buildShim(): Promise<void> {
  const cc = Deno.env.get("CC") ?? "cc";
  const libllama = [...Deno.readDirSync(LLAMA_LIB_DIR)].find((e) => /^libllama\..*so$/.test(e.name))?.name;
  if (!libllama) throw new Error(`no libllama in ${LLAMA_LIB_DIR}`);
  const ggml = [...Deno.readDirSync(LLAMA_LIB_DIR)].find((e) => /^libggml\..*so$/.test(e.name))?.name;
  const args = [
    ...SHIM_CFLAGS,
    "-I",
    HEADERS_DIR,
    join(NATIVE_DIR, "llama_shim.c"),
    "-o",
    LLAMA_SHIM_PATH,
    join(LLAMA_LIB_DIR, libllama),
    ...(ggml ? [join(LLAMA_LIB_DIR, ggml)] : []),
    join(LLAMA_LIB_DIR, "libggml-base.so"),
    "-Wl,-rpath,$ORIGIN",
  ];
  console.log(`$ ${cc} ${args.join(" ")}`);
  await run(cc, args);
}

export async function setupLlama(opts: { ifMissing: boolean; force: boolean }): Promise<void> {
  if (Deno.build.os !== "linux" || Deno.build.arch !== "x86_64") {
    throw new Error(
      "the pinned prebuilt llama.cpp is for linux x86-64; elsewhere point --llama-lib at a build",
    );
  }
  const shimSource = await Deno.stat(join(NATIVE_DIR, "llama_shim.c"));
  const built = await Deno.stat(LLAMA_SHIM_PATH).catch(() => undefined);
  const fresh = built && (built.mtime?.getTime() ?? 0) >= (shimSource.mtime?.getTime() ?? 0);
  if (opts.ifMissing && !opts.force && fresh) {
    console.log(`llama.cpp already set up: ${LLAMA_SHIM_PATH}`);
    return;
  }
  const started = performance.now();
  if (opts.force || !await exists(join(HEADERS_DIR, "llama.h"))) await extractHeaders();
  if (opts.force || !built) await extractLibraries();
  await buildShim();
  console.log(`set up ${LLAMA_SHIM_PATH} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

if (import.meta.main) await setupLlama(setupFlags(Deno.args));
