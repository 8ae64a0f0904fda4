// Owns the byte-level pushdown recognizer over the node graph. A state is a small set of stacks; a stack is
// its top Frame (frames link to the frame below, ending at END). Frames are immutable, so stacks share
// tails and stepping never copies. A frame that may end (a number, a literal that is a prefix of a longer
// one, a finished repetition) also lets the next byte go to the frame below: that is the only ambiguity
// besides alternatives, and it is what makes "is this state complete" a simple walk down the stack.
//
// Strings: the body accepts any UTF-8 (tracked per byte: a token may end inside a character) except raw
// control characters; escapes are the JSON ones. Outside strings only ASCII occurs. Whitespace between
// tokens is capped per position (node.ws), so a model cannot loop on blanks.
import type { ArrNode, LitNode, Node, NumNode, ObjNode, RepNode, SeqNode } from "./nodes.ts";
import { keyTrie } from "./nodes.ts";
import {
  N_DOT,
  N_FRAC,
  N_INT,
  N_SIGN,
  N_START,
  N_ZERO,
  numCanEnd,
  numFeasible,
  type NumSpec,
  shortestNumber,
} from "./numbers.ts";

export const K_END = 0,
  K_VAL = 1,
  K_OBJ = 2,
  K_ARR = 3,
  K_STR = 4,
  K_NUM = 5,
  K_LIT = 6,
  K_SEQ = 7,
  K_REP = 8;

// Object phases (ARR reuses OPEN/FIRST/AFTER/COMMA).
const OPEN = 0, FIRST = 1, KEY = 2, COLON = 3, VALUE = 4, AFTER = 5, COMMA = 6;

/**
 * One level of the stack. Field use by kind:
 *  OBJ: ph, a = next property index, b = whitespace run, c = key-trie node (KEY) or pending property
 *  (COLON/VALUE; -1 = a free key); ARR: ph, a = items so far (saturated), b = whitespace run;
 *  STR: ph (0 before the quote, 1 body), a = UTF-8 state, b = escape state; NUM: ph (+8 when negative),
 *  a = integer value, b = integer digits, c = fraction value, d = fraction digits; LIT: a = trie node;
 *  SEQ: a = index of the next item; REP: a = items so far; VAL: a value of `node` comes next.
 */
export class Frame {
  /** Signature of this frame and everything below it (lazily; frames are immutable). */
  sig: string | undefined = undefined;
  constructor(
    readonly kind: number,
    readonly node: Node | null,
    readonly up: Frame | null,
    readonly ph: number,
    readonly a: number,
    readonly b: number,
    readonly c: number,
    readonly d: number,
  ) {}
}

export const END = new Frame(K_END, null, null, 0, 0, 0, 0, 0);

/** The stack expecting one value of `node`, then nothing. */
export function initial(node: Node): Frame {
  return new Frame(K_VAL, node, END, 0, 0, 0, 0, 0);
}

/** The signature of a whole stack (cached per frame; iterative, as a document may nest deeply). */
export function chainSig(f: Frame): string {
  if (f.sig !== undefined) return f.sig;
  const pending: Frame[] = [];
  let x: Frame | null = f;
  for (; x && x.sig === undefined; x = x.up) pending.push(x);
  let below = x ? x.sig! : null;
  for (let i = pending.length - 1; i >= 0; i--) {
    const p = pending[i];
    const own = `${p.kind}.${p.node ? p.node.id : -1}.${p.ph}.${p.a}.${p.b}.${p.c}.${p.d}`;
    below = p.sig = below === null ? own : own + "/" + below;
  }
  return f.sig!;
}

// ------------------------------------------------------------------------------------------- byte classes

// Space and newline only: tabs and carriage returns add nothing a model needs and invite odd loops.
const WS = new Uint8Array(256);
for (const c of " \n") WS[c.charCodeAt(0)] = 1;
const HEX = new Uint8Array(256);
for (const c of "0123456789abcdefABCDEF") HEX[c.charCodeAt(0)] = 1;
const ESCAPE = new Uint8Array(256);
for (const c of '"\\/bfnrt') ESCAPE[c.charCodeAt(0)] = 1;

