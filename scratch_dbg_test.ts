import { compileJsonSchema } from "./src/engines/constrain/mod.ts";
import { prng } from "./src/engines/constrain/synthetic_vocab.ts";
import { randomSchema, sharedVocab, validate } from "./src/engines/constrain/test_support.ts";
import { BudgetedConstraint, tokensToWrite } from "./src/engines/chat_constraint.ts";
const { index: ix } = sharedVocab();
let fails = 0, n = 0, trunc = 0;
for (const seed of [4, 5, 6, 7, 8, 9]) {
  const rand = prng(seed);
  const bias = new Float32Array(ix.size).fill(-Infinity);
  for (let id = 0; id < ix.size; id++) { const t = ix.tokens[id]; if (!t) continue; bias[id] = t.some((b) => b === 0x22 || b === 0x7d || b === 0x5d) ? -1 * rand() : 1 * rand(); }
  for (let i = 0; i < 100; i++) {
    const schema = randomSchema(rand);
    const g = compileJsonSchema(schema);
    const least = tokensToWrite(ix.full, g.matcher(ix).completion()) + 1;
    const budget = least + [0, 1, 2, 5, 30][i % 5];
    const p = new BudgetedConstraint(g, ix, budget);
    const row = new Float32Array(ix.size);
    const out: number[] = [];
    let ended = false;
    const trace: string[] = [];
    for (let u = 0; u < budget; u++) {
      for (let k = 0; k < row.length; k++) row[k] = bias[k] + 3 * rand();
      const c = p.matcher.completion();
      p.process(row);
      trace.push(`${budget - u}:${tokensToWrite(ix.full, c)}:${JSON.stringify(new TextDecoder().decode(c)).slice(0,80)}`);
      let best = 0; for (let k = 1; k < row.length; k++) if (row[k] > row[best]) best = k;
      {
        const cc = p.matcher.clone(); cc.accept(best);
        const after = ix.eos.includes(best) ? 0 : tokensToWrite(ix.full, cc.completion());
        if (after > budget - u - 2 && tokensToWrite(ix.full, c) <= budget - u - 1) {
          let finite = 0; for (const v of row) if (v > -Infinity) finite++;
          console.log("VIOLATION at", budget - u, "need", tokensToWrite(ix.full, c), "after", after, "token", JSON.stringify(new TextDecoder().decode(ix.tokens[best] ?? new Uint8Array())), "finite", finite);
        }
      }
      p.accept(best);
      if (ix.eos.includes(best)) { ended = true; break; }
      out.push(...ix.tokens[best]!);
      trace[trace.length-1] += " <- " + JSON.stringify(new TextDecoder().decode(ix.tokens[best]!));
    }
    n++;
    const text = new TextDecoder().decode(new Uint8Array(out));
    if (p.truncated) trunc++;
    if (!ended) { fails++; console.log("FAIL", budget, least, text.slice(0, 200)); console.log(trace.slice(-30).join("\n")); continue; }
    const err = validate(schema, JSON.parse(text));
    if (err) { fails++; console.log("INVALID", err, text); }
  }
}
console.log({ n, fails, trunc });
