/**
 * Fleet balancing: `joinGroup` spreads a set of work items over the live
 * members of a group, as the Kinesis Client Library spreads shards over
 * workers, with nothing but leases:
 *
 * - **membership is a lease** per member, on the work item
 *   `group:<group>:member:<holderId>`, renewed by heartbeat; a member that dies
 *   drops out when it runs out, one that leaves releases it;
 * - every `rebalanceMs` a member reads the member leases and the item leases
 *   (two `list` calls and one `serverTime`), ranks the live members by holder
 *   id and computes its share: `⌊n/m⌋`, plus one for the first `n mod m`
 *   ranks, so the shares add up to exactly `n`;
 * - a member under its share acquires free items (never held, released, or
 *   run out — a dead member's items are free once their leases expire, and
 *   the next holder resumes from their last checkpoint with `expired` true);
 * - when the free items do not make up its share (a member joined), it asks
 *   the members over their share to hand over their surplus through
 *   request-release (`admin.requestRelease`) and waits for exactly those items
 *   (a waiting claim). Which items: every member computes the same plan from
 *   the same listing — each over-share member's surplus is the items it would
 *   shed itself (its highest work ids beyond its share), all surpluses sorted
 *   by work id, dealt to the under-share members in rank order — so each
 *   surplus item is asked for by one member only (no thundering herd) and
 *   the moves add up to the shares;
 * - the holder of a requested item learns of it from its next heartbeat
 *   (no extra call), runs `onRevoked(workId, 'requested')` (the work saves
 *   its checkpoint and stops), then releases, so the requester starts with a
 *   clean handoff and the last checkpoint. Any request is honoured, also one
 *   an operator made from the console;
 * - as a fallback, a member that stays over its share for a while (two
 *   rebalances and half a ttl, {@link SHED_AFTER_ROUNDS}) hands over its
 *   surplus itself (onRevoked 'rebalance', release): see there why.
 *
 * When members join or leave, every member's share changes at its next
 * rebalance and the group settles where each live member holds its share.
 * Two members never hold one item at once: each item is an ordinary lease,
 * taken by an atomic acquire and fenced by its token.
 */
import { ErrorCode, InvalidArgumentError, WorkleaseError } from './errors.ts';
import { claim, type LeaseHolder } from './holder.ts';
import { telemetryOf } from './telemetry.ts';
import type { LeaseBackend, LeaseInfo } from './types.ts';
import { checkId, checkOptions, checkTtl } from './validate.ts';

/** Claims of free items in flight at once during a rebalance. */
const TAKE_PARALLEL = 8;

/**
 * How long a member must have been over its share, in rebalances plus heartbeats, before it sheds
 * its surplus without being asked: `SHED_AFTER_ROUNDS * rebalanceMs + ttlMs / 2`. Requests do the
 * moving; this fallback is kept because the plan is computed from each member's own listing, and
 * views can disagree for a while (a member whose membership lease one side does not see yet, a
 * requester that died between its request and its claim, a request refused because the item
 * changed hands meanwhile). Without it such an imbalance could last until the views happen to
 * agree. The wait covers a requester's next rebalance and the holder's next heartbeat (ttl / 3),
 * which is how long a request takes to arrive; with 3 rounds only (no ttl part) the 12-member test
 * saw 7 of 27 join hand-overs shed before the request was heard.
 */
const SHED_AFTER_ROUNDS = 2;

/**
 * Why an item left this member: `requested` (a release was requested, by another member taking
 * its share or by an operator), `rebalance` (over its share for a while, or the item left the
 * source), `lost` (the lease was lost), `leave` (this member leaves).
 */
export type RevokeReason = 'requested' | 'rebalance' | 'lost' | 'leave';

export interface GroupOptions {
  /** The group's name; members of one group share it. */
  group: string;
  /** This member's holder id, unique in the group. */
  holderId: string;
  /** The work items to spread. Either this or `source`. */
  workIds?: readonly string[];
  /** Called at every rebalance for the current work items (e.g. the partitions of a topic). Either this or `workIds`. */
  source?: () => readonly string[] | Promise<readonly string[]>;
  /** Ttl of the member's and the items' leases, in milliseconds. Default 15 000. */
  ttlMs?: number;
  /** Time between rebalances, in milliseconds. Default `ttlMs / 3`. Allowed: 10 to ttlMs. */
  rebalanceMs?: number;
  /**
   * Heartbeat interval of the membership and item leases, in milliseconds. Default `ttlMs / 3`.
   * Allowed: 1 to `ttlMs / 2`.
   */
  intervalMs?: number;
  /** Called when this member took an item. The work runs under `holder` (save checkpoints, watch `holder.signal`). */
  onAssigned: (holder: LeaseHolder) => void | Promise<void>;
  /**
   * Called when an item leaves this member: `requested` and `rebalance` (awaited, then the lease is
   * released: save the last checkpoint and stop before the promise resolves), `lost` (the lease was
   * lost; write nothing more), `leave` (awaited, then released). Default none.
   */
  onRevoked?: (workId: string, reason: RevokeReason, holder: LeaseHolder) => void | Promise<void>;
}