/**
 * UTF-8 states inside a string: 0 at a character boundary; 1..3 that many continuation bytes (80-BF) due;
 * 4 after E0 (A0-BF due, then 1); 5 after ED (80-9F, then 1: no surrogates); 6 after F0 (90-BF, then 2);
 * 7 after F4 (80-8F, then 2: nothing above U+10FFFF).
 * UTF8[u * 256 + b] is the state after byte b, or -1. For u = 0 it holds the lead-byte transitions
 * (ASCII and the JSON-special bytes are handled before the table is consulted).
 */
export const UTF8_STATES = 8;
export const UTF8 = new Int8Array(UTF8_STATES * 256).fill(-1);
{
  const set = (u: number, lo: number, hi: number, to: number) => {
    for (let b = lo; b <= hi; b++) UTF8[u * 256 + b] = to;
  };
  set(0, 0x20, 0x7f, 0);
  set(0, 0xc2, 0xdf, 1);
  set(0, 0xe0, 0xe0, 4);
  set(0, 0xe1, 0xec, 2);
  set(0, 0xed, 0xed, 5);
  set(0, 0xee, 0xef, 2);
  set(0, 0xf0, 0xf0, 6);
  set(0, 0xf1, 0xf3, 3);
  set(0, 0xf4, 0xf4, 7);
  set(1, 0x80, 0xbf, 0);
  set(2, 0x80, 0xbf, 1);
  set(3, 0x80, 0xbf, 2);
  set(4, 0xa0, 0xbf, 1);
  set(5, 0x80, 0x9f, 1);
  set(6, 0x90, 0xbf, 2);
  set(7, 0x80, 0x8f, 2);
}

/** Whether a byte can never occur in a string body as itself (quote, backslash, control). */
export function isStringSpecial(b: number): boolean {
  return b === 0x22 || b === 0x5c || b < 0x20;
}

// ------------------------------------------------------------------------------------------- stepping

function push(out: Frame[], f: Frame): void {
  for (let i = 0; i < out.length; i++) if (out[i] === f) return;
  out.push(f);
}

/** Feeds byte b to the stack topped by f; every resulting stack is added to out (none: rejected). */
export function step(f: Frame, b: number, out: Frame[]): void {
  switch (f.kind) {
    case K_END:
      return;
    case K_VAL:
      stepFresh(f.node!, f.up!, b, out, 0);
      return;
    case K_OBJ:
      stepObj(f, b, out);
      return;
    case K_ARR:
      stepArr(f, b, out);
      return;
    case K_STR:
      stepStr(f, b, out);
      return;
    case K_NUM:
      stepNum(f, b, out);
      return;
    case K_LIT: {
      const n = f.node as LitNode;
      const c = n.trie.child(f.a, b);
      if (c >= 0) {
        if (!n.trie.hasChildren(c)) push(out, f.up!);
        else push(out, new Frame(K_LIT, n, f.up, 0, c, 0, 0, 0));
      }
      if (n.trie.value(f.a) >= 0) step(f.up!, b, out);
      return;
    }
    case K_SEQ: {
      const n = f.node as SeqNode;
      stepFresh(n.items[f.a], seqRest(n, f.a + 1, f.up!), b, out, 0);
      return;
    }
    case K_REP: {
      const n = f.node as RepNode;
      if (f.a < n.max) stepFresh(n.rest, new Frame(K_REP, n, f.up, 0, f.a + 1, 0, 0, 0), b, out, 0);
      step(f.up!, b, out);
      return;
    }
  }
}

function seqRest(n: SeqNode, i: number, up: Frame): Frame {
  return i < n.items.length ? new Frame(K_SEQ, n, up, 0, i, 0, 0, 0) : up;
}

