// Owns the one table of transformers.js weight types: the file-name suffix of each dtype
// (onnx/model<suffix>.onnx, as DEFAULT_DTYPE_SUFFIX_MAPPING in transformers.js's utils/dtypes.js).

export const DTYPE_SUFFIX: Readonly<Record<string, string>> = {
  fp32: "",
  fp16: "_fp16",
  int8: "_int8",
  uint8: "_uint8",
  q8: "_quantized",
  q4: "_q4",
  q4f16: "_q4f16",
  bnb4: "_bnb4",
  q2: "_q2",
  q2f16: "_q2f16",
  q1: "_q1",
  q1f16: "_q1f16",
};

export function knownDtype(dtype: string): boolean {
  return dtype in DTYPE_SUFFIX;
}
