// Owns building native/ort_shim.c, the ONNX backend's native boundary (onnxruntime's C API behind functions of
// buffers and handles, so the backend runs under a path-scoped --allow-ffi). The shim has no link-time
// dependency: it dlopens the libonnxruntime that onnxruntime-node ships when the backend opens it. One C file,
// no headers; compiles in under a second.
// Output: native/build/ort/libort_shim.so. Usage: deno run -A native/ort.ts [--if-missing] [--force]
import { join } from "node:path";
import { BUILD_DIR, libName, NATIVE_DIR, setupFlags, SHIM_CFLAGS } from "./build.ts";

export const ORT_SHIM_DIR = join(BUILD_DIR, "ort");
export const ORT_SHIM_PATH = join(ORT_SHIM_DIR, libName("ort_shim"));

export async function buildOrtShim(opts: { ifMissing: boolean; force: boolean }): Promise<void> {
  const source = join(NATIVE_DIR, "ort_shim.c");
  const built = await Deno.stat(ORT_SHIM_PATH).catch(() => undefined);
  const fresh = built && (built.mtime?.getTime() ?? 0) >= ((await Deno.stat(source)).mtime?.getTime() ?? 0);
  if (opts.ifMissing && !opts.force && fresh) {
    console.log(`onnxruntime shim already built: ${ORT_SHIM_PATH}`);
    return;
  }
  await Deno.mkdir(ORT_SHIM_DIR, { recursive: true });
  const cc = Deno.env.get("CC") ?? "cc";
  const args = [
    ...SHIM_CFLAGS,
    source,
    "-o",
    ORT_SHIM_PATH,
    "-ldl",
    "-lpthread",
  ];
  console.log(`$ ${cc} ${args.join(" ")}`);
  const out = await new Deno.Command(cc, { args, stdout: "inherit", stderr: "inherit" }).output();
  if (out.code !== 0) throw new Error(`${cc} exited with ${out.code}`);
}

if (import.meta.main) await buildOrtShim(setupFlags(Deno.args));
