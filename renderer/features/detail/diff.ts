/**
 * What changed between two decoded checkpoints (JSON values, as `checkpoint.export` gives them):
 * every added, removed and changed leaf or subtree, by JSON Pointer, in document order. Objects
 * are compared by key, arrays by index. For the diff against the checkpoint saved at the last
 * handoff, once the backends keep that snapshot per work item; no DOM here (tested in Node).
 */
import { toPointer } from './pointer.ts';

export interface Change {
  /** Where, as a JSON Pointer ('' for the whole value). */
  path: string;
  kind: 'added' | 'removed' | 'changed';
  /** The value before (absent when added), as one line of JSON. */
  before?: string;
  /** The value after (absent when removed), as one line of JSON. */
  after?: string;
}

/** Longest value shown in a change, in characters. */
const SHOWN = 200;

function line(v: unknown): string {
  const text = JSON.stringify(v) ?? 'undefined';
  return text.length > SHOWN ? `${text.slice(0, SHOWN)}…` : text;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The changes from `before` to `after`, at most `limit` of them (`truncated` when there were
 * more). An explicit stack: a deep payload cannot run the page out of stack.
 */
export function diffValues(
  before: unknown,
  after: unknown,
  limit = 500,
): { changes: Change[]; truncated: boolean } {
  type Step = { change: Change } | { a: unknown; b: unknown; path: string[] };
  const changes: Change[] = [];
  const stack: Step[] = [{ a: before, b: after, path: [] }];
  while (stack.length > 0) {
    if (changes.length >= limit) return { changes, truncated: true };
    const step = stack.pop()!;
    if ('change' in step) {
      changes.push(step.change);
      continue;
    }
    const { a, b, path } = step;
    // The children's steps, in document order (pushed reversed: the stack pops the first first).
    const next: Step[] = [];
    if (Array.isArray(a) && Array.isArray(b)) {
      for (let i = 0; i < Math.max(a.length, b.length); i++) {
        const p = [...path, String(i)];
        if (i >= a.length) next.push({ change: { path: toPointer(p), kind: 'added', after: line(b[i]) } });
        else if (i >= b.length)
          next.push({ change: { path: toPointer(p), kind: 'removed', before: line(a[i]) } });
        else next.push({ a: a[i], b: b[i], path: p });
      }
    } else if (isObject(a) && isObject(b)) {
      for (const k of Object.keys(a)) {
        const p = [...path, k];
        if (Object.hasOwn(b, k)) next.push({ a: a[k], b: b[k], path: p });
        else next.push({ change: { path: toPointer(p), kind: 'removed', before: line(a[k]) } });
      }
      for (const k of Object.keys(b)) {
        if (!Object.hasOwn(a, k))
          next.push({ change: { path: toPointer([...path, k]), kind: 'added', after: line(b[k]) } });
      }
    } else if (!Object.is(a, b) && JSON.stringify(a) !== JSON.stringify(b)) {
      changes.push({ path: toPointer(path), kind: 'changed', before: line(a), after: line(b) });
    }
    stack.push(...next.reverse());
  }
  return { changes, truncated: false };
}
