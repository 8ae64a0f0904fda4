import assert from "node:assert/strict";
import { Pool } from "./pool.ts";

function counting(max: number) {
  const destroyed: number[] = [];
  let made = 0;
  const pool = new Pool<number>(max, () => Promise.resolve(++made), (n) => destroyed.push(n));
  return { pool, destroyed, made: () => made };
}

Deno.test("pool: creates lazily up to max, reuses released items, waiters are served in order", async () => {
  const { pool, made } = counting(2);
  const a = await pool.acquire();
  const b = await pool.acquire();
  assert.equal(made(), 2);
  const order: number[] = [];
  const c = pool.acquire().then((x) => (order.push(1), x));
  const d = pool.acquire().then((x) => (order.push(2), x));
  assert.equal(pool.waiting, 2);
  pool.release(a);
  pool.release(b);
  assert.deepEqual([await c, await d], [a, b]);
  assert.deepEqual(order, [1, 2]);
  assert.equal(made(), 2);
});

Deno.test("pool: an aborted waiter leaves the queue without taking an item", async () => {
  const { pool } = counting(1);
  const a = await pool.acquire();
  const ac = new AbortController();
  const waiting = pool.acquire(ac.signal);
  ac.abort(new Error("gone"));
  await assert.rejects(waiting, /gone/);
  assert.equal(pool.waiting, 0);
  pool.release(a);
  assert.equal(await pool.acquire(), a);
});

Deno.test("pool: close waits for borrowed items before destroying them, and refuses new borrowers", async () => {
  const { pool, destroyed } = counting(2);
  const a = await pool.acquire();
  const b = await pool.acquire();
  pool.release(b);
  let closed = false;
  const closing = pool.close().then(() => closed = true);
  await Promise.resolve();
  assert.deepEqual(destroyed, [b]);
  assert.equal(closed, false);
  pool.release(a);
  await closing;
  assert.deepEqual(destroyed.sort(), [a, b].sort());
  await assert.rejects(pool.acquire(), /closed/);
});

Deno.test("pool: a failed create frees its place", async () => {
  let fail = true;
  const pool = new Pool<string>(
    1,
    () => fail ? Promise.reject(new Error("oom")) : Promise.resolve("ok"),
    () => {},
  );
  await assert.rejects(pool.acquire(), /oom/);
  fail = false;
  assert.equal(await pool.acquire(), "ok");
});
