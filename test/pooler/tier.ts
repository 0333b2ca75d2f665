/**
 * The PgBouncer tier: Debian's PgBouncer, started here on a private loopback port in front of the
 * shared PostgreSQL with its default settings plus `pool_mode` and a small pool (3 server
 * connections per database and user), and through it: the whole conformance suite (history and
 * holds included), a chaos run
 * of two schemas at once on that one pool (each run checked against its own holders' writes), the
 * settings a call needs reaching the server per transaction, application_name passed through,
 * and waiting acquires (LISTEN in session mode, the change-feed poll in transaction mode).
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type PoolMode, startPgBouncer } from '../../src/chaos/postgres-servers.ts';
import { type ChaosResult, runChaos } from '../../src/chaos/runner.ts';
import { claim, type LeaseBackend, LeaseHeldError, openBackend } from '../../src/index.ts';
import { defineConformance } from '../conformance/contract.ts';
import { defineHistory } from '../conformance/history.ts';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { holdRow } from '../support/row-lock.ts';

/**
 * Server connections PgBouncer keeps per (database, user), shared by both chaos schemas. In
 * transaction mode 3 serve every client in turn; in session mode each client connection holds one
 * for its life, so the pool must hold every connection the suite opens at once (PgBouncer's
 * default is 20).
 */
const POOL: Record<PoolMode, number> = { transaction: 3, session: 60 };

export async function definePoolerTier(mode: PoolMode): Promise<void> {
  const bouncer = await startPgBouncer({
    serverPort: Number(new URL(PG_URL).port),
    mode,
    poolSize: POOL[mode],
  });
  // Transaction mode is found by the library itself (pooler=auto); session mode is said.
  const base = bouncer.rewrite(PG_URL);
  const url = mode === 'session' ? `${base}?pooler=session` : base;
  afterAll(() => bouncer.stop());

  const database = new URL(PG_URL).pathname.slice(1);
  defineConformance({ kind: 'postgres', url, cut: () => bouncer.cut(database) });
  defineHistory({ kind: 'postgres', url });

  describe(`PostgreSQL behind PgBouncer (pool_mode=${mode})`, () => {
    const opened: LeaseBackend[] = [];
    const schemas: string[] = [];
    afterAll(async () => {
      for (const b of opened) await b.close().catch(() => {});
      for (const s of schemas) await dropNamespace({ kind: 'postgres', url: PG_URL }, s);
    });
    async function open(extra: Parameters<typeof openBackend>[1] = {}): Promise<LeaseBackend> {
      const schema = uniqueNamespace(`pgb_${mode[0]}`);
      schemas.push(schema);
      const b = await openBackend(url, { schema, ...extra });
      opened.push(b);
      return b;
    }

    it("two schemas on one pool at once, each with its own holders and faults: 0 violations, each store its own holders' writes", {
      timeout: 120_000,
    }, async () => {
      const run = (): Promise<ChaosResult> =>
        runChaos({
          url,
          workers: 4,
          items: 3,
          seconds: 8,
          ttlMs: 800,
          faultEveryMs: 400,
          faults: ['kill', 'freeze', 'force-release', 'request-release'],
        });
      const results = await Promise.all([run(), run()]);
      for (const r of results) {
        console.log(r.line);
        expect(r.report.violations, r.report.violations.map((v) => v.message).join('\n')).toEqual([]);
        expect(r.report.increments).toBeGreaterThan(0);
        expect(r.stats.flatMap((s) => s.unexpected)).toEqual([]);
      }
    });

    it('the call timeout reaches the server with each call: a statement waiting on a lock is cancelled there', async () => {
      const b = await open({ callTimeoutMs: 1000 });
      const rec = await b.acquire('locked', 'h', 60_000);
      const lock = await holdRow(schemaOf(b), 'locked');
      try {
        const renew = b.renew(rec, 60_000).then(
          () => 'OK',
          (e: { code?: string }) => e.code,
        );
        // application_name reaches pg_stat_activity through PgBouncer: that is how the wait is found.
        await lock.waiting();
        expect(await renew).toBe('BACKEND_UNAVAILABLE');
        // The server's own statement_timeout (1000 ms) ends the wait: the lock is not waited on any more.
        const watcher = new pg.Client({ connectionString: PG_URL });
        await watcher.connect();
        try {
          await expect
            .poll(
              async () =>
                (
                  await watcher.query(
                    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
                    [`worklease:${schemaOf(b)}`],
                  )
                ).rows[0].n,
              { timeout: 3000 },
            )
            .toBe(0);
        } finally {
          await watcher.end();
        }
      } finally {
        await lock.close();
      }
    });

    it('a waiting claim takes the lease soon after its release (LISTEN in session mode, a poll in transaction mode)', {
      timeout: 30_000,
    }, async () => {
      const b = await open();
      const first = await b.acquire('handoff', 'first', 60_000);
      await expect(b.acquire('handoff', 'second', 60_000)).rejects.toBeInstanceOf(LeaseHeldError);
      const waiting = claim(b, 'handoff', 'second', { ttlMs: 60_000, waitMs: 20_000 });
      await new Promise((r) => setTimeout(r, 500));
      const released = performance.now();
      await b.release(first);
      const holder = await waiting;
      const took = performance.now() - released;
      console.log(
        `pool_mode=${mode}: a waiting claim took the lease ${took.toFixed(0)} ms after the release`,
      );
      // The safety poll (10 s) would be far later: the wake-up came from LISTEN or the feed poll.
      expect(took).toBeLessThan(3000);
      await holder.release();
    });
  });
}

function schemaOf(b: LeaseBackend): string {
  return new URL(b.url).searchParams.get('schema')!;
}
