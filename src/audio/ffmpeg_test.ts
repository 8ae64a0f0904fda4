import assert from "node:assert/strict";
import { decodeWithFfmpeg } from "./ffmpeg.ts";

Deno.test("ffmpeg fallback: undefined when the binary is absent, an error for junk", async () => {
  assert.equal(await decodeWithFfmpeg(new Uint8Array(10), { bin: "/nonexistent/ffmpeg" }), undefined);
  const hasFfmpeg = await new Deno.Command("ffmpeg", { args: ["-version"], stdout: "null", stderr: "null" })
    .output().then((o) => o.success, () => false);
  if (!hasFfmpeg) return;
  await assert.rejects(decodeWithFfmpeg(crypto.getRandomValues(new Uint8Array(2000))));
});
