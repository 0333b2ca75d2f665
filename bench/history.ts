/**
 * `npm run bench:history` — what a work item's history (docs/history.md, migration 13) costs
 * acquire and release on PostgreSQL: the lease statements as shipped against the same statements
 * built without the history rows and the handoff copy (`acquireStatement(f, false)`,
 * `releaseStatement(f, false)`; the hold check stays in both), sent through one `pg.Pool` as named
 * prepared statements on one migrated schema, taking turns in every round (call by call at 1 in
 * flight, in slices of 500 above: bench/compare.ts). The ratio is history / without, the median of
 * `--rounds` per-round ratios, then the lowest and highest; the load average is printed with each
 * table. renew and checkpoint are not measured: they write no history (their statements did not
 * change).
 *
 * Rows (`history`: as shipped; `without`: the same statements without the history):
 * - `acq+rel`: each in-flight slot acquires and releases a key of its own over and over (a
 *   takeover of a released lease: one `acquired` and one `released` history row per cycle).
 * - `acq+rel 1 KiB`: the same on keys that carry a 1 KiB checkpoint, which acquire
 *   also copies to handoff_states.
 * - `first acquire`: a key never used before (an insert of the lease row and one history row).
 *
 * Usage: npm run bench:history -- [--pg <url>] [--rounds 7] [--ops 4000] [--pool 16]
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { acquireStatement } from '../src/backends/sql/statements/acquire.ts';
import { leaseFragments } from '../src/backends/sql/statements/fragments.ts';
import { releaseStatement } from '../src/backends/sql/statements/release.ts';
import { openBackend } from '../src/index.ts';
import { benchArgs, intArg } from './args.ts';
import { dropSchema } from './cleanup.ts';
import { type Call, type Contender, formatRow, header, interleave, loadText } from './compare.ts';

const file = import.meta.filename;
const args = benchArgs(file, {
  pg: {
    type: 'string',
    default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  },
  rounds: { type: 'string', default: '7' },
  ops: { type: 'string', default: '4000' },
  pool: { type: 'string', default: '16' },
});
const ROUNDS = intArg(file, 'rounds', args.rounds);
const OPS = intArg(file, 'ops', args.ops);
const POOL = intArg(file, 'pool', args.pool);
const TTL_MS = 60_000;

type Kind = 'cycle' | 'cycle-state' | 'first';
const LABEL: Record<Kind, string> = {
  cycle: 'acq+rel',
  'cycle-state': 'acq+rel 1 KiB',
  first: 'first acquire',
};

async function main(): Promise<void> {
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  // Migrates the schema (migration 13 included); the statements are sent straight through pg.
  await (await openBackend(args.pg, { schema })).close();
  const pool = new pg.Pool({ connectionString: args.pg, max: POOL });
  const version = Number((await pool.query('SHOW server_version_num')).rows[0].server_version_num);
  const f = leaseFragments(schema, version >= 140000);
  const sides = [false, true].map((history) => ({
    history,
    acquire: acquireStatement(f, history),
    release: releaseStatement(f, history),
  }));
  let round = 0;
  const contender = (side: (typeof sides)[number], kind: Kind): Contender => ({
    name: `${LABEL[kind]}, ${side.history ? 'history' : 'without'}`,
    async prepare(_ops, inFlight): Promise<Call> {
      const r = round++;
      const tag = side.history ? 'h' : 'n';
      if (kind === 'cycle-state') {
        // The slots' keys with a 1 KiB checkpoint each (as checkpoint stores it).
        for (let w = 0; w < inFlight; w++) {
          await pool.query(
            `INSERT INTO "${schema}".lease_states (work_id, state) VALUES ($1, $2) ON CONFLICT (work_id) DO NOTHING`,
            [`s${tag}:${inFlight}:${w}`, randomBytes(1024)],
          );
        }
      }
      const acquire = (workId: string) =>
        pool.query({
          name: side.acquire.name,
          text: side.acquire.text,
          values: [workId, 'bench', TTL_MS, null, null],
        });
      if (kind === 'first') {
        return async (i) => {
          await acquire(`f${tag}:${r}:${i}`);
        };
      }
      return async (_i, worker) => {
        const workId = `${kind === 'cycle' ? 'c' : 's'}${tag}:${inFlight}:${worker}`;
        const got = await acquire(workId);
        await pool.query({
          name: side.release.name,
          text: side.release.text,
          values: [workId, got.rows[0].token],
        });
      };
    },
  });
  try {
    // Untimed: every pooled connection prepares both sides' statements.
    for (const side of sides) {
      const warm = await contender(side, 'cycle').prepare(0, POOL);
      await Promise.all(
        Array.from({ length: POOL }, async (_, w) => {
          for (let i = 0; i < 12; i++) await warm(i, w);
        }),
      );
    }
    console.log(
      `history cost on ${schema} (PostgreSQL ${version}), pool ${POOL}, ${OPS} calls per side and round at 16 in flight (a quarter at 1), median of ${ROUNDS}`,
    );
    for (const kind of ['cycle', 'cycle-state', 'first'] as const) {
      for (const inFlight of [1, 16]) {
        const ops = inFlight === 1 ? Math.max(1, Math.floor(OPS / 4)) : OPS;
        console.log(`\nload average ${loadText()}`);
        console.log(header('statement'));
        const rows = await interleave(contender(sides[0]!, kind), [contender(sides[1]!, kind)], {
          ops,
          inFlight,
          rounds: ROUNDS,
        });
        for (const row of rows) console.log(formatRow(row));
      }
    }
    console.log(`\nload average ${loadText()}`);
  } finally {
    await pool.end();
    await dropSchema(args.pg, schema);
  }
}

await main();
