// Owns JSON Schema -> grammar compilation for response_format json_schema/json_object and tool parameters.
// Supported (OpenAI strict structured outputs' subset): type (incl. arrays of types), properties, required,
// additionalProperties, items, minItems, maxItems, enum, const, anyOf, $ref into the document ($defs,
// definitions, any JSON pointer; recursion allowed), minimum/maximum/exclusiveMinimum/exclusiveMaximum;
// annotations (title, description, default, examples, $schema, $id, $comment, deprecated, readOnly,
// writeOnly) are ignored. In strict mode any other keyword throws SchemaError naming it and its location;
// otherwise it is ignored and listed in grammar.ignored (oneOf is then read as anyOf).
//
// What gets generated is always valid, and a subset of what the schema allows: properties come in schema
// order (optional ones may be skipped), objects with declared properties take no extra keys, numbers have
// at most `intDigits` + `fracDigits` digits and no exponent, whitespace runs are capped.
import { type AltNode, finishGraph, type Node, NodeFactory, type Prop } from "./nodes.ts";
import { type NumBounds, numSpec, shortestNumber } from "./numbers.ts";
import { Grammar, type SchemaIssue } from "./matcher.ts";

export interface CompileOptions {
  /** Unsupported keywords are errors (true) or ignored (false). Default true. */
  strict?: boolean;
  /** Most whitespace bytes in a row between JSON tokens. Default 1. */
  whitespace?: number;
  /** Digit caps for numbers. Defaults 15 and 6. */
  intDigits?: number;
  fracDigits?: number;
}

/** A schema the grammar cannot take. The API layer turns it into a 400 naming `keyword` and `path`. */
export class SchemaError extends Error {
  constructor(
    /** The offending keyword ("" when the schema itself is malformed). */
    readonly keyword: string,
    /** JSON pointer of the schema holding it, e.g. "#/properties/email". */
    readonly path: string,
    /** "unsupported": a keyword strict mode does not support; "invalid": a malformed or unsatisfiable schema. */
    readonly reason: "unsupported" | "invalid",
    message: string,
    /** For tool grammars: the index of the tool whose parameters are at fault. */
    readonly tool?: number,
  ) {
    super(message);
    this.name = "SchemaError";
  }

  /** The same error, attributed to tool `index`. */
  forTool(index: number): SchemaError {
    return new SchemaError(this.keyword, this.path, this.reason, this.message, index);
  }
}

const SUPPORTED = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "minItems",
  "maxItems",
  "enum",
  "const",
  "anyOf",
  "$ref",
  "$defs",
  "definitions",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
]);
const ANNOTATIONS = new Set([
  "title",
  "description",
  "default",
  "examples",
  "$schema",
  "$id",
  "$comment",
  "deprecated",
  "readOnly",
  "writeOnly",
]);
/** Keywords that constrain a value besides anyOf/$ref themselves (used to spot combinations). */
const STRUCTURAL = new Set(
  [...SUPPORTED].filter((k) => !["$defs", "definitions", "anyOf", "$ref"].includes(k)),
);
const TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"]);

type Schema = Record<string, unknown>;

/** Limits far above OpenAI's own (10 levels of nesting, 5000 properties, 1000 enum values). */
const MAX_DEPTH = 100;
const MAX_NODES = 100_000;
const MAX_ENUM = 10_000;

