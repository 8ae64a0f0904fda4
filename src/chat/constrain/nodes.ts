// Owns the compiled grammar's node graph: what a JSON Schema (or the tool-call wrapper, or "any JSON")
// becomes before decoding. Nodes are immutable after compilation except for lazily built key tries; $ref
// cycles are plain object cycles. The recognizer (recognizer.ts) walks this graph byte by byte.
import { LiteralTrie } from "./literal_trie.ts";
import type { NumSpec } from "./numbers.ts";

interface Base {
  /** Unique within one grammar; part of the state signatures the mask cache is keyed by. */
  readonly id: number;
  /** Length in bytes of the shortest document this node accepts (Infinity: none). Set by `finishGraph`. */
  minLen: number;
}

export interface Prop {
  readonly name: string;
  /** The key as JSON text after its opening quote, closing quote included. */
  readonly keyTail: Uint8Array;
  readonly node: Node;
  readonly required: boolean;
}

/**
 * An object. Declared properties come in schema order (each optional one may be skipped, as in OpenAI's
 * structured outputs); an object without declared properties but with `additional` takes free keys.
 */
export interface ObjNode extends Base {
  readonly kind: "obj";
  readonly props: Prop[];
  /** Schema of free keys' values, only used when `props` is empty; null: no free keys. */
  readonly additional: Node | null;
  /** Most whitespace bytes in a row between tokens. */
  readonly ws: number;
  /** closable[i]: `}` may come when the next property index is i (no required property left). */
  closable: boolean[];
  /** keyTries[i]: the keys allowed when the next property index is i (values: property index). */
  keyTries: (LiteralTrie | undefined)[];
}

export interface ArrNode extends Base {
  readonly kind: "arr";
  readonly items: Node;
  readonly min: number;
  max: number;
  readonly ws: number;
}

export interface StrNode extends Base {
  readonly kind: "str";
}

export interface NumNode extends Base {
  readonly kind: "num";
  readonly spec: NumSpec;
}

/** One of a set of literal JSON texts (enum, const, true/false/null) or a markup literal. */
export interface LitNode extends Base {
  readonly kind: "lit";
  readonly trie: LiteralTrie;
}

/** Any of several alternatives (anyOf, type arrays, $ref placeholders). */
export interface AltNode extends Base {
  readonly kind: "alt";
  options: Node[];
}

/** A sequence (tool-call markup around the call object). */
export interface SeqNode extends Base {
  readonly kind: "seq";
  readonly items: Node[];
}

/** `first` then up to max-1 times `rest` (parallel tool calls: rest = separator + call). */
export interface RepNode extends Base {
  readonly kind: "rep";
  readonly first: Node;
  readonly rest: Node;
  readonly max: number;
}

export type Node = ObjNode | ArrNode | StrNode | NumNode | LitNode | AltNode | SeqNode | RepNode;

const encoder = new TextEncoder();

/** Creates nodes with grammar-unique ids and remembers them for the whole-graph passes. */
export class NodeFactory {
  readonly all: Node[] = [];

  #add<T extends Node>(n: T): T {
    this.all.push(n);
    return n;
  }

  get nextId(): number {
    return this.all.length;
  }

  obj(props: Prop[], additional: Node | null, ws: number): ObjNode {
    return this.#add({
      kind: "obj",
      id: this.nextId,
      minLen: Infinity,
      props,
      additional,
      ws,
      closable: [],
      keyTries: [],
    });
  }

  arr(items: Node, min: number, max: number, ws: number): ArrNode {
    return this.#add({ kind: "arr", id: this.nextId, minLen: Infinity, items, min, max, ws });
  }

  str(): StrNode {
    return this.#add({ kind: "str", id: this.nextId, minLen: Infinity });
  }

  num(spec: NumSpec): NumNode {
    return this.#add({ kind: "num", id: this.nextId, minLen: Infinity, spec });
  }

  /** Literal JSON values (each serialized with JSON.stringify) or raw texts. */
  lit(texts: string[]): LitNode {
    const trie = new LiteralTrie();
    texts.forEach((t, i) => trie.add(encoder.encode(t), i));
    return this.#add({ kind: "lit", id: this.nextId, minLen: Infinity, trie });
  }

  alt(options: Node[]): AltNode {
    return this.#add({ kind: "alt", id: this.nextId, minLen: Infinity, options });
  }

  seq(items: Node[]): SeqNode {
    return this.#add({ kind: "seq", id: this.nextId, minLen: Infinity, items });
  }

  rep(first: Node, rest: Node, max: number): RepNode {
    return this.#add({ kind: "rep", id: this.nextId, minLen: Infinity, first, rest, max });
  }

  prop(name: string, node: Node, required: boolean): Prop {
    return { name, keyTail: encoder.encode(JSON.stringify(name).slice(1)), node, required };
  }
}

