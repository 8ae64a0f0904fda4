// Owns which build of llama.cpp ("variant") runs where: the pinned prebuilt packages of each platform and GPU
// API, the hardware facts that decide among them, and the choice itself, as a pure function so every
// platform's rule is tested here even where only Linux x86-64 runs. native/llama.ts installs variants from
// this table; the server (src/server.ts) picks the installed one to load. One variant per process: a GPU
// build also serves CPU models (a model with `device: cpu` gets no GPU device), so one server holds both.
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export type VariantId = "cpu" | "vulkan" | "cuda" | "metal";
export const VARIANT_IDS: readonly VariantId[] = ["cpu", "vulkan", "cuda", "metal"];

export type Os = "linux" | "darwin" | "windows";
export type Arch = "x86_64" | "aarch64";

/** One prebuilt build of llama.cpp from npm (node-llama-cpp's release of the pinned llama.cpp). */
export interface Variant {
  id: VariantId;
  os: Os;
  arch: Arch;
  /** The npm package. */
  pkg: string;
  /** The folder inside the tarball holding the libraries (`package/bins/<dir>`). */
  dir: string;
  /** npm `dist.integrity`; absent where this project's registry has no such tarball to pin (then refused). */
  integrity?: string;
  /** What it needs on the host, for messages. */
  needs: string;
}

export const VARIANTS: readonly Variant[] = [
  {
    id: "cpu",
    os: "linux",
    arch: "x86_64",
    pkg: "@node-llama-cpp/linux-x64",
    dir: "linux-x64",
    integrity:
      "sha512-5uCCDNqWCNfaAm8aR/Uzxbo4HBpKgNF91kCHPepKhgMgV2OAmatoefbOlMihsqCiH2Od35E/eUHQCFbfRBJuOg==",
    needs: "nothing",
  },
  {
    id: "vulkan",
    os: "linux",
    arch: "x86_64",
    pkg: "@node-llama-cpp/linux-x64-vulkan",
    dir: "linux-x64-vulkan",
    integrity:
      "sha512-bBxqU+JOcBu1nb5Qj2zcMci+JByT1E8EajHvYodyNfVIPkEhXh+/HMwR1/BT7xP08YK0hks+kM8fglER0P8JEg==",
    needs: "the Vulkan loader (libvulkan1) and a Vulkan driver",
  },
  {
    id: "cuda",
    os: "linux",
    arch: "x86_64",
    pkg: "@node-llama-cpp/linux-x64-cuda",
    dir: "linux-x64-cuda",
    integrity:
      "sha512-8rQCjyNNLZJUFit+YpjwlC4hwkKgOMIkB2wuycKBf8NU2O3ySKbiWZQ8aw9ku2nUTXjSnUIrE6KB88itduTBuA==",
    needs: "an NVIDIA driver and the CUDA 13 runtime (libcudart.so.13, libcublas.so.13)",
  },
  {
    id: "cpu",
    os: "linux",
    arch: "aarch64",
    pkg: "@node-llama-cpp/linux-arm64",
    dir: "linux-arm64",
    integrity:
      "sha512-W+7naKCXX9/eEjjFmRS8vvx91QyLXDbeFxexZc3bh/PtQABZgmRL3C0AtYYXn4YGTj/3Qor4lWZn2tpjZFPLdQ==",
    needs: "nothing",
  },
  // The registry these machines reach has no macOS or Windows tarballs of this release: listed so the choice
  // is right there, refused at setup (point --llama-lib at a build) until they are pinned.
  {
    id: "metal",
    os: "darwin",
    arch: "aarch64",
    pkg: "@node-llama-cpp/mac-arm64-metal",
    dir: "mac-arm64-metal",
    needs: "Apple silicon",
  },
  {
    id: "cpu",
    os: "darwin",
    arch: "x86_64",
    pkg: "@node-llama-cpp/mac-x64",
    dir: "mac-x64",
    needs: "nothing",
  },
  {
    id: "cpu",
    os: "windows",
    arch: "x86_64",
    pkg: "@node-llama-cpp/win-x64",
    dir: "win-x64",
    needs: "nothing",
  },
  {
    id: "vulkan",
    os: "windows",
    arch: "x86_64",
    pkg: "@node-llama-cpp/win-x64-vulkan",
    dir: "win-x64-vulkan",
    needs: "a Vulkan driver",
  },
  {
    id: "cuda",
    os: "windows",
    arch: "x86_64",
    pkg: "@node-llama-cpp/win-x64-cuda",
    dir: "win-x64-cuda",
    needs: "an NVIDIA driver and the CUDA runtime",
  },
  {
    id: "cpu",
    os: "windows",
    arch: "aarch64",
    pkg: "@node-llama-cpp/win-arm64",
    dir: "win-arm64",
    needs: "nothing",
  },
];

/** What the host has, as far as choosing a build goes. */
export interface Hardware {
  os: Os;
  arch: Arch;
  /** An NVIDIA kernel driver is loaded (/proc/driver/nvidia, or nvcuda.dll on Windows). */
  nvidiaDriver: boolean;
  /** The CUDA runtime libraries the CUDA build links (major version 13) can be found. */
  cudaRuntime: boolean;
  /** The Vulkan loader is installed and a GPU is there to drive (a DRM render node, or an NVIDIA driver). */
  vulkanGpu: boolean;
}

