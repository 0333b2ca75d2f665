/**
 * One way to walk every decoded value, whatever format it came from: JSON values, msgpack's and
 * CBOR's (Map, Uint8Array, bigint, ExtData, Tagged, Date) and guessed protobuf messages. A node's
 * children have string keys, unique within their parent, so a path of keys (a JSON Pointer in
 * the page's address) names one node.
 */
import { ExtData } from '@msgpack/msgpack';
import { Tagged } from 'cborg';
import { DecodeFailure } from './compression.ts';
import { MAX_DEPTH } from './limits.ts';
import { PbField, PbMessage } from './protobuf.ts';

export type Kind =
  | 'object'
  | 'array'
  | 'map'
  | 'message'
  | 'repeated'
  | 'packed'
  | 'tag'
  | 'ext'
  | 'string'
  | 'number'
  | 'integer'
  | 'boolean'
  | 'null'
  | 'undefined'
  | 'bytes'
  | 'date';

/** A protobuf field number seen more than once in one message: its occurrences, in wire order. */
export class PbRepeated {
  constructor(
    readonly no: number,
    readonly fields: readonly PbField[],
  ) {}
}

export interface Child {
  key: string;
  value: unknown;
}

/** The value a node stands for (a protobuf field stands for its value). */
export function inner(v: unknown): unknown {
  return v instanceof PbField ? v.value : v;
}

export function kindOf(v: unknown): Kind {
  const x = inner(v);
  if (x === null) return 'null';
  switch (typeof x) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    case 'bigint':
      return 'integer';
    case 'boolean':
      return 'boolean';
    case 'undefined':
      return 'undefined';
    default:
  }
  if (Array.isArray(x)) return v instanceof PbField ? 'packed' : 'array';
  if (x instanceof Uint8Array) return 'bytes';
  if (x instanceof PbMessage) return 'message';
  if (x instanceof PbRepeated) return 'repeated';
  if (x instanceof Map) return 'map';
  if (x instanceof Tagged) return 'tag';
  if (x instanceof ExtData) return 'ext';
  if (x instanceof Date) return 'date';
  return 'object';
}

// Children of large containers are listed once per container and kept while it lives: a page of
// 200 from an object of 100 000 keys then costs 200, not another Object.keys().
const listed = new WeakMap<object, readonly Child[] | readonly string[]>();
/** Objects with more keys than this keep their key list (smaller ones list theirs again: cheap). */
const KEEP_KEYS_OVER = 64;

function objectKeys(o: object): readonly string[] {
  let keys = listed.get(o) as readonly string[] | undefined;
  if (keys === undefined) {
    keys = Object.keys(o);
    if (keys.length > KEEP_KEYS_OVER) listed.set(o, keys);
  }
  return keys;
}

/** Map keys as text: strings and numbers as they are, anything else (or a repeat) by position. */
function mapChildren(m: Map<unknown, unknown>): readonly Child[] {
  let out = listed.get(m) as readonly Child[] | undefined;
  if (out === undefined) {
    const seen = new Set<string>();
    const list: Child[] = [];
    let i = 0;
    for (const [k, value] of m) {
      let key = typeof k === 'string' || typeof k === 'number' || typeof k === 'bigint' ? String(k) : `#${i}`;
      if (seen.has(key)) key = `#${i}`;
      seen.add(key);
      list.push({ key, value });
      i++;
    }
    out = list;
    listed.set(m, out);
  }
  return out;
}

/** A message's fields by number, in order of first appearance; a repeated number is one child. */
function messageChildren(m: PbMessage): readonly Child[] {
  let out = listed.get(m) as readonly Child[] | undefined;
  if (out === undefined) {
    const groups = new Map<number, PbField[]>();
    for (const f of m.fields) {
      const g = groups.get(f.no);
      if (g === undefined) groups.set(f.no, [f]);
      else g.push(f);
    }
    out = [...groups].map(([no, fields]) => ({
      key: String(no),
      value: fields.length === 1 ? fields[0] : new PbRepeated(no, fields),
    }));
    listed.set(m, out);
  }
  return out;
}

