// Owns the small ONNX graph builder every model generator uses: named inputs/outputs, initializers stored as
// raw little-endian bytes (or as external data for >2 GB models), nodes with typed attributes, and the final
// ModelProto encoded by the onnx-proto npm package (protobufjs). Nothing here knows about any architecture.
import onnxProto from "onnx-proto";
import type { onnx as Onnx } from "onnx-proto";
import { join } from "node:path";

// onnx-proto ships a CommonJS bundle (protobufjs static module); Deno exposes it as the default export only,
// while its typings declare the `onnx` namespace as a named export.
export const onnx = (onnxProto as unknown as { onnx: typeof Onnx }).onnx;
export type { Onnx };

export const DataType = onnx.TensorProto.DataType;
export type DataTypeId = number;
/** A tensor dimension: a fixed size, or a symbolic name (dim_param) such as "batch_size". */
export type Dim = number | string;
export type TensorData = Float32Array | Int32Array | BigInt64Array | Uint8Array | Int8Array | Uint16Array;

/** Attribute values: plain numbers are INTs, use `{ f }`/`{ floats }` for FLOATs so the intent is explicit. */
export type AttrValue =
  | number
  | number[]
  | string
  | { f: number }
  | { floats: number[] }
  | { t: Onnx.ITensorProto }
  | { g: Onnx.IGraphProto };

/** Ops outside the default domain must say so; these are the ones our graphs may use. */
export const MS_DOMAIN = "com.microsoft";

function dataTypeOf(data: TensorData): DataTypeId {
  if (data instanceof Float32Array) return DataType.FLOAT;
  if (data instanceof Int32Array) return DataType.INT32;
  if (data instanceof BigInt64Array) return DataType.INT64;
  if (data instanceof Int8Array) return DataType.INT8;
  if (data instanceof Uint16Array) return DataType.FLOAT16;
  return DataType.UINT8;
}

/** Raw bytes view of a typed array; ONNX raw_data is little-endian, as is every machine we run on. */
export function bytesOf(data: TensorData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

function valueInfo(name: string, elemType: DataTypeId, dims: Dim[]): Onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, v: AttrValue): Onnx.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof v === "number") return { name, type: T.INT, i: v };
  if (typeof v === "string") return { name, type: T.STRING, s: new TextEncoder().encode(v) };
  if (Array.isArray(v)) return { name, type: T.INTS, ints: v };
  if ("f" in v) return { name, type: T.FLOAT, f: v.f };
  if ("floats" in v) return { name, type: T.FLOATS, floats: v.floats };
  if ("g" in v) return { name, type: T.GRAPH, g: v.g };
  return { name, type: T.TENSOR, t: v.t };
}

export interface OpOptions {
  /** Number of outputs (auto-named) or explicit output names. */
  outputs?: number | string[];
  domain?: string;
  name?: string;
}

export interface BuildOptions {
  producer?: string;
  /** Extra opset imports beyond the default domain, e.g. { "com.microsoft": 1 } for MatMulNBits. */
  extraOpsets?: Record<string, number>;
  /** Default-domain opset version. */
  opset?: number;
}

interface Initializer {
  name: string;
  dims: number[];
  dataType: DataTypeId;
  bytes: Uint8Array;
}

/** Threshold above which a model's weights go to a side file: protobuf messages cannot exceed 2 GB. */
export const EXTERNAL_DATA_THRESHOLD = 2 ** 31 - 2 ** 26;
/**
 * Initializers smaller than this stay inline even in an external-data model (onnx's save default): shapes and
 * axes must be readable by shape inference before the data file is opened.
 */
const EXTERNAL_MIN_BYTES = 1024;

export class GraphBuilder {
  readonly nodes: Onnx.INodeProto[] = [];
  readonly inputs: Onnx.IValueInfoProto[] = [];
  readonly outputs: Onnx.IValueInfoProto[] = [];
  readonly initializers: Initializer[] = [];
  private readonly used = new Set<string>();
  private counter = 0;

  constructor(readonly graphName: string) {}

  /** A fresh, readable, unique value name. */
  fresh(hint: string): string {
    let name = hint;
    while (this.used.has(name)) name = `${hint}_${++this.counter}`;
    this.used.add(name);
    return name;
  }

  input(name: string, elemType: DataTypeId, dims: Dim[]): string {
    this.used.add(name);
    this.inputs.push(valueInfo(name, elemType, dims));
    return name;
  }

  /** Declares `value` a graph output under `name`, inserting an Identity when the names differ. */
  output(value: string, name: string, elemType: DataTypeId, dims: Dim[]): string {
    if (value !== name) this.op("Identity", [value], {}, { outputs: [name] });
    this.outputs.push(valueInfo(name, elemType, dims));
    return name;
  }

  init(hint: string, data: TensorData, dims: number[], dataType?: DataTypeId): string {
    const count = dims.reduce((a, b) => a * b, 1);
    if (count !== data.length) throw new Error(`initializer ${hint}: ${data.length} values for dims ${dims}`);
    const name = this.fresh(hint);
    this.initializers.push({ name, dims, dataType: dataType ?? dataTypeOf(data), bytes: bytesOf(data) });
    return name;
  }

