import assert from "node:assert/strict";
import { takeFlags, UsageError } from "./args.ts";

const SPEC = { dtype: "string", as: "string", json: "bool" } as const;

Deno.test("args: own flags are taken out in every form, the rest keeps its order", () => {
  const { flags, rest } = takeFlags(
    ["pull", "--dtype", "q4", "--models-dir=/m", "org/x", "--as=my-id", "--json", "--port", "1"],
    SPEC,
  );
  assert.deepEqual(flags, { dtype: "q4", as: "my-id", json: true });
  assert.deepEqual(rest, ["pull", "--models-dir=/m", "org/x", "--port", "1"]);
  assert.deepEqual(takeFlags(["--json=false", "--as=a=b"], SPEC).flags, { json: false, as: "a=b" });
  assert.deepEqual(takeFlags(["--", "--dtype", "x"], SPEC).rest, ["--", "--dtype", "x"]);
});

Deno.test("args: a string flag without a value is a usage error", () => {
  assert.throws(() => takeFlags(["--dtype"], SPEC), UsageError, "--dtype: needs a value");
  assert.throws(() => takeFlags(["--dtype", "--as=x"], SPEC), UsageError);
  assert.throws(() => takeFlags(["--json=maybe"], SPEC), UsageError, "expected true or false");
});
