// Owns the float16 conversion of a built graph, the pass that turns an fp32 export into `model_fp16.onnx` and
// a q4 one into `model_q4f16.onnx` (what onnxconverter-common's convert_float_to_float16 does for the
// onnx-community repos): float initializers, graph inputs/outputs (so the KV cache and logits are float16 too),
// If-branch outputs and Cast targets become FLOAT16; values beyond float16's range are clamped to ±65504 (the
// masks' "most negative float" included) instead of turning into infinities.
import { DataType, type GraphBuilder, type Onnx } from "./onnx_builder.ts";

const F16_MAX = 65504;

/** The float32 bytes of an initializer as float16 bytes, clamped to float16's finite range. */
function halfBytes(bytes: Uint8Array): Uint8Array {
  const f32 = new Float32Array(bytes.slice().buffer);
  const f16 = new Float16Array(f32.length);
  for (let i = 0; i < f32.length; i++) f16[i] = Math.max(-F16_MAX, Math.min(F16_MAX, f32[i]));
  return new Uint8Array(f16.buffer);
}

function retype(info: Onnx.IValueInfoProto): void {
  const t = info.type?.tensorType;
  if (t && t.elemType === DataType.FLOAT) t.elemType = DataType.FLOAT16;
}

function retypeNodes(nodes: Onnx.INodeProto[]): void {
  for (const node of nodes) {
    for (const a of node.attribute ?? []) {
      if (node.opType === "Cast" && a.name === "to" && Number(a.i) === DataType.FLOAT) a.i = DataType.FLOAT16;
      if (a.g) {
        for (const o of a.g.output ?? []) retype(o);
        retypeNodes(a.g.node ?? []);
      }
    }
  }
}

/**
 * Converts `b` in place to float16. Graphs that quantize activations at run time (DynamicQuantizeLinear only
 * takes float32) have no float16 form and are refused.
 */
export function convertToFloat16(b: GraphBuilder): GraphBuilder {
  if (b.nodes.some((n) => n.opType === "DynamicQuantizeLinear")) {
    throw new Error("a graph with DynamicQuantizeLinear has no float16 form");
  }
  for (const t of b.initializers) {
    if (t.dataType !== DataType.FLOAT) continue;
    t.dataType = DataType.FLOAT16;
    t.bytes = halfBytes(t.bytes);
  }
  for (const v of [...b.inputs, ...b.outputs]) retype(v);
  retypeNodes(b.nodes);
  return b;
}
