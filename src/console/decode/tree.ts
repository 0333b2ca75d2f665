/**
 * A decoded checkpoint as a tree served by path: a node's children a page at a time, search, and
 * the decoded value (or any node of it) as JSON text. Strings and byte strings inside it that are
 * base64, compressed, JSON, msgpack, CBOR or protobuf are decoded when they are reached (listed,
 * searched or exported), recursively, and shown as containers marked with how they were decoded
 * (`via`); such a node's children are those of what it decoded to.
 *
 * Each request decodes embedded payloads within a fresh {@link Budget}: what one request unpacks
 * is bounded, and what the document keeps of it is bounded again (`MAX_EMBEDDED_KEPT_*`).
 */
import type { ExtData } from '@msgpack/msgpack';
import type { Tagged } from 'cborg';
import { Budget } from './compression.ts';
import { base64Bytes, type Detected, detect, type Layer } from './detect.ts';
import {
  DEFAULT_CHILDREN,
  MAX_LAYERS,
  MAX_OUTPUT_BYTES,
  MAX_SEARCH_MATCHES,
  MAX_SEARCH_MS,
  MAX_SEARCH_NODES,
  MIN_BASE64_CHARS,
  PREVIEW_CHARS,
} from './limits.ts';
import { PbField } from './protobuf.ts';
import { type Child, childCount, childNamed, childrenOf, inner, type Kind, kindOf } from './value.ts';

/** A string or byte string inside the payload, decoded. */
export interface Embedded {
  via: Layer[];
  /** Absent when decoding failed (`error`). */
  value?: unknown;
  guessed: boolean;
  error?: string;
}

/** Embedded results a document keeps (the rest are decoded again when reached). */
const MAX_EMBEDDED_KEPT = 20_000;
/** Bytes of embedded payloads a document keeps decoded (counted by their decoded size). */
const MAX_EMBEDDED_KEPT_BYTES = 16 * 1024 * 1024;

export interface NodeSummary {
  key: string;
  type: Kind;
  /** Children (0 for a leaf). */
  count: number;
  /** The value in one line: a JSON literal for scalars, `{3}` / `[12]` for containers. */
  preview: string;
  /** The preview does not show the whole value. */
  truncated: boolean;
  /** Characters of a string, bytes of a byte string; null otherwise. */
  size: number | null;
  /** How an embedded value was decoded (`['base64', 'gzip', 'msgpack']`); absent when not. */
  via?: string[];
  /** Protobuf: the wire type, the reading chosen and the other readings. */
  field?: { no: number; wire: string; as: string; alt: string };
  /** A guess decided what this node is (schema-less protobuf). */
  guessed: boolean;
  /** Why an embedded value could not be decoded. */
  error?: string;
}

/** One decoded checkpoint: the root and what was decoded inside it. */
export class DecodedDoc {
  private readonly embedded = new Map<string, Embedded | null>();
  private keptBytes = 0;

  constructor(
    readonly detected: Detected,
    /** Bytes the payload decoded to (its weight in the cache, with what embedded values keep). */
    readonly decodedBytes: number,
  ) {}

  get root(): unknown {
    return this.detected.value;
  }

  get weight(): number {
    return this.decodedBytes + this.keptBytes;
  }

  /** The decoded form of a string or byte string at `pointer`, or null when it is just that. */
  embeddedAt(v: unknown, path: readonly string[], budget: Budget, depth: number): Embedded | null {
    const x = inner(v);
    if (typeof x !== 'string' && !(x instanceof Uint8Array)) return null;
    if (typeof x === 'string' && x.length < MIN_BASE64_CHARS) return null;
    if (depth >= MAX_LAYERS) return null;
    // The pointer is built only here: most nodes are numbers and short strings, and a search
    // visits them all.
    const pointer = toPointer(path);
    const known = this.embedded.get(pointer);
    if (known !== undefined) return known;
    const found = decodeEmbedded(x, budget);
    const size = found === null ? 0 : typeof x === 'string' ? x.length : x.length;
    if (this.embedded.size < MAX_EMBEDDED_KEPT && this.keptBytes + size <= MAX_EMBEDDED_KEPT_BYTES) {
      this.embedded.set(pointer, found);
      this.keptBytes += size;
    }
    return found;
  }
}

