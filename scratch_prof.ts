import { BudgetedConstraint, vocabIndexOf } from "./src/engines/chat_constraint.ts";
import { compileJsonSchema, applyMask } from "./src/engines/constrain/mod.ts";
const json = JSON.parse(Deno.readTextFileSync("models/generated/bench/smollm2-135m-instruct/tokenizer.json"));
const ix = vocabIndexOf({ tokenizerJson: json, eosIds: new Set([2]) });
const SCHEMA = JSON.parse(Deno.readTextFileSync("/tmp/schema.json"));
const g = compileJsonSchema(SCHEMA, { strict: true });
let seed = 1; const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
const row = new Float32Array(49152);
const N = Number(Deno.args[0] ?? 96);
for (let round = 0; round < 4; round++) {
  const p = new BudgetedConstraint(g, ix, N);
  let tProc = 0, tAcc = 0, tMask = 0, steps = 0;
  for (let u = 0; u < N; u++) {
    for (let k = 0; k < row.length; k++) row[k] = rand() * 3;
    let t = performance.now();
    const r = p.process(row);
    tProc += performance.now() - t;
    let best = 0; for (let k = 1; k < row.length; k++) if (row[k] > row[best]) best = k;
    t = performance.now();
    p.accept(best);
    tAcc += performance.now() - t;
    steps++;
    if (best === 2) break;
  }
  // baseline: applyMask only
  const m = g.matcher(ix); const t = performance.now(); for (let i = 0; i < steps; i++) applyMask(row, m.mask()); tMask = performance.now() - t;
  console.log({ steps, procMsPerStep: (tProc / steps).toFixed(3), accMsPerStep: (tAcc / steps).toFixed(3), maskOnly: (tMask / steps).toFixed(3) });
}
