// Owns how a model's worker looks to transformers.js, which decides once, when its module is evaluated, what
// environment it runs in. Imported first by guest.ts, before anything loads transformers.js:
//  - `self.constructor` is DedicatedWorkerGlobalScope in a worker, which transformers.js takes for a browser
//    worker: no local model files, browser caches. Hidden, so it sees Deno (file system, onnxruntime-node).
//  - `location.origin` of a worker started from a file: URL is the string "null", which transformers.js
//    uses as a URL base for its bundled onnxruntime-web and fails. Hidden, as on the main thread.
for (const key of ["constructor", "location"]) {
  Object.defineProperty(globalThis, key, { value: undefined, configurable: true, writable: true });
}