function decodeEmbedded(x: string | Uint8Array, budget: Budget): Embedded | null {
  let d: Detected;
  if (typeof x === 'string') {
    const trimmed = x.trim();
    if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
      d = detect(new TextEncoder().encode(trimmed), budget, true);
      if (d.layers[0] !== 'json') return null;
    } else {
      const raw = base64Bytes(trimmed);
      if (raw === null || !budget.take(raw.length)) return null;
      d = detect(raw, budget, true);
      if (d.layers.length === 0 && d.error === undefined) return null;
      d = { ...d, layers: ['base64', ...d.layers] };
    }
  } else {
    d = detect(x, budget, true);
    if (d.layers.length === 0) return null;
  }
  return {
    via: d.layers,
    guessed: d.guessed,
    ...(d.value === undefined ? {} : { value: d.value }),
    ...(d.error === undefined ? {} : { error: d.error }),
  };
}

/** RFC 6901: `/a~1b/0` for the keys `a/b`, `0`. */
export function toPointer(path: readonly string[]): string {
  return path.map((k) => `/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/** A node found by path, with what its children are taken from. */
interface Located {
  value: unknown;
  /** What the node's children come from: the node, or the value it decoded to. */
  shown: unknown;
  embedded: Embedded | null;
  /** Embedded layers crossed from the root to here (bounded by MAX_LAYERS). */
  depth: number;
  /** Each key's position among its parent's children. */
  trail: number[];
}

export class PathNotFound extends Error {}

/** Walks `path` from the root, through embedded values. */
export function locate(doc: DecodedDoc, path: readonly string[], budget: Budget): Located {
  let value = doc.root;
  let depth = 0;
  let embedded: Embedded | null = null;
  const trail: number[] = [];
  for (let i = 0; i <= path.length; i++) {
    embedded = doc.embeddedAt(value, path.slice(0, i), budget, depth);
    const shown = embedded?.value !== undefined ? embedded.value : value;
    if (embedded?.value !== undefined) depth++;
    if (i === path.length) return { value, shown, embedded, depth, trail };
    const key = path[i]!;
    const next = childNamed(shown, key);
    if (next === null) {
      throw new PathNotFound(`the decoded checkpoint has no node ${toPointer(path.slice(0, i + 1))}`);
    }
    trail.push(next.index);
    value = next.value;
  }
  throw new PathNotFound('unreachable');
}

function cut(text: string): { text: string; truncated: boolean } {
  if (text.length <= PREVIEW_CHARS) return { text, truncated: false };
  // Not inside a surrogate pair.
  let end = PREVIEW_CHARS;
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return { text: `${text.slice(0, end)}…`, truncated: true };
}

function hexPreview(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes.subarray(0, 32)) out += b.toString(16).padStart(2, '0');
  return bytes.length > 32 ? `${out}…` : out;
}

/** The one-line rendering of a node's value. */
function previewOf(shown: unknown): { text: string; truncated: boolean } {
  const x = inner(shown);
  const kind = kindOf(shown);
  switch (kind) {
    case 'string':
      return cut(JSON.stringify(x));
    case 'number':
      return { text: numberText(x as number), truncated: false };
    case 'integer':
    case 'boolean':
      return { text: String(x), truncated: false };
    case 'null':
    case 'undefined':
      return { text: kind, truncated: false };
    case 'date': {
      const t = (x as Date).getTime();
      return { text: Number.isNaN(t) ? 'Invalid Date' : (x as Date).toISOString(), truncated: false };
    }
    case 'bytes': {
      const b = x as Uint8Array;
      return { text: `${b.length} bytes ${hexPreview(b)}`, truncated: b.length > 32 };
    }
    case 'ext': {
      const e = x as ExtData;
      const data = e.data instanceof Uint8Array ? e.data : new Uint8Array(0);
      return { text: `ext ${e.type}: ${data.length} bytes ${hexPreview(data)}`, truncated: data.length > 32 };
    }
    case 'tag':
      return { text: `tag ${(x as Tagged).tag}`, truncated: true };
    case 'array':
    case 'packed':
    case 'repeated':
      return { text: `[${childCount(shown)}]`, truncated: true };
    default:
      return { text: `{${childCount(shown)}}`, truncated: true };
  }
}

function numberText(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
  return Object.is(n, -0) ? '-0' : String(n);
}

function summary(key: string, at: Located): NodeSummary {
  const { value, shown, embedded } = at;
  const x = inner(shown);
  const p = previewOf(shown);
  const out: NodeSummary = {
    key,
    type: kindOf(shown),
    count: childCount(shown),
    preview: p.text,
    truncated: p.truncated,
    size: typeof x === 'string' ? x.length : x instanceof Uint8Array ? x.length : null,
    guessed: value instanceof PbField || (embedded?.guessed ?? false),
  };
  if (value instanceof PbField) out.field = { no: value.no, wire: value.wire, as: value.as, alt: value.alt };
  if (embedded !== null) {
    out.via = embedded.via;
    if (embedded.error !== undefined) out.error = embedded.error;
  }
  return out;
}

export interface TreePage {
  node: NodeSummary;
  trail: number[];
  offset: number;
  children: NodeSummary[];
}

/** The node at `path` and its children `offset`…`offset + limit`. Throws {@link PathNotFound}. */
export function treePage(
  doc: DecodedDoc,
  path: readonly string[],
  offset: number,
  limit = DEFAULT_CHILDREN,
): TreePage {
  const budget = new Budget(MAX_OUTPUT_BYTES);
  const at = locate(doc, path, budget);
  const node = summary(path.at(-1) ?? '', at);
  const children = childrenOf(at.shown, offset, limit).map((c) => {
    const childPath = [...path, c.key];
    const embedded = doc.embeddedAt(c.value, childPath, budget, at.depth);
    const shown = embedded?.value !== undefined ? embedded.value : c.value;
    return summary(c.key, { value: c.value, shown, embedded, depth: at.depth, trail: [] });
  });
  return { node, trail: at.trail, offset, children };
}

export interface SearchMatch {
  path: string[];
  type: Kind;
  preview: string;
}

export interface SearchResult {
  matches: SearchMatch[];
  /** The search stopped early (match, node or time cap): there may be more. */
  truncated: boolean;
  /** Nodes looked at. */
  searched: number;
}

interface Frame {
  value: unknown;
  path: string[];
  depth: number;
  next: number;
  count: number;
  /** The children of anything but an array, listed once (an array is indexed in place). */
  list: readonly Child[] | null;
}

/**
 * Nodes whose key or value contains `query` (case-insensitive), in document order, embedded
 * values included. Bounded: {@link MAX_SEARCH_MATCHES}, {@link MAX_SEARCH_NODES} nodes,
 * {@link MAX_SEARCH_MS} milliseconds.
 */
export function searchDoc(
  doc: DecodedDoc,
  query: string,
  limit = MAX_SEARCH_MATCHES,
  now: () => number = performance.now.bind(performance),
): SearchResult {
  const needle = query.toLowerCase();
  const budget = new Budget(MAX_OUTPUT_BYTES);
  const started = now();
  const matches: SearchMatch[] = [];
  let searched = 0;
  const visit = (value: unknown, path: string[], depth: number): Frame | null => {
    searched++;
    const embedded = doc.embeddedAt(value, path, budget, depth);
    const shown = embedded?.value !== undefined ? embedded.value : value;
    const key = path.at(-1);
    const n = childCount(shown);
    let hit = key?.toLowerCase().includes(needle) === true;
    if (!hit && n === 0) hit = leafText(shown).toLowerCase().includes(needle);
    if (hit) matches.push({ path, type: kindOf(shown), preview: previewOf(shown).text });
    if (n === 0) return null;
    const x = inner(shown);
    return {
      value: x,
      path,
      depth: depth + (shown === value ? 0 : 1),
      next: 0,
      count: n,
      list: Array.isArray(x) ? null : childrenOf(x, 0, n),
    };
  };
  const stack: Frame[] = [];
  const first = visit(doc.root, [], 0);
  if (first !== null) stack.push(first);
  while (stack.length > 0) {
    if (matches.length >= limit || searched >= MAX_SEARCH_NODES) break;
    if ((searched & 1023) === 0 && now() - started > MAX_SEARCH_MS) break;
    const top = stack.at(-1)!;
    if (top.next >= top.count) {
      stack.pop();
      continue;
    }
    const i = top.next++;
    const c = top.list === null ? { key: String(i), value: (top.value as unknown[])[i] } : top.list[i];
    if (c === undefined) continue;
    const frame = visit(c.value, [...top.path, c.key], top.depth);
    if (frame !== null) stack.push(frame);
  }
  return { matches: matches.slice(0, limit), truncated: stack.length > 0, searched };
}

/** What a search reads of a leaf: the string itself, or the preview. */
function leafText(shown: unknown): string {
  const x = inner(shown);
  return typeof x === 'string'
    ? x
    : typeof x === 'number' || typeof x === 'bigint'
      ? String(x)
      : previewOf(shown).text;
}

/**
 * The node at `path` as JSON text, 2-space indented. Values JSON has no form for are written so
 * they stay readable and lossless: bigints as plain numbers, bytes as `{"$bytes": base64}`,
 * CBOR tags as `{"$tag": n, "value": …}`, msgpack extensions as `{"$ext": type, "$bytes": …}`,
 * NaN and ±Infinity as strings, protobuf messages as objects keyed by field number (a repeated
 * field as an array), and an embedded value as `{"$decoded": "base64 → gzip → msgpack", "value": …}`.
 */
export function exportJson(doc: DecodedDoc, path: readonly string[]): string {
  const budget = new Budget(MAX_OUTPUT_BYTES);
  const at = locate(doc, path, budget);
  const out: string[] = [];
  const write = (value: unknown, pointerPath: string[], depth: number, indent: string): void => {
    const embedded = doc.embeddedAt(value, pointerPath, budget, depth);
    if (embedded !== null) {
      const next = `${indent}  `;
      out.push(`{\n${next}"$decoded": ${JSON.stringify(embedded.via.join(' → '))},\n${next}`);
      if (embedded.value === undefined) out.push(`"error": ${JSON.stringify(embedded.error ?? '')}`);
      else {
        out.push('"value": ');
        plain(embedded.value, pointerPath, depth + 1, next);
      }
      out.push(`\n${indent}}`);
      return;
    }
    plain(value, pointerPath, depth, indent);
  };
  const plain = (value: unknown, pointerPath: string[], depth: number, indent: string): void => {
    const x = inner(value);
    const kind = kindOf(value);
    const next = `${indent}  `;
    const container = (open: string, close: string, keyed: boolean) => {
      const n = childCount(value);
      if (n === 0) {
        out.push(open + close);
        return;
      }
      out.push(`${open}\n`);
      let i = 0;
      for (const c of childrenOf(value, 0, n)) {
        out.push(keyed ? `${next}${JSON.stringify(c.key)}: ` : next);
        write(c.value, [...pointerPath, c.key], depth, next);
        out.push(++i < n ? ',\n' : '\n');
      }
      out.push(indent + close);
    };
    switch (kind) {
      case 'null':
      case 'undefined':
        out.push('null');
        return;
      case 'boolean':
        out.push(String(x));
        return;
      case 'number':
        out.push(Number.isFinite(x) ? JSON.stringify(x) : JSON.stringify(numberText(x as number)));
        return;
      case 'integer':
        out.push(String(x));
        return;
      case 'string':
        out.push(JSON.stringify(x));
        return;
      case 'date':
        out.push(JSON.stringify(previewOf(value).text));
        return;
      case 'bytes':
        out.push(`{ "$bytes": ${JSON.stringify(Buffer.from(x as Uint8Array).toString('base64'))} }`);
        return;
      case 'ext': {
        const e = x as ExtData;
        const data = e.data instanceof Uint8Array ? e.data : new Uint8Array(0);
        out.push(`{ "$ext": ${e.type}, "$bytes": ${JSON.stringify(Buffer.from(data).toString('base64'))} }`);
        return;
      }
      case 'tag':
        out.push(`{\n${next}"$tag": ${(x as Tagged).tag},\n${next}"value": `);
        write((x as Tagged).value, [...pointerPath, 'value'], depth, next);
        out.push(`\n${indent}}`);
        return;
      case 'array':
      case 'packed':
      case 'repeated':
        container('[', ']', false);
        return;
      default:
        container('{', '}', true);
    }
  };
  write(at.value, [...path], at.depth - (at.embedded?.value !== undefined ? 1 : 0), '');
  return out.join('');
}