/** Feeds the first byte of a value of `node` (to be followed by the stack `up`). */
function stepFresh(node: Node, up: Frame, b: number, out: Frame[], depth: number): void {
  switch (node.kind) {
    case "obj":
      if (b === 0x7b) push(out, new Frame(K_OBJ, node, up, FIRST, 0, 0, 0, 0));
      return;
    case "arr":
      if (b === 0x5b) push(out, new Frame(K_ARR, node, up, FIRST, 0, 0, 0, 0));
      return;
    case "str":
      if (b === 0x22) push(out, new Frame(K_STR, node, up, 1, 0, 0, 0, 0));
      return;
    case "num":
      numStep(node.spec, node, up, N_START, false, 0, 0, 0, 0, b, out);
      return;
    case "lit": {
      const c = node.trie.child(0, b);
      if (c < 0) return;
      if (!node.trie.hasChildren(c)) push(out, up);
      else push(out, new Frame(K_LIT, node, up, 0, c, 0, 0, 0));
      return;
    }
    case "alt":
      // Alternatives are flattened (finishGraph), so this never recurses into itself.
      if (depth > 64) return;
      for (const o of node.options) stepFresh(o, up, b, out, depth + 1);
      return;
    case "seq":
      stepFresh(node.items[0], seqRest(node, 1, up), b, out, depth + 1);
      return;
    case "rep":
      stepFresh(node.first, new Frame(K_REP, node, up, 0, 1, 0, 0, 0), b, out, depth + 1);
      return;
  }
}

function stepObj(f: Frame, b: number, out: Frame[]): void {
  const n = f.node as ObjNode;
  switch (f.ph) {
    case FIRST:
    case COMMA:
      if (WS[b]) {
        if (f.b < n.ws) push(out, new Frame(K_OBJ, n, f.up, f.ph, f.a, f.b + 1, 0, 0));
        return;
      }
      if (b === 0x7d) {
        if (f.ph === FIRST && n.closable[f.a]) push(out, f.up!);
        return;
      }
      if (b === 0x22) {
        if (n.props.length > 0) {
          if (!keyTrie(n, f.a).empty) push(out, new Frame(K_OBJ, n, f.up, KEY, f.a, 0, 0, 0));
        } else if (n.additional) {
          push(out, new Frame(K_STR, null, new Frame(K_OBJ, n, f.up, COLON, 0, 0, -1, 0), 1, 0, 0, 0, 0));
        }
      }
      return;
    case KEY: {
      const t = keyTrie(n, f.a);
      const c = t.child(f.c, b);
      if (c < 0) return;
      const j = t.value(c);
      // Keys end with their closing quote, so a complete key is never a prefix of another.
      if (j >= 0) push(out, new Frame(K_OBJ, n, f.up, COLON, j + 1, 0, j, 0));
      else push(out, new Frame(K_OBJ, n, f.up, KEY, f.a, 0, c, 0));
      return;
    }
    case COLON:
      if (b === 0x3a) push(out, new Frame(K_OBJ, n, f.up, VALUE, f.a, 0, f.c, 0));
      return;
    case VALUE:
      if (WS[b]) {
        if (f.b < n.ws) push(out, new Frame(K_OBJ, n, f.up, VALUE, f.a, f.b + 1, f.c, 0));
        return;
      }
      stepFresh(
        f.c >= 0 ? n.props[f.c].node : n.additional!,
        new Frame(K_OBJ, n, f.up, AFTER, f.a, 0, 0, 0),
        b,
        out,
        0,
      );
      return;
    case AFTER:
      if (WS[b]) {
        if (f.b < n.ws) push(out, new Frame(K_OBJ, n, f.up, AFTER, f.a, f.b + 1, 0, 0));
      } else if (b === 0x2c) {
        if (n.props.length > 0 ? !keyTrie(n, f.a).empty : n.additional !== null) {
          push(out, new Frame(K_OBJ, n, f.up, COMMA, f.a, 0, 0, 0));
        }
      } else if (b === 0x7d && n.closable[f.a]) push(out, f.up!);
      return;
  }
}

