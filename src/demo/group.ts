/**
 * A consumer group for the demo: a few members share partitions through `joinGroup`
 * (src/lease/group.ts), each saving its partition's offset as a checkpoint every tick. Now
 * and then the last member leaves and comes back, so the console shows a group rebalancing:
 * its partitions handed over cleanly and taken back, each resumed from its last offset.
 */
import { type GroupMember, joinGroup } from '../lease/group.ts';
import type { LeaseHolder } from '../lease/holder.ts';
import type { LeaseBackend } from '../lease/types.ts';
import { checkInt } from '../lease/validate.ts';

export interface DemoGroupOptions {
  /** The group's name. Default `ingest`. */
  group?: string;
  /** Members, 1..20. Default 3. */
  members?: number;
  /** Partitions shared by the members, 1..200. Default 9. */
  partitions?: number;
  /** Ttl of the members' leases, ms. Default 10 000. */
  ttlMs?: number;
  /** Time between two checkpoints of one partition, ms. Default 1 000. */
  tickMs?: number;
  /** How long the last member stays in the group before leaving for as long again, ms; 0: never. Default 45 000. */
  cycleMs?: number;
  /** Prefix of every work id. Default `demo/`. */
  prefix?: string;
  /** Prefix of every holder id. Default `demo-consumer-`. */
  holderPrefix?: string;
  onError?: (err: unknown) => void;
}

export interface DemoGroup {
  /** The members now in the group. */
  members(): readonly GroupMember[];
  /** Every member leaves (partitions released cleanly); idempotent. */
  stop(): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The offset a checkpoint of this demo records (0 for none or a foreign one). */
export function offsetOf(state: Uint8Array | null): number {
  if (state === null) return 0;
  try {
    const parsed = Number(JSON.parse(decoder.decode(state))?.offset);
    return Number.isSafeInteger(parsed) && parsed >= 0 ? parsed : 0;
  } catch {
    return 0;
  }
}

export async function startDemoGroup(
  backend: LeaseBackend,
  options: DemoGroupOptions = {},
): Promise<DemoGroup> {
  const group = options.group ?? 'ingest';
  const memberCount = checkInt('options.members', options.members, 1, 20, 3);
  const partitionCount = checkInt('options.partitions', options.partitions, 1, 200, 9);
  const ttlMs = checkInt('options.ttlMs', options.ttlMs, 100, 3_600_000, 10_000);
  const tickMs = checkInt('options.tickMs', options.tickMs, 10, 600_000, 1000);
  const cycleMs = checkInt('options.cycleMs', options.cycleMs, 0, 86_400_000, 45_000);
  const prefix = options.prefix ?? 'demo/';
  const holderPrefix = options.holderPrefix ?? 'demo-consumer-';
  const onError = options.onError ?? (() => {});
  const workIds = Array.from(
    { length: partitionCount },
    (_, i) => `${prefix}${group}-p${String(i).padStart(2, '0')}`,
  );
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const joined = new Map<string, GroupMember>();
  let stopped = false;

  // Work on one partition: advance its offset and save it every tick until the lease goes.
  const consume = (holder: LeaseHolder): void => {
    let offset = offsetOf(holder.state);
    const step = (): void => {
      timers.delete(timer);
      if (stopped || holder.lost) return;
      offset += 1 + Math.floor(Math.random() * 50);
      holder.save(encoder.encode(JSON.stringify({ offset, at: 'demo' }))).then(
        () => {
          if (stopped || holder.lost) return;
          timer = setTimeout(step, tickMs);
          timers.add(timer);
        },
        (err: unknown) => {
          if (!holder.lost) onError(err);
        },
      );
    };
    let timer = setTimeout(step, tickMs);
    timers.add(timer);
  };

  const join = async (holderId: string): Promise<void> => {
    const member = await joinGroup(backend, {
      group,
      holderId,
      workIds,
      ttlMs,
      onAssigned: consume,
      // The last offset is saved at every tick; a handover releases after this returns.
      onRevoked: () => {},
    });
    if (stopped) await member.leave().catch(onError);
    else joined.set(holderId, member);
  };

  for (let i = 1; i <= memberCount; i++) await join(`${holderPrefix}${i}`);
  if (cycleMs > 0 && memberCount > 1) {
    const last = `${holderPrefix}${memberCount}`;
    const cycle = (): void => {
      if (stopped) return;
      const member = joined.get(last);
      joined.delete(last);
      const next = member === undefined ? join(last) : member.leave();
      next.catch(onError).finally(() => {
        if (!stopped) timers.add(setTimeout(cycle, cycleMs));
      });
    };
    timers.add(setTimeout(cycle, cycleMs));
  }

  let stopping: Promise<void> | null = null;
  return {
    members: () => [...joined.values()],
    stop() {
      stopping ??= (async () => {
        stopped = true;
        for (const t of timers) clearTimeout(t);
        timers.clear();
        const members = [...joined.values()];
        joined.clear();
        await Promise.all(members.map((m) => m.leave().catch(onError)));
      })();
      return stopping;
    },
  };
}