export interface GroupMember {
  readonly group: string;
  readonly holderId: string;
  /** The work items this member holds now. */
  readonly held: readonly string[];
  /** The live members as of the last rebalance, ranked. */
  readonly members: readonly string[];
  /** Runs one rebalance now (they also run every `rebalanceMs`). */
  rebalance(): Promise<void>;
  /** Hands back every item (onRevoked 'leave', release) and the membership, and stops. */
  leave(): Promise<void>;
}

/** The membership lease's work id. */
export function memberWorkId(group: string, holderId: string): string {
  return `group:${group}:member:${holderId}`;
}

function commonPrefix(ids: readonly string[]): string {
  if (ids.length === 0) return '';
  let p = ids[0] ?? '';
  for (const id of ids) {
    let i = 0;
    while (i < p.length && i < id.length && p[i] === id[i]) i++;
    p = p.slice(0, i);
    if (p === '') break;
  }
  return p;
}

async function listAll(backend: LeaseBackend, prefix: string): Promise<LeaseInfo[]> {
  const out: LeaseInfo[] = [];
  let cursor: string | null = null;
  do {
    const page = await backend.admin.list(
      prefix === '' ? { cursor, limit: 10_000 } : { cursor, limit: 10_000, workIdPrefix: prefix },
    );
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return out;
}

/** A stable per-member starting point, so that members short of items try different ones first. */
function spread(holderId: string, n: number): number {
  let h = 2166136261;
  for (let i = 0; i < holderId.length; i++) h = Math.imul(h ^ holderId.charCodeAt(i), 16777619);
  return n === 0 ? 0 : (h >>> 0) % n;
}

/**
 * Joins `group` as `holderId` and starts balancing. Resolves once the membership lease is taken
 * and the first rebalance ran. Bad options reject with `InvalidArgumentError` before any I/O.
 */
export async function joinGroup(backend: LeaseBackend, options: GroupOptions): Promise<GroupMember> {
  const o = checkOptions<GroupOptions>('options', options, [
    'group',
    'holderId',
    'workIds',
    'source',
    'ttlMs',
    'rebalanceMs',
    'intervalMs',
    'onAssigned',
    'onRevoked',
  ]);
  const group = checkId('options.group', o.group);
  const holderId = checkId('options.holderId', o.holderId);
  if ((o.workIds === undefined) === (o.source === undefined)) {
    throw new InvalidArgumentError('options must have exactly one of workIds and source');
  }
  if (o.workIds !== undefined) {
    if (!Array.isArray(o.workIds))
      throw new InvalidArgumentError('options.workIds must be an array of work ids');
    for (const [i, id] of o.workIds.entries()) checkId(`options.workIds[${i}]`, id);
  }
  if (o.source !== undefined && typeof o.source !== 'function') {
    throw new InvalidArgumentError('options.source must be a function');
  }
  const onAssigned = o.onAssigned;
  if (typeof onAssigned !== 'function')
    throw new InvalidArgumentError('options.onAssigned must be a function');
  if (o.onRevoked !== undefined && typeof o.onRevoked !== 'function') {
    throw new InvalidArgumentError('options.onRevoked must be a function');
  }
  const ttlMs = o.ttlMs === undefined ? 15_000 : checkTtl(o.ttlMs, 'options.ttlMs');
  const rebalanceMs = o.rebalanceMs ?? Math.max(10, Math.floor(ttlMs / 3));
  if (typeof rebalanceMs !== 'number' || !(rebalanceMs >= 10 && rebalanceMs <= ttlMs)) {
    throw new InvalidArgumentError(`options.rebalanceMs must be from 10 to ttlMs (${ttlMs})`);
  }
  const intervalMs = o.intervalMs ?? Math.max(1, Math.floor(ttlMs / 3));
  if (typeof intervalMs !== 'number' || !(intervalMs >= 1 && intervalMs <= ttlMs / 2)) {
    throw new InvalidArgumentError(
      `options.intervalMs must be from 1 to ttlMs / 2 (${Math.floor(ttlMs / 2)})`,
    );
  }
  const beat = { intervalMs };
  const memberPrefix = `group:${group}:member:`;
  const staticIds = o.workIds === undefined ? null : [...new Set(o.workIds)];
  const logger = telemetryOf(backend).logger;
  const source = o.source;
  const onRevoked = o.onRevoked;

  let membership = await claim(backend, memberWorkId(group, holderId), holderId, { ttlMs });
  membership.heartbeat(beat);
  const held = new Map<string, LeaseHolder>();
  /** Items this member asked for and is waiting to claim. */
  const pending = new Set<string>();
  /** Ends the waiting claims of {@link pending} when the member leaves (one controller per claim). */
  const waits = new Set<AbortController>();
  /** Monotonic time since which this member is over its share, or null. */
  let overSince: number | null = null;
  let members: string[] = [holderId];
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | null = null;

  const call = async (fn: (() => unknown) | undefined, ...args: unknown[]): Promise<void> => {
    if (fn === undefined) return;
    try {
      await (fn as (...a: unknown[]) => unknown)(...args);
    } catch (err) {
      logger.error({ group, holderId, err }, 'worklease group callback threw');
    }
  };

  const drop = async (workId: string, reason: RevokeReason): Promise<void> => {
    const h = held.get(workId);
    if (h === undefined) return;
    held.delete(workId);
    await call(onRevoked as () => unknown, workId, reason, h);
    // A holder that is still live (its membership was lost, not the item) hands the item back cleanly.
    if (!h.lost) await h.release().catch(() => {});
  };

  const take = async (workId: string, waitMs = 0): Promise<boolean> => {
    let h: LeaseHolder;
    const wait = new AbortController();
    waits.add(wait);
    try {
      h = await claim(backend, workId, holderId, {
        ttlMs,
        waitMs,
        signal: wait.signal,
        onReleaseRequested: (_request, holder) => {
          if (held.get(workId) === holder) void drop(workId, 'requested');
        },
      });
    } catch (err) {
      // A held item (docs/history.md) is skipped like one another member holds: it ends no round.
      if (
        err instanceof WorkleaseError &&
        (err.code === ErrorCode.LEASE_HELD || err.code === ErrorCode.ON_HOLD)
      ) {
        return false;
      }
      throw err;
    } finally {
      waits.delete(wait);
    }
    held.set(workId, h);
    h.heartbeat(beat);
    h.signal.addEventListener(
      'abort',
      () => {
        if (held.get(workId) === h) void drop(workId, 'lost');
      },
      { once: true },
    );
    await call(onAssigned as () => unknown, h);
    return true;
  };

  const rebalanceOnce = async (): Promise<void> => {
    if (stopped) return;
    if (membership.lost) {
      // Not counted by the others any more (e.g. a stall past the ttl): give up the items (their
      // leases are as stale as the membership) and join again once the old membership has run out.
      logger.warn({ group, holderId }, 'worklease group member lost its membership; joining again');
      for (const id of [...held.keys()]) await drop(id, 'lost');
      const next = await claim(backend, memberWorkId(group, holderId), holderId, {
        ttlMs,
        waitMs: 2 * ttlMs,
      });
      if (stopped) {
        await next.release().catch(() => {});
        return;
      }
      membership = next;
      membership.heartbeat(beat);
    }
    const ids = staticIds ?? [...new Set(await source!())];
    for (const [i, id] of ids.entries()) checkId(`source()[${i}]`, id);
    const [now, memberLeases, itemLeases] = await Promise.all([
      backend.admin.serverTime(),
      listAll(backend, memberPrefix),
      listAll(backend, commonPrefix(ids)),
    ]);
    const live = (l: LeaseInfo | undefined): boolean =>
      l !== undefined && l.ended === null && l.expiresAt.getTime() > now.getTime();
    members = memberLeases
      .filter(live)
      .map((l) => l.holderId)
      .sort();
    if (!members.includes(holderId)) members = [...members, holderId].sort();
    const n = ids.length;
    const m = members.length;
    const rank = members.indexOf(holderId);
    const share = Math.floor(n / m) + (rank < n % m ? 1 : 0);
    logger.debug(
      { group, holderId, members: m, items: n, share, held: held.size },
      'worklease group rebalance',
    );
    const wanted = new Set(ids);
    // Items that left the source are handed back like a surplus. Hand-overs run in parallel: each
    // waits for its work to save and stop (in the 12-member test, one after the other, a member
    // that had taken 100 items at start needed 27 s to hand back 90).
    await Promise.all([...held.keys()].filter((id) => !wanted.has(id)).map((id) => drop(id, 'rebalance')));
    if (stopped) return;
    if (held.size > share) {
      overSince ??= performance.now();
      if (performance.now() - overSince < SHED_AFTER_ROUNDS * rebalanceMs + ttlMs / 2) return;
      const surplus = [...held.keys()].sort().slice(share);
      await Promise.all(surplus.map((id) => drop(id, 'rebalance')));
      return;
    }
    overSince = null;
    if (held.size + pending.size >= share) return;
    const byId = new Map(itemLeases.map((l) => [l.workId, l]));
    const free = ids.filter((id) => !held.has(id) && !live(byId.get(id)));
    const start = spread(holderId, free.length);
    const order = free.map((_, k) => free[(start + k) % free.length]!);
    // Up to TAKE_PARALLEL claims at a time, never more than the shortfall in flight.
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < order.length && held.size + inFlight < share && !stopped) {
        const id = order[next++]!;
        inFlight++;
        try {
          await take(id);
        } finally {
          inFlight--;
        }
      }
    };
    let inFlight = 0;
    await Promise.all(Array.from({ length: TAKE_PARALLEL }, worker));
    if (stopped || held.size + pending.size >= share) return;
    askForSurplus(ids, members, itemLeases.filter(live));
  };

  /**
   * The plan of the module comment: the surplus items dealt to the under-share members in rank
   * order, the same on every member for the same listing. This member asks for its part (each
   * request names the token it saw, so a lease that changed hands meanwhile is not disturbed) and
   * waits for each item with a claim woken by the release.
   */
  const askForSurplus = (ids: readonly string[], ranked: readonly string[], liveItems: LeaseInfo[]): void => {
    const n = ids.length;
    const m = ranked.length;
    const shareOf = (r: number): number => Math.floor(n / m) + (r < n % m ? 1 : 0);
    const wanted = new Set(ids);
    const heldBy = new Map<string, LeaseInfo[]>();
    for (const l of liveItems) {
      if (!wanted.has(l.workId)) continue;
      heldBy.set(l.holderId, [...(heldBy.get(l.holderId) ?? []), l]);
    }
    const surplus: LeaseInfo[] = [];
    for (const [r, member] of ranked.entries()) {
      if (member === holderId) continue;
      const theirs = (heldBy.get(member) ?? []).sort((a, b) => (a.workId < b.workId ? -1 : 1));
      surplus.push(...theirs.slice(shareOf(r)));
    }
    surplus.sort((a, b) => (a.workId < b.workId ? -1 : a.workId > b.workId ? 1 : 0));
    let offset = 0;
    let mine: LeaseInfo[] = [];
    for (const [r, member] of ranked.entries()) {
      const have = member === holderId ? held.size + pending.size : (heldBy.get(member)?.length ?? 0);
      const need = Math.max(0, shareOf(r) - have);
      if (member === holderId) {
        mine = surplus.slice(offset, offset + need);
        break;
      }
      offset += need;
    }
    for (const l of mine) {
      if (pending.has(l.workId) || held.has(l.workId)) continue;
      pending.add(l.workId);
      void (async () => {
        try {
          await backend.admin.requestRelease(l.workId, {
            expectedToken: l.fencingToken,
            operator: holderId,
            reason: `group ${group}: handing over to ${holderId} (rebalance)`,
          });
          // The holder hears it at its next heartbeat (ttl / 3), saves and releases.
          if (!stopped) await take(l.workId, ttlMs);
        } catch (err) {
          // CONFLICT / NOT_FOUND: it changed hands or ended meanwhile; LEASE_HELD: not handed over in
          // time. The next rebalance plans again from a fresh listing.
          if (!(err instanceof WorkleaseError) && !stopped)
            logger.warn({ group, holderId, err }, 'worklease group hand-over failed');
        } finally {
          pending.delete(l.workId);
        }
      })();
    }
  };

  const rebalance = (): Promise<void> => {
    if (running !== null) return running;
    running = rebalanceOnce()
      .catch((err) => logger.warn({ group, holderId, err }, 'worklease group rebalance failed'))
      .finally(() => {
        running = null;
      });
    return running;
  };

  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      void rebalance().then(schedule);
    }, rebalanceMs);
  };

  await rebalance();
  schedule();

  return {
    group,
    holderId,
    get held() {
      return [...held.keys()].sort();
    },
    get members() {
      return members;
    },
    rebalance,
    async leave() {
      stopped = true;
      clearTimeout(timer);
      for (const wait of waits) wait.abort(new Error('the member left the group'));
      await running;
      while (pending.size > 0) await new Promise((r) => setTimeout(r, 10));
      for (const id of [...held.keys()]) await drop(id, 'leave');
      if (!membership.lost) await membership.release().catch(() => {});
    },
  };
}