/** The keys allowed when the next property index is i: any j >= i with no required property skipped. */
export function keyTrie(n: ObjNode, i: number): LiteralTrie {
  let t = n.keyTries[i];
  if (t === undefined) {
    t = new LiteralTrie();
    for (let j = i; j < n.props.length; j++) {
      const p = n.props[j];
      if (p.node.minLen !== Infinity) t.add(p.keyTail, j);
      if (p.required) break;
    }
    n.keyTries[i] = t;
  }
  return t;
}

/**
 * Whole-graph passes once every node exists: flattens alternatives (so no alternative reaches itself
 * without consuming input), computes each node's shortest document length by fixpoint, and prunes what can
 * never complete (alternatives, optional properties, array items). Returns the root's minLen.
 */
export function finishGraph(f: NodeFactory, minNumberLen: (n: NumNode) => number): void {
  for (const n of f.all) if (n.kind === "alt") n.options = flatten(n);
  for (const n of f.all) {
    if (n.kind === "obj") {
      n.closable = new Array(n.props.length + 1).fill(true);
      for (let i = n.props.length - 1; i >= 0; i--) n.closable[i] = n.closable[i + 1] && !n.props[i].required;
    }
  }
  // Fixpoint over lengths: each pass can only lower them; a graph of N nodes settles within N+1 passes.
  for (let changed = true, pass = 0; changed && pass <= f.all.length + 1; pass++) {
    changed = false;
    for (const n of f.all) {
      const m = localMinLen(n, minNumberLen);
      if (m < n.minLen) {
        n.minLen = m;
        changed = true;
      }
    }
  }
  for (const n of f.all) {
    if (n.kind === "alt") n.options = n.options.filter((o) => o.minLen !== Infinity);
    if (n.kind === "arr" && n.items.minLen === Infinity) n.max = 0;
  }
}

function flatten(root: AltNode): Node[] {
  const out: Node[] = [];
  const seen = new Set<Node>([root]);
  const visit = (n: Node) => {
    if (seen.has(n)) return;
    seen.add(n);
    if (n.kind === "alt") n.options.forEach(visit);
    else out.push(n);
  };
  root.options.forEach(visit);
  return out;
}

function localMinLen(n: Node, minNumberLen: (n: NumNode) => number): number {
  switch (n.kind) {
    case "obj": {
      if (n.props.length === 0) return 2;
      let len = 2, count = 0;
      for (const p of n.props) {
        if (!p.required) continue;
        len += 1 + p.keyTail.length + 1 + p.node.minLen;
        count++;
      }
      return len + Math.max(0, count - 1);
    }
    case "arr":
      return n.min === 0 ? 2 : 2 + n.min * n.items.minLen + (n.min - 1);
    case "str":
      return 2;
    case "num":
      return minNumberLen(n);
    case "lit": {
      const s = n.trie.shortestFrom(0);
      return s === null ? Infinity : s.length;
    }
    case "alt":
      return n.options.reduce((m, o) => Math.min(m, o.minLen), Infinity);
    case "seq":
      return n.items.reduce((s, o) => s + o.minLen, 0);
    case "rep":
      return n.first.minLen;
  }
}