function stepArr(f: Frame, b: number, out: Frame[]): void {
  const n = f.node as ArrNode;
  if (WS[b]) {
    if (f.ph !== OPEN && f.b < n.ws) push(out, new Frame(K_ARR, n, f.up, f.ph, f.a, f.b + 1, 0, 0));
    return;
  }
  switch (f.ph) {
    case FIRST:
      if (b === 0x5d) {
        if (n.min === 0) push(out, f.up!);
        return;
      }
      if (n.max > 0) stepFresh(n.items, arrAfter(f, n), b, out, 0);
      return;
    case AFTER:
      if (b === 0x2c) {
        if (f.a < n.max) push(out, new Frame(K_ARR, n, f.up, COMMA, f.a, 0, 0, 0));
      } else if (b === 0x5d && f.a >= n.min) push(out, f.up!);
      return;
    case COMMA:
      stepFresh(n.items, arrAfter(f, n), b, out, 0);
      return;
  }
}

/** The array frame after one more item; the count saturates where it stops mattering (cache-friendly). */
function arrAfter(f: Frame, n: ArrNode): Frame {
  const count = n.max === Infinity ? Math.min(f.a + 1, n.min) : f.a + 1;
  return new Frame(K_ARR, n, f.up, AFTER, count, 0, 0, 0);
}

function stepStr(f: Frame, b: number, out: Frame[]): void {
  if (f.ph === 0) {
    if (b === 0x22) push(out, new Frame(K_STR, f.node, f.up, 1, 0, 0, 0, 0));
    return;
  }
  const e = f.b;
  if (e === 0) {
    const u = f.a;
    if (u !== 0) {
      const nu = UTF8[u * 256 + b];
      if (nu >= 0) push(out, new Frame(K_STR, f.node, f.up, 1, nu, 0, 0, 0));
      return;
    }
    if (b === 0x22) push(out, f.up!);
    else if (b === 0x5c) push(out, new Frame(K_STR, f.node, f.up, 1, 0, 1, 0, 0));
    else if (b < 0x20) return;
    else if (b < 0x80) push(out, f); // unchanged state: same frame, so no allocation
    else {
      const nu = UTF8[b];
      if (nu > 0) push(out, new Frame(K_STR, f.node, f.up, 1, nu, 0, 0, 0));
    }
    return;
  }
  if (e === 1) {
    if (ESCAPE[b]) push(out, new Frame(K_STR, f.node, f.up, 1, 0, 0, 0, 0));
    else if (b === 0x75) push(out, new Frame(K_STR, f.node, f.up, 1, 0, 2, 0, 0));
    return;
  }
  // e = 2..5: that many hex digits of \uXXXX typed so far plus 2.
  if (HEX[b]) push(out, new Frame(K_STR, f.node, f.up, 1, 0, e === 5 ? 0 : e + 1, 0, 0));
}

function stepNum(f: Frame, b: number, out: Frame[]): void {
  const n = f.node as NumNode;
  const neg = f.ph >= 8, ph = f.ph & 7;
  numStep(n.spec, n, f.up!, ph, neg, f.a, f.b, f.c, f.d, b, out);
  if (numCanEnd(n.spec, ph, neg, f.a, f.c, f.d)) step(f.up!, b, out);
}

