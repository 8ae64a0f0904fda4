// Owns the entry point of a model's Worker (--isolation=thread): the compute side (serve_model.ts) on a
// thread of the server's own process, speaking through postMessage.
import "./worker_env.ts";
import type { HostMessage } from "./protocol.ts";
import { serveModel } from "./serve_model.ts";

const scope = globalThis as unknown as {
  postMessage(m: unknown, transfer?: Transferable[]): void;
  onmessage: ((e: MessageEvent<HostMessage>) => void) | null;
};
const receive = serveModel({ postMessage: (m, transfer) => scope.postMessage(m, transfer) });
scope.onmessage = (e) => receive(e.data);