/** How many children a node has (0 for a leaf). */
export function childCount(v: unknown): number {
  const x = inner(v);
  if (Array.isArray(x)) return x.length;
  if (x instanceof PbMessage) return messageChildren(x).length;
  if (x instanceof PbRepeated) return x.fields.length;
  if (x instanceof Map) return x.size;
  if (x instanceof Tagged) return 1;
  if (x !== null && typeof x === 'object' && kindOf(x) === 'object') return objectKeys(x).length;
  return 0;
}

/** Children `offset`…`offset + limit` of a node. */
export function childrenOf(v: unknown, offset: number, limit: number): Child[] {
  const x = inner(v);
  const end = offset + limit;
  if (Array.isArray(x)) return x.slice(offset, end).map((value, i) => ({ key: String(offset + i), value }));
  if (x instanceof PbMessage) return messageChildren(x).slice(offset, end);
  if (x instanceof PbRepeated) {
    return x.fields.slice(offset, end).map((value, i) => ({ key: String(offset + i), value }));
  }
  if (x instanceof Map) return mapChildren(x).slice(offset, end);
  if (x instanceof Tagged) return offset === 0 && limit > 0 ? [{ key: 'value', value: x.value }] : [];
  if (x !== null && typeof x === 'object' && kindOf(x) === 'object') {
    const o = x as Record<string, unknown>;
    return objectKeys(o)
      .slice(offset, end)
      .map((key) => ({ key, value: o[key] }));
  }
  return [];
}

/** The child named `key` and its position, or null. */
export function childNamed(v: unknown, key: string): { index: number; value: unknown } | null {
  const x = inner(v);
  if (Array.isArray(x) || x instanceof PbRepeated) {
    if (!/^(0|[1-9]\d*)$/.test(key)) return null;
    const index = Number(key);
    const items: readonly unknown[] = Array.isArray(x) ? x : x.fields;
    return index < items.length ? { index, value: items[index] } : null;
  }
  if (x instanceof PbMessage || x instanceof Map) {
    const list = x instanceof Map ? mapChildren(x) : messageChildren(x);
    const index = list.findIndex((c) => c.key === key);
    return index < 0 ? null : { index, value: list[index]!.value };
  }
  if (x instanceof Tagged) return key === 'value' ? { index: 0, value: x.value } : null;
  if (x !== null && typeof x === 'object' && kindOf(x) === 'object' && Object.hasOwn(x, key)) {
    return { index: objectKeys(x).indexOf(key), value: (x as Record<string, unknown>)[key] };
  }
  return null;
}

/**
 * Checks the nesting of a freshly decoded value (an explicit stack: the value may be deeper than
 * the native one) and counts its nodes. Throws {@link DecodeFailure} past {@link MAX_DEPTH}.
 */
export function measure(root: unknown): { nodes: number; depth: number } {
  // Two parallel stacks (no pair per node), and plain arrays and objects walked in place: this
  // runs once over every node of a freshly parsed payload (180 000 of them in 2.3 MiB of JSON).
  const values: unknown[] = [root];
  const depths: number[] = [0];
  let nodes = 0;
  let deepest = 0;
  while (values.length > 0) {
    const x = inner(values.pop());
    const depth = depths.pop()!;
    nodes++;
    if (depth > deepest) {
      deepest = depth;
      if (depth > MAX_DEPTH) throw new DecodeFailure(`it nests more than ${MAX_DEPTH} levels deep`);
    }
    if (x === null || typeof x !== 'object' || x instanceof Uint8Array) continue;
    if (Array.isArray(x)) {
      for (let i = 0; i < x.length; i++) {
        values.push(x[i]);
        depths.push(depth + 1);
      }
    } else if (Object.getPrototypeOf(x) === Object.prototype) {
      for (const k in x) {
        values.push((x as Record<string, unknown>)[k]);
        depths.push(depth + 1);
      }
    } else {
      const n = childCount(x);
      for (const c of childrenOf(x, 0, n)) {
        values.push(c.value);
        depths.push(depth + 1);
      }
    }
  }
  return { nodes, depth: deepest };
}
