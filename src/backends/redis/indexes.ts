/**
 * Bringing a bucket's listing and expiry indexes up to its change stream before they are read
 * (layout.ts, Indexes): list and count read `ids`, prune reads `exp`, and the lease calls write
 * neither.
 */
import { InternalError } from '../../lease/errors.ts';
import { S, type Sender } from './send.ts';

/**
 * Change entries one catch-up script applies: about 2 µs of server time each (a `string.match`
 * and two ZADDs), so one script holds the server for about a millisecond.
 */
const CATCH_UP_ENTRIES = 500;
/** Bucket hash fields one rebuild script indexes (HSCAN COUNT), for the same reason. */
const REBUILD_FIELDS = 500;
/**
 * Rebuilds one catch-up may start. A rebuild starts again only when the stream was trimmed past
 * its start while it ran (over 10 000 ownership changes in one bucket meanwhile); a fleet that
 * keeps doing that for 3 rebuilds in a row outruns any index, and the call fails instead of looping.
 */
const MAX_REBUILDS = 3;

/** Catches up bucket `b`'s indexes with its change stream, rebuilding them from its hash when needed. */
export async function catchUp(io: Sender, op: string, b: number): Promise<void> {
  const L = io.layout;
  for (let rebuilds = 0; ; ) {
    const state = await io.runIn<string>(
      op,
      S.indexCatchUp,
      b,
      [L.chg[b]!, L.ids[b]!, L.exp[b]!, L.ix[b]!],
      [CATCH_UP_ENTRIES],
    );
    if (state === 'OK') return;
    if (state === 'MORE') continue;
    if (state !== 'REBUILD') throw new InternalError(`unexpected index catch-up reply ${String(state)}`);
    if (++rebuilds > MAX_REBUILDS) {
      throw new InternalError(
        `the indexes of bucket ${b} of key prefix '${io.prefix}' could not catch up: its change stream was trimmed past ${MAX_REBUILDS} rebuilds in a row`,
      );
    }
    let cursor = '0';
    let start = '';
    do {
      [cursor, start] = await io.runIn<[string, string]>(
        op,
        S.indexRebuild,
        b,
        [L.chg[b]!, L.ids[b]!, L.exp[b]!, L.ix[b]!, L.m[b]!],
        [cursor, REBUILD_FIELDS, start],
      );
    } while (cursor !== '0');
  }
}

/** {@link catchUp} of every bucket, in parallel. */
export async function catchUpAll(io: Sender, op: string): Promise<void> {
  await Promise.all(io.layout.ix.map((_, b) => catchUp(io, op, b)));
}
