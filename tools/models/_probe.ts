import { AutoTokenizer, env, pipeline } from "@huggingface/transformers";
env.allowRemoteModels = false;
env.localModelPath = new URL("../../models/generated/", import.meta.url).pathname;
const t0 = performance.now();
const tok = await AutoTokenizer.from_pretrained("embed-tiny");
console.log(tok.encode("Hello, wonderful World! Café 東京"), tok.tokenize("Hello, wonderful World! Café 東京"));
const ext = await pipeline("feature-extraction", "embed-tiny");
const out = await ext(["hello world", "the quick brown fox", "hello world"], { pooling: "mean", normalize: true });
console.log(out.dims, Array.from(out.data).slice(0, 8), performance.now() - t0);
