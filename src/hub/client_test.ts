import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeHub } from "../../tests/fake_hub.ts";
import { HubClient, hubOptionsFromEnv } from "./client.ts";
import { HubError } from "./errors.ts";

Deno.test("client: endpoint and token come from HF_ENDPOINT / HF_TOKEN", () => {
  assert.deepEqual(hubOptionsFromEnv({}), { endpoint: "https://huggingface.co", token: undefined });
  assert.deepEqual(hubOptionsFromEnv({ HF_ENDPOINT: "http://mirror:1/", HF_TOKEN: "t" }), {
    endpoint: "http://mirror:1/",
    token: "t",
  });
  const c = new HubClient({ endpoint: "http://mirror:1/prefix/" });
  assert.equal(
    c.fileUrl("o/n", "refs/pr/1", "onnx/model q4.onnx"),
    "http://mirror:1/prefix/o/n/resolve/refs%2Fpr%2F1/onnx/model%20q4.onnx",
  );
  assert.throws(() => new HubClient({ endpoint: "file:///etc" }), HubError);
  assert.throws(() => c.fileUrl("o/n", "main", "../x"), HubError);
});

Deno.test("client: the listing gives sizes, blob ids and LFS sha256", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(join(dir, "onnx"));
  await Deno.writeTextFile(join(dir, "config.json"), "{}");
  await Deno.writeFile(join(dir, "onnx", "model.onnx"), new Uint8Array(1234));
  await Deno.writeTextFile(join(dir, ".generated"), "hidden");
  const hub = await startFakeHub({ "o/n": { dir, pipelineTag: "feature-extraction", sha: "c".repeat(40) } });
  try {
    const info = await new HubClient({ endpoint: hub.url }).repoInfo("o/n");
    assert.equal(info.sha, "c".repeat(40));
    assert.equal(info.pipelineTag, "feature-extraction");
    const byPath = Object.fromEntries(info.files.map((f) => [f.path, f]));
    assert.deepEqual(Object.keys(byPath).sort(), ["config.json", "onnx/model.onnx"]);
    assert.deepEqual(byPath["config.json"], {
      path: "config.json",
      size: 2,
      blobId: hub.file("o/n", "config.json").gitSha1,
      sha256: undefined,
    });
    assert.equal(byPath["onnx/model.onnx"].size, 1234);
    assert.equal(byPath["onnx/model.onnx"].sha256, hub.file("o/n", "onnx/model.onnx").sha256);
    assert.equal(hub.requests[0].path, "/api/models/o/n/revision/main");

    await assert.rejects(
      () => new HubClient({ endpoint: hub.url }).repoInfo("o/missing"),
      /not found on the hub, or private \(set HF_TOKEN\)/,
    );
    await assert.rejects(
      () => new HubClient({ endpoint: hub.url }).repoInfo("o/n", "v9"),
      /revision "v9" of o\/n not found/,
    );
  } finally {
    await hub.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("client: hostile or broken listings are refused as a whole", async () => {
  const answer = (siblings: unknown[]) =>
    new HubClient({
      endpoint: "http://hub.test",
      fetch: () => Promise.resolve(Response.json({ sha: "x", siblings })),
    });
  await assert.rejects(
    () => answer([{ rfilename: "../../etc/cron.d/x", size: 1 }]).repoInfo("o/n"),
    /unsafe file name/,
  );
  await assert.rejects(() => answer([{ rfilename: "/abs", size: 1 }]).repoInfo("o/n"), /unsafe file name/);
  await assert.rejects(() => answer([{ rfilename: "a.json" }]).repoInfo("o/n"), /no size for a.json/);
  await assert.rejects(
    () => answer([{ rfilename: "a.onnx", size: 1, lfs: { sha256: "nothex", size: 1 } }]).repoInfo("o/n"),
    /not understood: siblings.0.lfs.sha256/,
  );
  await assert.rejects(
    () => answer([{ rfilename: "a", size: 5, lfs: { sha256: "a".repeat(64), size: 6 } }]).repoInfo("o/n"),
    /two sizes/,
  );
  // A commit id that is not a commit id is not used in URLs.
  assert.equal((await answer([]).repoInfo("o/n")).sha, undefined);
});

Deno.test("client: redirects are followed by hand, relative ones too, and bounded", async () => {
  const seen: { url: string; auth: string | null }[] = [];
  const client = new HubClient({
    endpoint: "http://hub.test",
    token: "tok",
    fetch: (input, init) => {
      const url = String(input);
      seen.push({ url, auth: new Headers(init?.headers).get("authorization") });
      if (url.endsWith("/loop")) {
        return Promise.resolve(new Response(null, { status: 302, headers: { location: "/loop" } }));
      }
      if (url.startsWith("http://hub.test/old")) {
        return Promise.resolve(new Response(null, { status: 307, headers: { location: "/new/file" } }));
      }
      if (url === "http://hub.test/new/file") {
        return Promise.resolve(
          new Response(null, { status: 302, headers: { location: "https://cdn.test/blob" } }),
        );
      }
      return Promise.resolve(new Response("ok"));
    },
  });
  assert.equal(await (await client.get("http://hub.test/old/file")).text(), "ok");
  assert.deepEqual(seen, [
    { url: "http://hub.test/old/file", auth: "Bearer tok" },
    { url: "http://hub.test/new/file", auth: "Bearer tok" },
    { url: "https://cdn.test/blob", auth: null },
  ]);
  await assert.rejects(() => client.get("http://hub.test/loop"), /too many redirects/);
});
