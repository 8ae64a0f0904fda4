// Tests that every generator is deterministic: two runs into fresh folders give byte-identical files (the
// real-size SmolLM2 benchmark model only when MODELS_BENCH_TEST=1, since it takes ~20 s).
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import * as chatTiny from "./chat_tiny.ts";
import * as embedTiny from "./embed_tiny.ts";
import * as minilm from "./bench_minilm.ts";
import * as smollm2 from "./bench_smollm2.ts";

async function listFiles(dir: string, root = dir): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) out.push(relative(root, p) + "/", ...await listFiles(p, root));
    else out.push(relative(root, p));
  }
  return out.sort();
}

async function assertSameFiles(a: string, b: string): Promise<void> {
  const files = await listFiles(a);
  assert.deepEqual(await listFiles(b), files);
  for (const f of files.filter((f) => !f.endsWith("/"))) {
    const [x, y] = await Promise.all([Deno.readFile(join(a, f)), Deno.readFile(join(b, f))]);
    assert.ok(x.length === y.length && x.every((v, i) => v === y[i]), `${f} differs between runs`);
  }
}

const GENERATORS = [
  { name: "chat-tiny", gen: chatTiny, slow: false },
  { name: "embed-tiny", gen: embedTiny, slow: false },
  { name: "bench/all-minilm-l6-v2", gen: minilm, slow: false },
  { name: "bench/smollm2-135m-instruct", gen: smollm2, slow: true },
];

for (const { name, gen, slow } of GENERATORS) {
  Deno.test({
    name: `${name}: two generator runs give byte-identical files`,
    ignore: slow && Deno.env.get("MODELS_BENCH_TEST") !== "1",
    fn: async () => {
      const [a, b] = [await Deno.makeTempDir(), await Deno.makeTempDir()];
      try {
        await gen.generate(a);
        await gen.generate(b);
        await assertSameFiles(a, b);
      } finally {
        await Deno.remove(a, { recursive: true });
        await Deno.remove(b, { recursive: true });
      }
    },
  });
}
