import assert from "node:assert/strict";
import { ceilScaled, floorScaled, nextDown, nextUp, numSpec, shortestNumber } from "./numbers.ts";
import { compileJsonSchema, SchemaError } from "./schema.ts";
import { VocabIndex } from "./vocab.ts";

const enc = new TextEncoder();
// Matchers here only take bytes; a one-token vocabulary is enough to build one.
const ix = VocabIndex.build([enc.encode("0")], []);

Deno.test("numbers: exact scaling of doubles and neighbouring doubles", () => {
  assert.equal(ceilScaled(0.1, 1), 2n, "0.1 is slightly above 1/10");
  assert.equal(floorScaled(0.1, 1), 1n);
  assert.equal(ceilScaled(-2.5, 0), -2n);
  assert.equal(floorScaled(-2.5, 0), -3n);
  assert.equal(ceilScaled(3, 2), 300n);
  assert.ok(nextUp(1) > 1 && nextDown(1) < 1 && nextUp(nextDown(1)) === 1);
  assert.equal(nextUp(0), Number.MIN_VALUE);
  assert.ok(nextDown(0) < 0 && nextUp(-1) > -1);
});

Deno.test("numbers: shortest number in range", () => {
  const s = (integer: boolean, b: Record<string, number>) => shortestNumber(numSpec(integer, b, 15, 6));
  assert.equal(s(false, {}), "0");
  assert.equal(s(true, { minimum: 5, maximum: 10 }), "5");
  assert.equal(s(false, { exclusiveMinimum: 1, maximum: 1.5 }), "1.1");
  assert.equal(s(false, { minimum: 99.5, maximum: 1000 }), "100");
  assert.equal(s(true, { maximum: -3 }), "-3");
  assert.equal(s(false, { minimum: -0.75, maximum: -0.7 }), "-0.7");
  // Bounds are met as validators see them, on the parsed double: "0.3" is within maximum 0.3.
  assert.equal(s(false, { minimum: 0.3, maximum: 0.3 }), "0.3");
  assert.equal(s(false, { minimum: 0.1 + 0.2, maximum: 0.300001 }), "0.300001");
  assert.equal(s(true, { exclusiveMinimum: 0.2, exclusiveMaximum: 0.8 }), null);
  assert.equal(s(true, { minimum: 3, maximum: 2 }), null);
});

/** Every JSON number with at most 2 integer and 2 fraction digits. */
function allNumbers(integer: boolean): string[] {
  const ints = ["0", ...Array.from({ length: 99 }, (_, i) => String(i + 1))];
  const fracs = integer ? [""] : [
    "",
    ...Array.from({ length: 10 }, (_, i) => `.${i}`),
    ...Array.from({ length: 100 }, (_, i) => `.${String(i).padStart(2, "0")}`),
  ];
  const out: string[] = [];
  for (const sign of ["", "-"]) for (const i of ints) for (const f of fracs) out.push(sign + i + f);
  return out;
}

Deno.test("numbers: within the caps, exactly the numbers in range are accepted; every prefix can finish", () => {
  const bounds: Record<string, number>[] = [
    {},
    { minimum: 0 },
    { minimum: -1.5, maximum: 7.25 },
    { exclusiveMinimum: -10, exclusiveMaximum: 0.5 },
    { minimum: 3, exclusiveMaximum: 3.01 },
    { exclusiveMinimum: 0.1, maximum: 0.3 },
    { maximum: -98.5 },
    { minimum: 42, maximum: 42 },
  ];
  const invalid = ["01", "1.", "-", ".5", "1e5", "--1", "+1", "1.234", "123", "00", "-.5", "0x1", "1..2"];
  for (const integer of [false, true]) {
    const all = allNumbers(integer);
    for (const b of bounds) {
      const schema = { type: integer ? "integer" : "number", ...b };
      const inRange = (v: number) =>
        (b.minimum === undefined || v >= b.minimum) && (b.maximum === undefined || v <= b.maximum) &&
        (b.exclusiveMinimum === undefined || v > b.exclusiveMinimum) &&
        (b.exclusiveMaximum === undefined || v < b.exclusiveMaximum);
      if (!all.some((t) => inRange(Number(t)))) {
        // An empty range (integers in (0.1, 0.3]) is a schema error, not a grammar that cannot finish.
        assert.throws(() => compileJsonSchema(schema, { intDigits: 2, fracDigits: 2 }), SchemaError);
        continue;
      }
      const g = compileJsonSchema(schema, { intDigits: 2, fracDigits: 2 });
      for (const text of all) {
        const m = g.matcher(ix);
        const ok = m.acceptBytes(enc.encode(text)) && m.isComplete();
        assert.equal(ok, inRange(Number(text)), `${text} against ${JSON.stringify(schema)}`);
      }
      for (const text of invalid) {
        const m = g.matcher(ix);
        assert.ok(!(m.acceptBytes(enc.encode(text)) && m.isComplete()), `${text} accepted`);
      }
      // Any accepted prefix can be completed into an in-range number.
      const prefixes = new Set(
        all.flatMap((t) => Array.from({ length: t.length }, (_, i) => t.slice(0, i + 1))),
      );
      for (const p of prefixes) {
        const m = g.matcher(ix);
        if (!m.acceptBytes(enc.encode(p))) continue;
        const c = m.completion();
        assert.ok(m.acceptBytes(c) && m.isComplete(), `prefix ${p} + ${new TextDecoder().decode(c)}`);
        const v = Number(p + new TextDecoder().decode(c));
        assert.ok(inRange(v), `${p} completed to ${v} out of ${JSON.stringify(schema)}`);
      }
    }
  }
});

Deno.test("numbers: zod's ±MAX_SAFE_INTEGER bounds cost nothing", () => {
  const s = numSpec(true, { minimum: -9007199254740991, maximum: 9007199254740991 });
  assert.equal(s.lo, null);
  assert.equal(s.hi, null);
});
