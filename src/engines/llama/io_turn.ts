// Owns how the model's thread lets its pending I/O in between two rounds of compute. Deno runs a chain of
// macrotasks that is never empty (setImmediate after setImmediate) without polling for I/O but once every
// several dozen turns (as a scheduler would that looks for outside events only every so many polls while a
// task is always ready), so a runner decoding without a pause read the server's next message late: a request
// arriving while one stream ran in rounds of ~4 ms got its first token 45-120 ms later than on an idle one
// (in 30 ms chunks, tried, ~350 ms). A timer lets it in but costs 1-2 ms (Deno holds a zero timer back); an
// async op that completes on another thread does too: the round after it reads what came meanwhile. A SHA-1
// of nothing is such an op, and needs no permission. The batcher starts it before a decode, so it is done by
// the decode's end: awaited only then, one stream's rounds paid ~0.07 ms for the turn instead of ~0.16 ms
// (two trips between threads), and messages were read as soon (a request arriving mid-stream: its frame read
// 9-12 ms after it was sent, median, either way; 0.4 ms on an idle runner).
const NOTHING = new Uint8Array(0);

/** Resolves after ~0.04 ms off this thread; the round that waits for it comes after an I/O poll. */
export function ioTurn(): Promise<unknown> {
  return crypto.subtle.digest("SHA-1", NOTHING);
}
