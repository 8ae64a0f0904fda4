// Owns what a transformers.js model holds in memory, for the memory budget: the ONNX files of the one dtype it
// loads (the graph and its external-data files, which onnxruntime reads whole), and the bytes of KV-cache
// tensors. Other dtypes' files in the same folder are never loaded and never counted.
import { join } from "node:path";
import { DTYPE_SUFFIX } from "../../hub/dtypes.ts";

/** The files onnxruntime reads for a dtype: onnx/<name><suffix>.onnx and its .onnx_data* beside it, if present. */
export function onnxWeightFiles(dir: string, dtype: string, name = "model"): string[] {
  const base = `${name}${DTYPE_SUFFIX[dtype] ?? ""}.onnx`;
  const onnxDir = join(dir, "onnx");
  const files: string[] = [];
  try {
    for (const e of Deno.readDirSync(onnxDir)) {
      if (e.isFile && (e.name === base || e.name.startsWith(`${base}_data`))) {
        files.push(join(onnxDir, e.name));
      }
    }
  } catch {
    // No folder yet (a hub model not downloaded): nothing is known.
  }
  return files.sort();
}

/** The summed size of files; missing ones count 0. */
export function filesBytes(paths: readonly string[]): number {
  let total = 0;
  for (const p of paths) {
    try {
      total += Deno.statSync(p).size;
    } catch {
      // gone: counts nothing
    }
  }
  return total;
}

const ELEMENT_BYTES: Record<string, number> = {
  float32: 4,
  float16: 2,
  bfloat16: 2,
  float64: 8,
  int8: 1,
  uint8: 1,
  int16: 2,
  uint16: 2,
  int32: 4,
  uint32: 4,
  int64: 8,
  uint64: 8,
  bool: 1,
};

/** Bytes of a tensor's data (4 per element for a type not in the table, the common case). */
export function tensorBytes(t: { type: string; dims: readonly number[] }): number {
  return t.dims.reduce((n, d) => n * d, 1) * (ELEMENT_BYTES[t.type] ?? 4);
}
