/**
 * When a release request has waited long enough for the console to offer escalating it to a
 * force-release. One setting for the whole console, remembered in this browser (Settings →
 * Request release); the default is {@link DEFAULT_ESCALATE_AFTER_MS}. Ages are by the backend's
 * clock: `serverNow` is the local clock plus the connection's offset, or its last confirmed time
 * while stale, as everywhere on the page.
 */
import { useSyncExternalStore } from 'react';
import type { ReleaseRequestWire } from '../../../src/console/common/index.ts';
import { visible } from '../../../src/console/common/index.ts';
import { formatAgo, formatDuration } from '../../lib/format.ts';

/**
 * The default deadline: a holder renews every third of its ttl, so one that cooperates has
 * heard of the request and handed over well within this for any ttl up to about a minute.
 */
export const DEFAULT_ESCALATE_AFTER_MS = 30_000;
/** Bounds of the setting: one second to one day. */
export const MIN_ESCALATE_AFTER_MS = 1_000;
export const MAX_ESCALATE_AFTER_MS = 86_400_000;
const STORAGE_KEY = 'worklease.escalateAfterMs';

/** The stored value as a deadline in ms; anything else (absent, not a whole number in bounds) is the default. */
export function parseEscalateAfter(raw: string | null): number {
  if (raw === null || !/^[0-9]{1,9}$/.test(raw)) return DEFAULT_ESCALATE_AFTER_MS;
  const ms = Number(raw);
  return ms >= MIN_ESCALATE_AFTER_MS && ms <= MAX_ESCALATE_AFTER_MS ? ms : DEFAULT_ESCALATE_AFTER_MS;
}

/** This browser's localStorage (typed structurally: the functions here are also tested in Node, without it). */
interface Storage {
  getItem(k: string): string | null;
  setItem(k: string, v: string): void;
  removeItem(k: string): void;
}
function storage(): Storage | undefined {
  return (globalThis as { localStorage?: Storage }).localStorage;
}

let current: number | null = null;
const listeners = new Set<() => void>();

function load(): number {
  try {
    return parseEscalateAfter(storage()?.getItem(STORAGE_KEY) ?? null);
  } catch {
    return DEFAULT_ESCALATE_AFTER_MS;
  }
}

/** Sets the deadline (whole ms within the bounds; otherwise an error, nothing stored). */
export function setEscalateAfterMs(ms: number): void {
  if (!Number.isInteger(ms) || ms < MIN_ESCALATE_AFTER_MS || ms > MAX_ESCALATE_AFTER_MS) {
    throw new RangeError(
      `the escalation deadline must be ${MIN_ESCALATE_AFTER_MS / 1000} s to ${MAX_ESCALATE_AFTER_MS / 3_600_000} h`,
    );
  }
  current = ms;
  try {
    if (ms === DEFAULT_ESCALATE_AFTER_MS) storage()?.removeItem(STORAGE_KEY);
    else storage()?.setItem(STORAGE_KEY, String(ms));
  } catch {
    // Not remembered (storage refused), still applied to this page.
  }
  for (const l of listeners) l();
}

export function useEscalateAfterMs(): number {
  return useSyncExternalStore(
    (cb) => {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
    () => {
      current ??= load();
      return current;
    },
  );
}

export interface Escalation {
  /** The request's age by the backend's clock (never negative). */
  ageMs: number;
  /** True once the request is at least the deadline old. */
  due: boolean;
  /** Time left until it is due (0 once due). */
  inMs: number;
}

export function escalation(request: ReleaseRequestWire, serverNow: number, deadlineMs: number): Escalation {
  const ageMs = Math.max(0, serverNow - request.at);
  return { ageMs, due: ageMs >= deadlineMs, inMs: Math.max(0, deadlineMs - ageMs) };
}

/** "Release requested 41 s ago by alice: draining node 7" */
export function describeRequest(request: ReleaseRequestWire, serverNow: number): string {
  return `Release requested ${formatAgo(Math.max(0, serverNow - request.at))} by ${visible(request.operator)}: ${visible(request.reason)}`;
}

/** The reason a force-release escalating a request is prefilled with: it cites the request. */
export function escalationReason(request: ReleaseRequestWire, ageMs: number): string {
  return `Escalating the release request by ${request.operator} (${formatDuration(ageMs)} without a handoff): ${request.reason}`;
}