  /** Small constants (shapes, axes, scalars) as initializers; dims [] gives a scalar. */
  i64(hint: string, values: number[], dims: number[] = [values.length]): string {
    return this.init(hint, BigInt64Array.from(values, (v) => BigInt(v)), dims);
  }

  f32(hint: string, values: number[], dims: number[] = [values.length]): string {
    return this.init(hint, Float32Array.from(values), dims);
  }

  private readonly constCache = new Map<string, string>();

  /** Shared int64 constant (axes, shapes, indices): one initializer per distinct value list. */
  ci64(values: number[], dims: number[] = [values.length]): string {
    const key = `i64:${dims}:${values}`;
    let name = this.constCache.get(key);
    if (!name) {
      this.constCache.set(
        key,
        name = this.i64(`const_i64_${values.join("_").replace(/-/g, "m")}`, values, dims),
      );
    }
    return name;
  }

  /** Shared float constant (scales, epsilons, masks). */
  cf32(values: number[], dims: number[] = [values.length]): string {
    const key = `f32:${dims}:${values}`;
    let name = this.constCache.get(key);
    if (!name) this.constCache.set(key, name = this.f32("const_f32", values, dims));
    return name;
  }

  /** Adds a node and returns its output names. */
  opN(
    opType: string,
    inputs: string[],
    attrs: Record<string, AttrValue> = {},
    opts: OpOptions = {},
  ): string[] {
    const outNames = Array.isArray(opts.outputs)
      ? opts.outputs.map((n) => (this.used.add(n), n))
      : Array.from({ length: opts.outputs ?? 1 }, (_, i) => this.fresh(`${opts.name ?? opType}_o${i}`));
    this.nodes.push({
      name: this.fresh(`n_${opts.name ?? opType}`),
      opType,
      domain: opts.domain ?? "",
      input: inputs,
      output: outNames,
      attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
    });
    return outNames;
  }

  /**
   * A branch body for If: one single-input node per output (`value` names it), reading outer-scope values;
   * outputs are typed `elemType` with `dims`.
   */
  subgraph(
    name: string,
    steps: { value: string; op: string; inputs: string[] }[],
    elemType: DataTypeId,
    dims: Dim[],
  ): Onnx.IGraphProto {
    const node: Onnx.INodeProto[] = [];
    const output: Onnx.IValueInfoProto[] = [];
    for (const step of steps) {
      const out = this.fresh(`${name}_${step.value}`);
      node.push({
        name: this.fresh(`n_${name}_${step.op}`),
        opType: step.op,
        input: step.inputs,
        output: [out],
      });
      output.push(valueInfo(out, elemType, dims));
    }
    return { name, node, output };
  }

  /** Adds a single-output node and returns its output name. */
  op(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}, opts: OpOptions = {}): string {
    return this.opN(opType, inputs, attrs, opts)[0];
  }

  private totalBytes(): number {
    return this.initializers.reduce((a, t) => a + t.bytes.length, 0);
  }

  private modelProto(opts: BuildOptions, external?: string): Onnx.ModelProto {
    let offset = 0;
    const initializer = this.initializers.map((t): Onnx.ITensorProto => {
      if (!external || t.bytes.length < EXTERNAL_MIN_BYTES) {
        return { name: t.name, dims: t.dims, dataType: t.dataType, rawData: t.bytes };
      }
      const entry: Onnx.ITensorProto = {
        name: t.name,
        dims: t.dims,
        dataType: t.dataType,
        dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
        externalData: [
          { key: "location", value: external },
          { key: "offset", value: String(offset) },
          { key: "length", value: String(t.bytes.length) },
        ],
      };
      offset += t.bytes.length;
      return entry;
    });
    const opsetImport = [{ domain: "", version: opts.opset ?? 17 }];
    for (const [domain, version] of Object.entries(opts.extraOpsets ?? {})) {
      opsetImport.push({ domain, version });
    }
    return onnx.ModelProto.create({
      irVersion: 8,
      producerName: opts.producer ?? "openai-local tools/models",
      opsetImport,
      graph: {
        name: this.graphName,
        node: this.nodes,
        input: this.inputs,
        output: this.outputs,
        initializer,
      },
    });
  }

  /**
   * Writes `<dir>/<fileName>`; weights go inline as raw_data unless they pass the 2 GB protobuf limit (or
   * `forceExternal`), in which case they go to `<fileName>_data` in initializer order, as optimum exports do.
   */
  async save(
    dir: string,
    fileName: string,
    opts: BuildOptions & { forceExternal?: boolean } = {},
  ): Promise<void> {
    const external = opts.forceExternal || this.totalBytes() > EXTERNAL_DATA_THRESHOLD;
    const dataName = `${fileName}_data`;
    const proto = this.modelProto(opts, external ? dataName : undefined);
    await Deno.writeFile(join(dir, fileName), onnx.ModelProto.encode(proto).finish());
    if (!external) return;
    const file = await Deno.open(join(dir, dataName), { write: true, create: true, truncate: true });
    try {
      for (const t of this.initializers) {
        if (t.bytes.length < EXTERNAL_MIN_BYTES) continue;
        for (let off = 0; off < t.bytes.length;) off += await file.write(t.bytes.subarray(off));
      }
    } finally {
      file.close();
    }
  }
}
