import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { startFakeHub } from "../../tests/fake_hub.ts";
import { HubClient } from "./client.ts";
import { downloadFile, type Expected, parseContentRange, partPath } from "./download.ts";
import { HubError } from "./errors.ts";

const REPO = "test-org/dl";
const BIG = 300_000;

function randomBytes(n: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  return out;
}

async function setup() {
  const src = await Deno.makeTempDir({ prefix: "hub-src-" });
  const dst = await Deno.makeTempDir({ prefix: "hub-dst-" });
  await Deno.mkdir(join(src, "onnx"));
  await Deno.writeFile(join(src, "onnx", "model.onnx"), randomBytes(BIG));
  await Deno.writeTextFile(
    join(src, "config.json"),
    JSON.stringify({ model_type: "bert", hidden: [1, 2, 3] }),
  );
  const hub = await startFakeHub({ [REPO]: { dir: src } }, { token: "hf_secret" });
  const client = new HubClient({ endpoint: hub.url, token: "hf_secret" });
  const expect = (path: string): Expected => {
    const f = hub.file(REPO, path);
    return f.lfs ? { size: f.data.length, sha256: f.sha256 } : { size: f.data.length, gitSha1: f.gitSha1 };
  };
  const url = (path: string) => client.fileUrl(REPO, "main", path);
  const fileRequests = () => hub.requests.filter((r) => r.server === "cdn" || r.path.includes("/resolve/"));
  return {
    hub,
    client,
    dst,
    expect,
    url,
    fileRequests,
    [Symbol.asyncDispose]: async () => {
      await hub.close();
      await Deno.remove(src, { recursive: true });
      await Deno.remove(dst, { recursive: true });
    },
  };
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

Deno.test("download: an LFS file through the CDN redirect; the token never leaves the hub's origin", async () => {
  await using t = await setup();
  const dest = join(t.dst, "onnx", "model.onnx");
  const seen: number[] = [];
  const out = await downloadFile(t.client, t.url("onnx/model.onnx"), dest, t.expect("onnx/model.onnx"), {
    onProgress: (d) => seen.push(d),
  });
  assert.deepEqual(out, { status: "downloaded", fetched: BIG });
  assert.equal(sha256(await Deno.readFile(dest)), t.hub.file(REPO, "onnx/model.onnx").sha256);
  assert.equal(seen.at(-1), BIG);
  const hubReq = t.hub.requests.find((r) => r.server === "hub")!;
  const cdnReq = t.hub.requests.find((r) => r.server === "cdn")!;
  assert.equal(hubReq.status, 302);
  assert.equal(hubReq.authorization, "Bearer hf_secret");
  assert.equal(cdnReq.status, 200);
  assert.equal(cdnReq.authorization, null);
  await assert.rejects(() => Deno.stat(partPath(dest)), Deno.errors.NotFound);

  // A second call finds the verified copy and fetches nothing.
  const before = t.hub.requests.length;
  const again = await downloadFile(t.client, t.url("onnx/model.onnx"), dest, t.expect("onnx/model.onnx"));
  assert.deepEqual(again, { status: "present", fetched: 0 });
  assert.equal(t.hub.requests.length, before);
});

Deno.test("download: a cut transfer keeps its part and the next call resumes with Range", async () => {
  await using t = await setup();
  const dest = join(t.dst, "onnx", "model.onnx");
  t.hub.cut("onnx/model.onnx", 120_000);
  const err = await downloadFile(t.client, t.url("onnx/model.onnx"), dest, t.expect("onnx/model.onnx"), {
    retries: 0,
  }).then(() => undefined, (e) => e);
  assert.ok(err instanceof HubError, String(err));
  assert.match(err.message, /interrupted at 120000 of 300000 bytes.*run the same pull again to resume/);
  assert.equal((await Deno.stat(partPath(dest))).size, 120_000);
  await assert.rejects(() => Deno.stat(dest), Deno.errors.NotFound);

  const out = await downloadFile(t.client, t.url("onnx/model.onnx"), dest, t.expect("onnx/model.onnx"));
  assert.deepEqual(out, { status: "resumed", fetched: BIG - 120_000 });
  const last = t.fileRequests().at(-1)!;
  assert.equal(last.range, "bytes=120000-");
  assert.equal(last.status, 206);
  assert.equal(sha256(await Deno.readFile(dest)), t.hub.file(REPO, "onnx/model.onnx").sha256);
});

Deno.test("download: retries resume within one call", async () => {
  await using t = await setup();
  const dest = join(t.dst, "config.json");
  const big = join(t.dst, "onnx", "model.onnx");
  t.hub.cut("onnx/model.onnx", 50_000, 2);
  const retried: string[] = [];
  const out = await downloadFile(t.client, t.url("onnx/model.onnx"), big, t.expect("onnx/model.onnx"), {
    retries: 3,
    retryDelayMs: 1,
    onRetry: (e) => retried.push(e.message),
  });
  assert.equal(out.status, "resumed");
  assert.equal(retried.length, 2);
  assert.deepEqual(t.fileRequests().filter((r) => r.server === "cdn").map((r) => r.range), [
    null,
    "bytes=50000-",
    "bytes=100000-",
  ]);
  assert.equal(sha256(await Deno.readFile(big)), t.hub.file(REPO, "onnx/model.onnx").sha256);
  // Small git files are cut and resumed the same way, and checked with their git blob id.
  t.hub.cut("config.json", 10);
  await downloadFile(t.client, t.url("config.json"), dest, t.expect("config.json"), { retryDelayMs: 1 });
  assert.deepEqual(await Deno.readFile(dest), t.hub.file(REPO, "config.json").data);
});

Deno.test("download: a server that ignores Range gets a fresh start, not a doubled file", async () => {
  await using t = await setup();
  const dest = join(t.dst, "onnx", "model.onnx");
  t.hub.cut("onnx/model.onnx", 100_000);
  await assert.rejects(() =>
    downloadFile(t.client, t.url("onnx/model.onnx"), dest, t.expect("onnx/model.onnx"), { retries: 0 })
  );
  t.hub.ignoreRange();
  const out = await downloadFile(t.client, t.url("onnx/model.onnx"), dest, t.expect("onnx/model.onnx"));
  assert.deepEqual(out, { status: "downloaded", fetched: BIG });
  const last = t.fileRequests().at(-1)!;
  assert.equal(last.range, "bytes=100000-");
  assert.equal(last.status, 200);
  assert.equal((await Deno.stat(dest)).size, BIG);
  assert.equal(sha256(await Deno.readFile(dest)), t.hub.file(REPO, "onnx/model.onnx").sha256);
});

Deno.test("download: a hash mismatch deletes the download and says so", async () => {
  await using t = await setup();
  for (const path of ["onnx/model.onnx", "config.json"]) {
    const dest = join(t.dst, path);
    t.hub.corrupt(path);
    const before = t.fileRequests().length;
    const err = await downloadFile(t.client, t.url(path), dest, t.expect(path), { retryDelayMs: 1 })
      .then(() => undefined, (e) => e);
    assert.ok(err instanceof HubError, String(err));
    assert.match(err.message, path.endsWith(".onnx") ? /sha256 mismatch/ : /git blob sha1 mismatch/);
    assert.match(err.message, /deleted/);
    await assert.rejects(() => Deno.stat(dest), Deno.errors.NotFound);
    await assert.rejects(() => Deno.stat(partPath(dest)), Deno.errors.NotFound);
    // Not retried: the same bytes would come back. (An LFS file costs the redirect plus the CDN request.)
    assert.equal(t.fileRequests().length - before, path.endsWith(".onnx") ? 2 : 1);
    t.hub.corrupt(path, false);
    await downloadFile(t.client, t.url(path), dest, t.expect(path));
    assert.deepEqual(await Deno.readFile(dest), t.hub.file(REPO, path).data);
  }
});

Deno.test("download: bad leftovers are replaced (too-long part, complete-but-wrong part, damaged copy)", async () => {
  await using t = await setup();
  const dest = join(t.dst, "onnx", "model.onnx");
  const good = t.hub.file(REPO, "onnx/model.onnx").data;
  await Deno.mkdir(join(t.dst, "onnx"));
  // A part longer than the file: thrown away, full download.
  await Deno.writeFile(partPath(dest), randomBytes(BIG + 5));
  assert.equal(
    (await downloadFile(t.client, t.url("onnx/model.onnx"), dest, t.expect("onnx/model.onnx"))).status,
    "downloaded",
  );
  // A local copy with the right size but wrong bytes is not trusted.
  const damaged = good.slice();
  damaged[7] ^= 1;
  await Deno.writeFile(dest, damaged);
  assert.equal(
    (await downloadFile(t.client, t.url("onnx/model.onnx"), dest, t.expect("onnx/model.onnx"))).status,
    "downloaded",
  );
  assert.deepEqual(await Deno.readFile(dest), good);
  // A complete part with wrong bytes fails its check, is deleted, and the next call succeeds.
  await Deno.remove(dest);
  await Deno.writeFile(partPath(dest), damaged);
  await assert.rejects(
    () => downloadFile(t.client, t.url("onnx/model.onnx"), dest, t.expect("onnx/model.onnx")),
    /sha256 mismatch/,
  );
  await assert.rejects(() => Deno.stat(partPath(dest)), Deno.errors.NotFound);
  await downloadFile(t.client, t.url("onnx/model.onnx"), dest, t.expect("onnx/model.onnx"));
  assert.deepEqual(await Deno.readFile(dest), good);
});

Deno.test("download: missing files and refused tokens are clear, non-retried errors", async () => {
  await using t = await setup();
  const dest = join(t.dst, "nope.json");
  await assert.rejects(
    () => downloadFile(t.client, t.url("nope.json"), dest, { size: 1 }, { retryDelayMs: 1 }),
    /nope.json: not found at http/,
  );
  const anon = new HubClient({ endpoint: t.hub.url });
  await assert.rejects(
    () => downloadFile(anon, t.url("config.json"), join(t.dst, "c.json"), t.expect("config.json")),
    /access denied \(set HF_TOKEN\)/,
  );
  assert.equal(t.fileRequests().length, 2);
});

Deno.test("download: Content-Range parsing", () => {
  assert.deepEqual(parseContentRange("bytes 5-9/10"), { start: 5, end: 9, total: 10 });
  assert.deepEqual(parseContentRange("bytes 5-9/*"), { start: 5, end: 9, total: undefined });
  assert.equal(parseContentRange("bytes */10"), undefined);
  assert.equal(parseContentRange(null), undefined);
});