/** The number state after byte b from (ph, neg, iv, ic, fv, fc), if structurally valid and feasible. */
function numStep(
  s: NumSpec,
  n: Node,
  up: Frame,
  ph: number,
  neg: boolean,
  iv: number,
  ic: number,
  fv: number,
  fc: number,
  b: number,
  out: Frame[],
): void {
  const d = b - 0x30;
  const isDigit = d >= 0 && d <= 9;
  let p: number;
  switch (ph) {
    case N_START:
    case N_SIGN:
      if (b === 0x2d && ph === N_START) {
        p = N_SIGN, neg = true;
      } else if (d === 0) p = N_ZERO;
      else if (isDigit) p = N_INT, iv = d, ic = 1;
      else return;
      break;
    case N_ZERO:
    case N_INT:
      if (b === 0x2e && s.fracDigits > 0) p = N_DOT;
      else if (isDigit && ph === N_INT && ic < s.intDigits) p = N_INT, iv = iv * 10 + d, ic++;
      else return;
      break;
    case N_DOT:
    case N_FRAC:
      if (isDigit && fc < s.fracDigits) p = N_FRAC, fv = fv * 10 + d, fc++;
      else return;
      break;
    default:
      return;
  }
  if (!numFeasible(s, p, neg, iv, ic, fv, fc)) return;
  push(out, new Frame(K_NUM, n, up, p + (neg ? 8 : 0), iv, ic, fv, fc));
}

// ------------------------------------------------------------------------------------------- completion

/** Whether the stack may end here (the document is complete). */
export function isComplete(f: Frame): boolean {
  for (let x: Frame | null = f; x; x = x.up) {
    if (x.kind === K_END) return true;
    if (!canEnd(x)) return false;
  }
  return false;
}

function canEnd(f: Frame): boolean {
  switch (f.kind) {
    case K_NUM: {
      const n = f.node as NumNode;
      return numCanEnd(n.spec, f.ph & 7, f.ph >= 8, f.a, f.c, f.d);
    }
    case K_LIT:
      return (f.node as LitNode).trie.value(f.a) >= 0;
    case K_REP:
      return true;
    default:
      return false;
  }
}

const encoder = new TextEncoder();

/** A short byte sequence completing the document from this stack (the shortest for structure). */
export function completion(f: Frame): number[] {
  const out: number[] = [];
  for (let x: Frame | null = f; x && x.kind !== K_END; x = x.up) {
    if (canEnd(x)) continue;
    frameCompletion(x, out);
  }
  return out;
}

/** The shortest text of a value of `node`. */
export function minText(node: Node, out: number[]): void {
  switch (node.kind) {
    case "obj":
      out.push(0x7b);
      objRest(node, 0, true, out);
      return;
    case "arr":
      out.push(0x5b);
      for (let i = 0; i < node.min; i++) {
        if (i) out.push(0x2c);
        minText(node.items, out);
      }
      out.push(0x5d);
      return;
    case "str":
      out.push(0x22, 0x22);
      return;
    case "num":
      for (const c of encoder.encode(shortestNumber(node.spec) ?? "0")) out.push(c);
      return;
    case "lit":
      out.push(...node.trie.shortestFrom(0)!);
      return;
    case "alt": {
      let best = node.options[0];
      for (const o of node.options) if (o.minLen < best.minLen) best = o;
      minText(best, out);
      return;
    }
    case "seq":
      for (const i of node.items) minText(i, out);
      return;
    case "rep":
      minText(node.first, out);
      return;
  }
}

/** The rest of an object whose next property index is i: required members, then `}`. */
function objRest(n: ObjNode, i: number, first: boolean, out: number[]): void {
  for (let j = i; j < n.props.length; j++) {
    const p = n.props[j];
    if (!p.required) continue;
    if (!first) out.push(0x2c);
    first = false;
    out.push(0x22, ...p.keyTail, 0x3a);
    minText(p.node, out);
  }
  out.push(0x7d);
}

