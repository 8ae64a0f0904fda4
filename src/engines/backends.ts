// Owns the one list of the backends built into this server, in the order their hub layouts are tried, and
// the lookup by engine kind. Adding a backend is its folder (with its descriptor) plus a line here.
import type { BackendDescriptor } from "./descriptor.ts";
import type { EngineKind } from "./types.ts";
import { LLAMA } from "./llama/descriptor.ts";
import { TRANSFORMERS } from "./transformers/descriptor.ts";
import { WHISPER } from "./whisper/descriptor.ts";

/** Every backend; hub layouts are tried in this order (a repo with ggml and ONNX files is a whisper repo). */
export const BACKENDS: readonly BackendDescriptor[] = [WHISPER, LLAMA, TRANSFORMERS];

export function backendOf(kind: EngineKind): BackendDescriptor {
  const d = BACKENDS.find((b) => b.kind === kind);
  if (!d) throw new Error(`no ${kind} backend is built into this server`);
  return d;
}
