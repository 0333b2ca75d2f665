/**
 * Many leases in one round trip (LeaseAdmin.getMany): one HMGET of the packed leases and one of
 * the holds per bucket the ids fall in, all sent at once (the connection pipelines them), no script. What the console's
 * heartbeat checks read (issue 43). Not atomic, and need not be: each row is as stored when read.
 */
import type { LeaseInfo } from '../../lease/types.ts';
import { withHold } from './history.ts';
import { parsePacked } from './packed.ts';
import type { Nullable, Sender } from './send.ts';

export async function getMany(io: Sender, workIds: readonly string[]): Promise<Array<LeaseInfo | null>> {
  const L = io.layout;
  const byBucket = new Map<number, number[]>();
  workIds.forEach((id, i) => {
    const b = L.bucketOf(id);
    const list = byBucket.get(b);
    if (list === undefined) byBucket.set(b, [i]);
    else list.push(i);
  });
  const out = new Array<LeaseInfo | null>(workIds.length).fill(null);
  await Promise.all(
    [...byBucket].map(async ([b, indexes]) => {
      const ids = indexes.map((i) => workIds[i]!);
      const [packed, held] = await Promise.all([
        io.send<Nullable[]>('get', 'hmget', [L.m[b]!, ...ids]),
        io.send<Nullable[]>('get', 'hmget', [L.hold[b]!, ...ids]),
      ]);
      indexes.forEach((i, k) => {
        const p = packed[k];
        const info = p === null || p === undefined ? null : parsePacked(workIds[i]!, p);
        out[i] = info === null ? null : withHold(info, held[k]);
      });
    }),
  );
  return out;
}