function isObject(v: unknown): v is Schema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function pointerToken(k: string): string {
  return k.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** Compiles one schema document into nodes of a shared factory. */
export class SchemaCompiler {
  readonly ignored: SchemaIssue[] = [];
  readonly #refs = new Map<string, AltNode>();
  #any: Node | undefined;
  readonly #strict: boolean;
  readonly #ws: number;
  readonly #intDigits: number;
  readonly #fracDigits: number;
  #depth = 0;

  constructor(readonly f: NodeFactory, readonly root: unknown, opts: CompileOptions = {}) {
    this.#strict = opts.strict ?? true;
    this.#ws = opts.whitespace ?? 1;
    this.#intDigits = opts.intDigits ?? 15;
    this.#fracDigits = opts.fracDigits ?? 6;
  }

  #invalid(keyword: string, path: string, why: string): SchemaError {
    return new SchemaError(keyword, path, "invalid", `invalid JSON Schema at ${path}: ${why}`);
  }

  /** Any JSON value (json_object's members, `{}`, `true`). */
  any(): Node {
    if (this.#any) return this.#any;
    const f = this.f;
    const alt = f.alt([]);
    this.#any = alt;
    alt.options = [
      f.obj([], alt, this.#ws),
      f.arr(alt, 0, Infinity, this.#ws),
      f.str(),
      f.num(numSpec(false, {}, this.#intDigits, this.#fracDigits)),
      f.lit(["true", "false", "null"]),
    ];
    return alt;
  }

  /** Any JSON object. */
  anyObject(): Node {
    return this.f.obj([], this.any(), this.#ws);
  }

  compile(s: unknown, path = "#"): Node {
    // Bounded so that no schema can exhaust the stack or memory (an error, not a crash).
    if (++this.#depth > MAX_DEPTH) throw this.#invalid("", path, `nested deeper than ${MAX_DEPTH} levels`);
    if (this.f.all.length > MAX_NODES) throw this.#invalid("", path, `more than ${MAX_NODES} schema nodes`);
    try {
      return this.#compile(s, path);
    } finally {
      this.#depth--;
    }
  }

  #compile(s: unknown, path: string): Node {
    if (s === true) return this.any();
    if (s === false) return this.f.alt([]);
    if (!isObject(s)) throw this.#invalid("", path, "a schema must be an object or a boolean");
    let anyOf = s.anyOf;
    for (const k of Object.keys(s)) {
      if (SUPPORTED.has(k) || ANNOTATIONS.has(k)) continue;
      if (this.#strict) {
        throw new SchemaError(
          k,
          path,
          "unsupported",
          `unsupported JSON Schema keyword "${k}" at ${path}; strict mode supports ${
            [...SUPPORTED].join(", ")
          }`,
        );
      }
      if (k === "oneOf" && anyOf === undefined) anyOf = s.oneOf; // best effort: generate one of them
      else this.ignored.push({ keyword: k, path });
    }
    const structural = Object.keys(s).filter((k) => STRUCTURAL.has(k));
    if (s.$ref !== undefined) {
      if (typeof s.$ref !== "string") throw this.#invalid("$ref", path, "$ref must be a string");
      if (structural.length === 0 && anyOf === undefined) return this.#ref(s.$ref, path);
      // $ref with constraints beside it: apply them over the referenced schema (siblings win).
      const { $ref: _, ...rest } = s;
      const target = this.#resolve(s.$ref, path);
      if (typeof target === "boolean") return target ? this.compile(rest, path) : this.f.alt([]);
      if (!isObject(target)) throw this.#invalid("$ref", path, `${s.$ref} is not a schema`);
      return this.compile({ ...target, ...rest }, path);
    }
    if (anyOf !== undefined) {
      if (!Array.isArray(anyOf) || anyOf.length === 0) {
        throw this.#invalid("anyOf", path, "anyOf must be a non-empty array");
      }
      const siblings: Schema = {};
      for (const k of structural) siblings[k] = s[k];
      return this.f.alt(anyOf.map((o, i) => {
        const p = `${path}/anyOf/${i}`;
        if (structural.length === 0) return this.compile(o, p);
        if (!isObject(o)) return this.compile(o, p);
        // Constraints beside anyOf apply to every branch (the branch's own keywords win).
        return this.compile({ ...siblings, ...o }, p);
      }));
    }
    return this.#typed(s, path);
  }

  #typed(s: Schema, path: string): Node {
    let types: string[];
    if (s.type === undefined) types = [];
    else if (typeof s.type === "string") types = [s.type];
    else if (Array.isArray(s.type) && s.type.length > 0 && s.type.every((t) => typeof t === "string")) {
      types = s.type as string[];
    } else throw this.#invalid("type", path, "type must be a string or a non-empty array of strings");
    for (const t of types) if (!TYPES.has(t)) throw this.#invalid("type", path, `unknown type "${t}"`);
    const bounds = this.#bounds(s, path);

    if (s.enum !== undefined || s.const !== undefined) {
      let values: unknown[];
      if (s.enum !== undefined) {
        if (!Array.isArray(s.enum) || s.enum.length === 0) {
          throw this.#invalid("enum", path, "enum must be a non-empty array");
        }
        if (s.enum.length > MAX_ENUM) throw this.#invalid("enum", path, `more than ${MAX_ENUM} values`);
        values = s.enum;
        if (s.const !== undefined) {
          values = values.filter((v) => JSON.stringify(v) === JSON.stringify(s.const));
        }
      } else values = [s.const];
      values = values.filter((v) =>
        (types.length === 0 || types.some((t) => hasType(v, t))) && inBounds(v, bounds)
      );
      // No value left: an empty literal, which can never complete (pruned, or an error at the root).
      return this.f.lit(values.map((v) => JSON.stringify(v)));
    }

    if (types.length === 0) {
      if (s.properties !== undefined || s.required !== undefined || s.additionalProperties !== undefined) {
        types = ["object"];
      } else if (s.items !== undefined || s.minItems !== undefined || s.maxItems !== undefined) {
        types = ["array"];
      } else if (Object.keys(bounds).length > 0) types = ["number"];
      else return this.any();
    }
    const nodes = [...new Set(types)].map((t) => this.#ofType(s, t, bounds, path));
    return nodes.length === 1 ? nodes[0] : this.f.alt(nodes);
  }

  #ofType(s: Schema, t: string, bounds: NumBounds, path: string): Node {
    const f = this.f;
    switch (t) {
      case "string":
        return f.str();
      case "boolean":
        return f.lit(["true", "false"]);
      case "null":
        return f.lit(["null"]);
      case "number":
      case "integer": {
        // An empty range can never complete: pruned, or an error at the root.
        return f.num(numSpec(t === "integer", bounds, this.#intDigits, this.#fracDigits));
      }
      case "array": {
        const min = this.#count(s, "minItems", path) ?? 0;
        const max = this.#count(s, "maxItems", path) ?? Infinity;
        if (min > max) return f.alt([]);
        let items: Node;
        if (s.items === undefined) items = this.any();
        else if (Array.isArray(s.items)) {
          if (this.#strict) throw this.#invalid("items", path, "tuple-form items is not supported");
          this.ignored.push({ keyword: "items", path });
          items = this.any();
        } else items = this.compile(s.items, `${path}/items`);
        return f.arr(items, min, max, this.#ws);
      }
      case "object": {
        if (s.properties !== undefined && !isObject(s.properties)) {
          throw this.#invalid("properties", path, "properties must be an object");
        }
        const required = s.required ?? [];
        if (!Array.isArray(required) || !required.every((r) => typeof r === "string")) {
          throw this.#invalid("required", path, "required must be an array of strings");
        }
        const req = new Set(required as string[]);
        const ap = s.additionalProperties;
        if (ap !== undefined && typeof ap !== "boolean" && !isObject(ap)) {
          throw this.#invalid(
            "additionalProperties",
            path,
            "additionalProperties must be a boolean or a schema",
          );
        }
        const props: Prop[] = [];
        const declared = new Set<string>();
        for (const [name, ps] of Object.entries(s.properties ?? {})) {
          declared.add(name);
          props.push(
            f.prop(name, this.compile(ps, `${path}/properties/${pointerToken(name)}`), req.has(name)),
          );
        }
        for (const name of req) {
          if (declared.has(name)) continue;
          if (ap === false) {
            throw this.#invalid("required", path, `required property "${name}" is not among the properties`);
          }
          const node = isObject(ap) ? this.compile(ap, `${path}/additionalProperties`) : this.any();
          props.push(f.prop(name, node, true));
        }
        // Free keys only where nothing is declared: a free key could repeat a declared one.
        let additional: Node | null = null;
        if (props.length === 0 && ap !== false) {
          additional = isObject(ap) ? this.compile(ap, `${path}/additionalProperties`) : this.any();
        }
        return f.obj(props, additional, this.#ws);
      }
    }
    throw this.#invalid("type", path, `unknown type "${t}"`);
  }

  #count(s: Schema, k: string, path: string): number | undefined {
    const v = s[k];
    if (v === undefined) return undefined;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
      throw this.#invalid(k, path, `${k} must be a non-negative integer`);
    }
    return v;
  }

  #bounds(s: Schema, path: string): NumBounds {
    const b: NumBounds = {};
    for (const k of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] as const) {
      const v = s[k];
      if (v === undefined) continue;
      if (typeof v === "boolean" && (k === "exclusiveMinimum" || k === "exclusiveMaximum")) {
        // draft-04 form: a flag on minimum/maximum.
        const base = k === "exclusiveMinimum" ? s.minimum : s.maximum;
        if (v && typeof base === "number") b[k] = base;
        continue;
      }
      if (typeof v !== "number" || !Number.isFinite(v)) {
        throw this.#invalid(k, path, `${k} must be a finite number`);
      }
      b[k] = v;
    }
    if (s.exclusiveMinimum === true) delete b.minimum;
    if (s.exclusiveMaximum === true) delete b.maximum;
    return b;
  }

  #resolve(ref: string, path: string): unknown {
    if (!ref.startsWith("#")) {
      throw this.#invalid("$ref", path, `only local references ("#...") are supported: ${ref}`);
    }
    let target: unknown = this.root;
    const body = ref.slice(1);
    if (body !== "") {
      if (!body.startsWith("/")) throw this.#invalid("$ref", path, `cannot resolve ${ref}`);
      for (const raw of body.slice(1).split("/")) {
        let tok: string;
        try {
          tok = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
        } catch {
          throw this.#invalid("$ref", path, `cannot resolve ${ref}`);
        }
        if (Array.isArray(target) && /^\d+$/.test(tok)) target = target[Number(tok)];
        else if (isObject(target) && Object.hasOwn(target, tok)) target = target[tok];
        else throw this.#invalid("$ref", path, `cannot resolve ${ref}`);
      }
    }
    return target;
  }

  #ref(ref: string, path: string): Node {
    const known = this.#refs.get(ref);
    if (known) return known;
    // A placeholder first, so a schema that refers to itself compiles to a cycle.
    const node = this.f.alt([]);
    this.#refs.set(ref, node);
    node.options = [this.compile(this.#resolve(ref, path), ref)];
    return node;
  }
}

function hasType(v: unknown, t: string): boolean {
  switch (t) {
    case "string":
      return typeof v === "string";
    case "number":
      return typeof v === "number";
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "boolean":
      return typeof v === "boolean";
    case "null":
      return v === null;
    case "array":
      return Array.isArray(v);
    case "object":
      return isObject(v);
  }
  return false;
}

function inBounds(v: unknown, b: NumBounds): boolean {
  if (typeof v !== "number") return true;
  return (b.minimum === undefined || v >= b.minimum) && (b.maximum === undefined || v <= b.maximum) &&
    (b.exclusiveMinimum === undefined || v > b.exclusiveMinimum) &&
    (b.exclusiveMaximum === undefined || v < b.exclusiveMaximum);
}

/** Finishes a graph built by compilers of one factory; throws when the root has no finite document. */
export function finish(f: NodeFactory, root: Node, ignored: SchemaIssue[], check?: () => void): Grammar {
  finishGraph(f, (n) => shortestNumber(n.spec)?.length ?? Infinity);
  check?.();
  const path = "#";
  if (root.minLen === Infinity) {
    throw new SchemaError(
      "",
      path,
      "invalid",
      `invalid JSON Schema at ${path}: no finite JSON document satisfies it`,
    );
  }
  return Grammar.fromFactory(root, f, ignored);
}

const compiled = new Map<string, Grammar>();
const COMPILED_LIMIT = 16;

/** Memoizes grammars by key (most recently used kept), so repeated schemas share their mask caches. */
export function memoGrammar(key: string, make: () => Grammar): Grammar {
  const hit = compiled.get(key);
  if (hit) {
    compiled.delete(key);
    compiled.set(key, hit);
    return hit;
  }
  const g = make();
  compiled.set(key, g);
  if (compiled.size > COMPILED_LIMIT) compiled.delete(compiled.keys().next().value!);
  return g;
}

/** The grammar of documents valid against `schema` (response_format json_schema). Throws SchemaError. */
export function compileJsonSchema(schema: unknown, opts: CompileOptions = {}): Grammar {
  return memoGrammar(`schema|${JSON.stringify(opts)}|${JSON.stringify(schema)}`, () => {
    const f = new NodeFactory();
    const c = new SchemaCompiler(f, schema, opts);
    const root = c.compile(schema);
    return finish(f, root, c.ignored);
  });
}

/** The grammar of any JSON object (response_format json_object). */
export function jsonObjectGrammar(opts: Pick<CompileOptions, "whitespace"> = {}): Grammar {
  return memoGrammar(`object|${JSON.stringify(opts)}`, () => {
    const f = new NodeFactory();
    const c = new SchemaCompiler(f, true, opts);
    return finish(f, c.anyObject(), []);
  });
}
