// Tests the ONNX graph builder's file output: inline raw_data by default, and the external-data layout
// (`<file>_data`, offsets in initializer order) used for models past protobuf's 2 GB limit.
import assert from "node:assert/strict";
import { join } from "node:path";
import { DataType, GraphBuilder, type Onnx, onnx } from "./onnx_builder.ts";

async function readGraph(path: string): Promise<Onnx.GraphProto> {
  return onnx.ModelProto.decode(await Deno.readFile(path)).graph as Onnx.GraphProto;
}

function tinyGraph(): GraphBuilder {
  const b = new GraphBuilder("tiny");
  const x = b.input("x", DataType.FLOAT, ["batch", 3]);
  const y = b.op("Add", [
    b.op("MatMul", [x, b.f32("w", [1, 2, 3, 4, 5, 6, 7, 8, 9], [3, 3])]),
    b.f32("bias", [1, 1, 1]),
  ]);
  b.output(y, "y", DataType.FLOAT, ["batch", 3]);
  return b;
}

Deno.test("onnx_builder: weights inline as raw_data", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await tinyGraph().save(dir, "model.onnx");
    const model = onnx.ModelProto.decode(await Deno.readFile(join(dir, "model.onnx")));
    assert.equal(Number(model.opsetImport[0].version), 17);
    const graph = await readGraph(join(dir, "model.onnx"));
    assert.deepEqual(graph.input.map((i) => i.name), ["x"]);
    assert.deepEqual(graph.output.map((o) => o.name), ["y"]);
    const w = graph.initializer.find((t) => t.name === "w")!;
    assert.deepEqual(Array.from(new Float32Array(w.rawData!.slice().buffer as ArrayBuffer)), [
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8,
      9,
    ]);
    await assert.rejects(Deno.stat(join(dir, "model.onnx_data")));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("onnx_builder: external data goes to <file>_data in initializer order; small tensors stay inline", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const b = tinyGraph();
    // Two weights past the 1 KiB inline limit, around the small ones.
    const big1 = b.f32("big1", Array.from({ length: 300 }, (_, i) => i));
    const big2 = b.f32("big2", Array.from({ length: 256 }, () => 2));
    b.output(b.op("Concat", [big1, big2], { axis: 0 }), "z", DataType.FLOAT, [556]);
    await b.save(dir, "model.onnx", { forceExternal: true });
    const graph = await readGraph(join(dir, "model.onnx"));
    const data = await Deno.readFile(join(dir, "model.onnx_data"));
    assert.equal(data.length, (300 + 256) * 4);
    const entries = Object.fromEntries(graph.initializer.map((t) => [
      t.name,
      t.externalData?.length ? Object.fromEntries(t.externalData.map((e) => [e.key, e.value])) : "inline",
    ]));
    // Shapes and small weights stay readable to shape inference without the data file.
    assert.deepEqual(entries, {
      w: "inline",
      bias: "inline",
      big1: { location: "model.onnx_data", offset: "0", length: "1200" },
      big2: { location: "model.onnx_data", offset: "1200", length: "1024" },
    });
    assert.deepEqual(Array.from(new Float32Array(data.slice(1200).buffer)), new Array(256).fill(2));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
