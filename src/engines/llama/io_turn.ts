// Owns how the model's thread lets its pending I/O in between two rounds of compute. Deno runs a chain of
// macrotasks that is never empty (setImmediate after setImmediate) without polling for I/O but once every
// several dozen turns (as a scheduler would that looks for outside events only every so many polls while a
// task is always ready), so a runner decoding without a pause read the server's next message late: a request
// arriving while one stream ran in rounds of ~4 ms got its first token 45-120 ms later than on an idle one
// (in 30 ms chunks, tried, ~350 ms). A timer lets it in but costs 1-2 ms (Deno holds a zero timer back); an
// async op that completes on another thread leaves the runtime nothing to run for ~0.04 ms, and it polls for
// I/O meanwhile (mostly: an op done before the runtime looks gives no turn, which a busy machine makes
// likelier). A SHA-1 of nothing is such an op, and needs no permission.
const NOTHING = new Uint8Array(0);

/** Resolves after ~0.04 ms off this thread, in which the runtime most often polls for I/O. */
export function ioTurn(): Promise<unknown> {
  return crypto.subtle.digest("SHA-1", NOTHING);
}