function frameCompletion(f: Frame, out: number[]): void {
  switch (f.kind) {
    case K_VAL:
      minText(f.node!, out);
      return;
    case K_OBJ: {
      const n = f.node as ObjNode;
      switch (f.ph) {
        case FIRST:
          objRest(n, f.a, true, out);
          return;
        case AFTER:
          objRest(n, f.a, false, out);
          return;
        case COMMA: {
          if (n.props.length === 0) {
            out.push(0x22, 0x22, 0x3a);
            minText(n.additional!, out);
            out.push(0x7d);
            return;
          }
          // After a comma some key must come: the next required one, else the cheapest optional one.
          let j = f.a;
          if (n.closable[f.a]) {
            for (let k = f.a; k < n.props.length; k++) {
              if (n.props[k].node.minLen < n.props[j].node.minLen || n.props[j].node.minLen === Infinity) {
                j = k;
              }
            }
          } else while (!n.props[j].required) j++;
          out.push(0x22, ...n.props[j].keyTail, 0x3a);
          minText(n.props[j].node, out);
          objRest(n, j + 1, false, out);
          return;
        }
        case KEY: {
          const t = keyTrie(n, f.a);
          const path = t.shortestFrom(f.c)!;
          out.push(...path);
          let node = f.c;
          for (const b of path) node = t.child(node, b);
          const j = t.value(node);
          out.push(0x3a);
          minText(n.props[j].node, out);
          objRest(n, j + 1, false, out);
          return;
        }
        case COLON:
        case VALUE:
          if (f.ph === COLON) out.push(0x3a);
          minText(f.c >= 0 ? n.props[f.c].node : n.additional!, out);
          objRest(n, f.a, false, out);
          return;
      }
      return;
    }
    case K_ARR: {
      const n = f.node as ArrNode;
      let have = f.a;
      if (f.ph === FIRST) {
        if (n.min === 0) {
          out.push(0x5d);
          return;
        }
        minText(n.items, out);
        have = 1;
      } else if (f.ph === COMMA) {
        minText(n.items, out);
        have++;
      }
      for (; have < n.min; have++) {
        out.push(0x2c);
        minText(n.items, out);
      }
      out.push(0x5d);
      return;
    }
    case K_STR: {
      if (f.ph === 0) out.push(0x22);
      else if (f.b === 1) out.push(0x6e); // \n
      else if (f.b >= 2) { for (let i = f.b; i <= 5; i++) out.push(0x30); }
      else {
        // Finish the character with the smallest continuation bytes its state allows.
        for (let u = f.a; u !== 0;) {
          let b = 0x80;
          while (UTF8[u * 256 + b] < 0) b++;
          out.push(b);
          u = UTF8[u * 256 + b];
        }
      }
      out.push(0x22);
      return;
    }
    case K_NUM: {
      // Greedy under the feasibility check: each byte keeps some valid number reachable, and the caps bound
      // the length, so this ends on a number within the bounds.
      let cur: Frame = f;
      for (let guard = 0; guard < 64 && !canEnd(cur); guard++) {
        const next: Frame[] = [];
        for (const c of "0123456789.") {
          const n = cur.node as NumNode;
          numStep(
            n.spec,
            n,
            cur.up!,
            cur.ph & 7,
            cur.ph >= 8,
            cur.a,
            cur.b,
            cur.c,
            cur.d,
            c.charCodeAt(0),
            next,
          );
          if (next.length) {
            out.push(c.charCodeAt(0));
            break;
          }
        }
        if (!next.length) return;
        cur = next[0];
      }
      return;
    }
    case K_LIT:
      out.push(...(f.node as LitNode).trie.shortestFrom(f.a)!);
      return;
    case K_SEQ: {
      const n = f.node as SeqNode;
      for (let i = f.a; i < n.items.length; i++) minText(n.items[i], out);
      return;
    }
  }
}

/** Runs bytes through a state set; returns the resulting set (empty: rejected). */
export function feed(states: readonly Frame[], bytes: ArrayLike<number>): Frame[] {
  let cur = states as Frame[];
  for (let i = 0; i < bytes.length && cur.length; i++) {
    const next: Frame[] = [];
    for (const s of cur) step(s, bytes[i], next);
    cur = next;
  }
  return dedupe(cur);
}

/** Drops stacks equal to an earlier one (by signature), so alternatives that converge don't multiply. */
export function dedupe(states: Frame[]): Frame[] {
  if (states.length < 2) return states;
  const seen = new Set<string>();
  const out: Frame[] = [];
  for (const s of states) {
    const k = chainSig(s);
    if (!seen.has(k)) {
      seen.add(k);
      out.push(s);
    }
  }
  return out;
}