/** The variants for a platform, best first as the auto choice tries them. */
export function variantsFor(os: Os, arch: Arch): Variant[] {
  const order: VariantId[] = ["cuda", "metal", "vulkan", "cpu"];
  return VARIANTS.filter((v) => v.os === os && v.arch === arch)
    .sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id));
}

/** Whether the host can run a variant at all. */
export function runs(v: Variant, hw: Hardware): boolean {
  if (v.os !== hw.os || v.arch !== hw.arch) return false;
  switch (v.id) {
    case "cuda":
      return hw.nvidiaDriver && hw.cudaRuntime;
    case "vulkan":
      return hw.vulkanGpu;
    case "metal":
      return hw.os === "darwin" && hw.arch === "aarch64";
    case "cpu":
      return true;
  }
}

/**
 * The variant to use: `requested` when given (refused when the platform has none; a variant the hardware
 * lacks is allowed, since a user may know better: llama.cpp then runs on the CPU or fails to load), else the
 * first the hardware runs, among `installed` when given. CUDA where an NVIDIA driver and its runtime are,
 * Metal on Apple silicon, Vulkan where a GPU and the loader are, the CPU build otherwise.
 */
export function pickVariant(hw: Hardware, requested?: VariantId | "auto", installed?: VariantId[]): Variant {
  const here = variantsFor(hw.os, hw.arch);
  if (here.length === 0) throw new Error(`no prebuilt llama.cpp for ${hw.os} ${hw.arch}`);
  if (requested && requested !== "auto") {
    const v = here.find((x) => x.id === requested);
    if (!v) {
      throw new Error(
        `no ${requested} build of llama.cpp for ${hw.os} ${hw.arch} (there: ${
          here.map((x) => x.id).join(", ")
        })`,
      );
    }
    return v;
  }
  const usable = here.filter((v) => runs(v, hw) && (!installed || installed.includes(v.id)));
  return usable[0] ?? here.find((v) => v.id === "cpu") ?? here[0];
}

/** The folder a variant's libraries and shim are installed in, under native/build/llama/. */
export function variantLibDir(llamaDir: string, id: VariantId): string {
  // The CPU build keeps the folder it always had (the start task's --allow-ffi and older checkouts).
  return join(llamaDir, id === "cpu" ? "lib" : `lib-${id}`);
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Whether a shared library can be found the way the dynamic loader would (ldconfig's cache, or the usual folders). */
function linuxLibrary(name: string, ldconfig: string): boolean {
  if (ldconfig.includes(name)) return true;
  const dirs = [
    ...(Deno.env.get("LD_LIBRARY_PATH") ?? "").split(":").filter(Boolean),
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/local/cuda/lib64",
    "/usr/local/nvidia/lib64",
  ];
  return dirs.some((d) => exists(join(d, name)));
}

/** The facts of this host (Linux probes; elsewhere only the platform, which is all its choice needs). */
export function detectHardware(): Hardware {
  const os: Os = Deno.build.os === "darwin" ? "darwin" : Deno.build.os === "windows" ? "windows" : "linux";
  const arch: Arch = Deno.build.arch === "aarch64" ? "aarch64" : "x86_64";
  if (os !== "linux") return { os, arch, nvidiaDriver: false, cudaRuntime: false, vulkanGpu: false };
  let ldconfig = "";
  try {
    const out = new Deno.Command("ldconfig", { args: ["-p"], stdout: "piped", stderr: "null" }).outputSync();
    ldconfig = new TextDecoder().decode(out.stdout);
  } catch {
    // no ldconfig on PATH (a minimal image): the folder probes below decide
  }
  const nvidiaDriver = exists("/proc/driver/nvidia/version") || exists("/dev/nvidiactl");
  let renderNode = false;
  try {
    renderNode = [...Deno.readDirSync("/dev/dri")].some((e) => e.name.startsWith("renderD"));
  } catch {
    // no /dev/dri: no DRM GPU
  }
  return {
    os,
    arch,
    nvidiaDriver,
    cudaRuntime: linuxLibrary("libcudart.so.13", ldconfig) && linuxLibrary("libcublas.so.13", ldconfig),
    vulkanGpu: linuxLibrary("libvulkan.so.1", ldconfig) && (renderNode || nvidiaDriver),
  };
}

/** native/build/llama/ of this checkout. */
export const LLAMA_BUILD_DIR = fileURLToPath(new URL("../../../native/build/llama/", import.meta.url));

/**
 * The folder of the variant the server should load: the named one, or for "auto" the one setup recorded for
 * this host in variant.json (undefined when there is none: the CPU build's folder, the loader's default).
 */
export function llamaLibFor(variant: VariantId | "auto", llamaDir = LLAMA_BUILD_DIR): string | undefined {
  if (variant !== "auto") return variantLibDir(llamaDir, variant);
  try {
    const record = JSON.parse(Deno.readTextFileSync(join(llamaDir, "variant.json")));
    if (VARIANT_IDS.includes(record.default)) return variantLibDir(llamaDir, record.default);
  } catch {
    // not set up, or by an older setup: the default folder
  }
  return undefined;
}
