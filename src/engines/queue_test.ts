import assert from "node:assert/strict";
import { QueueFull } from "../errors.ts";
import { BoundedQueue } from "./queue.ts";

Deno.test("queue: runs in arrival order, bounded, QueueFull with a retry time when full", async () => {
  const q = new BoundedQueue("m", 1, 2);
  const order: number[] = [];
  const gates = [Promise.withResolvers<void>(), Promise.withResolvers<void>(), Promise.withResolvers<void>()];
  const jobs = [0, 1, 2].map((i) =>
    q.run(async () => {
      order.push(i);
      await gates[i].promise;
    })
  );
  assert.equal(q.active, 1);
  assert.equal(q.waiting, 2);
  await assert.rejects(q.acquire(), (e: unknown) => {
    assert.ok(e instanceof QueueFull);
    assert.ok(e.retryAfterSeconds >= 1);
    return true;
  });
  for (const g of gates) g.resolve();
  await Promise.all(jobs);
  assert.deepEqual(order, [0, 1, 2]);
  assert.equal(q.active, 0);
});

Deno.test("queue: a waiter whose client aborts leaves without taking a slot", async () => {
  const q = new BoundedQueue("m", 1, 4);
  const held = await q.acquire();
  const ac = new AbortController();
  const waiting = q.acquire(ac.signal);
  const next = q.acquire();
  ac.abort(new Error("gone"));
  await assert.rejects(waiting, /gone/);
  assert.equal(q.waiting, 1);
  held.release();
  held.release(); // idempotent
  (await next).release();
  assert.equal(q.active, 0);
});
