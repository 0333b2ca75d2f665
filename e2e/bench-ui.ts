/**
 * `npm run bench:ui` — the console's fleet screen in Chromium against a real fleet: the console
 * service and web server of `worklease serve` (in this process), real PostgreSQL and Redis (a
 * namespace of their own), the built renderer. For each backend it prints:
 *
 * 1. first rows: page load until the first lease row is drawn;
 *    whole-fleet counts: until the header shows the whole fleet as final ("N leases · whole fleet");
 * 2. search, filter and sort → screen: from the keystroke or click until the header and the first
 *    row show the answer (interleaved rounds; p50 and p95);
 * 3. scroll: frames per second and long tasks (> 50 ms) while the table is scrolled continuously
 *    (wheel steps, and scroll bar jumps to random places) and --rate leases/s change;
 * 4. change → screen: each change is an acquire of a hot work item under a new holder name; the
 *    page notes (MutationObserver) when that holder is drawn in a row on screen; p50 and p99 from
 *    the write's return;
 * 5. browser heap after a forced GC (CDP), and the load average before and after.
 *
 * The fleet is created through the public `acquire` call (256 at a time, 2 h ttl, so every lease
 * is live; on PostgreSQL the first 1 000, the rest copied from the first row in bulk) unless --reuse names a namespace a previous run kept (--keep, or --seed-only to
 * create one and stop).
 *
 * Usage: npm run bench:ui -- [--backends postgres,redis] [--leases 100000] [--rate 1000]
 *        [--seconds 20] [--rounds 15] [--reuse <namespace>] [--keep] [--seed-only] [--no-build]
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { CDPSession, Page } from 'playwright-core';
import { build } from 'vite';
import { benchArgs, intArg } from '../bench/args.ts';
import { openBackend } from '../src/index.ts';
import type { LeaseBackend, LeaseRecord } from '../src/lease/types.ts';
import {
  type BackendFlavour,
  dropNamespace,
  launchChromium,
  type Namespace,
  PG_URL,
  REDIS_URL,
  startConsole,
} from './harness.ts';

const args = benchArgs(import.meta.filename, {
  backends: { type: 'string', default: 'postgres,redis' },
  leases: { type: 'string', default: '100000' },
  rate: { type: 'string', default: '1000' },
  seconds: { type: 'string', default: '20' },
  rounds: { type: 'string', default: '15' },
  reuse: { type: 'string', default: '' },
  keep: { type: 'boolean', default: false },
  'seed-only': { type: 'boolean', default: false },
  'no-build': { type: 'boolean', default: false },
});
const LEASES = intArg(import.meta.filename, 'leases', args.leases);
const RATE = intArg(import.meta.filename, 'rate', args.rate);
const SECONDS = intArg(import.meta.filename, 'seconds', args.seconds);
const ROUNDS = intArg(import.meta.filename, 'rounds', args.rounds);
const TTL_MS = 2 * 3_600_000;
const HOT = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const loadAverage = () => {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'unknown';
  }
};
const jobId = (i: number) => `job-${String(i).padStart(7, '0')}`;
const hotId = (i: number) => `a-hot/${String(i).padStart(4, '0')}`;

function nsOf(flavour: BackendFlavour, name: string): Namespace {
  return flavour === 'postgres'
    ? { flavour, baseUrl: PG_URL, options: { schema: name }, consoleUrl: `${PG_URL}?schema=${name}` }
    : {
        flavour,
        baseUrl: REDIS_URL,
        options: { keyPrefix: name },
        consoleUrl: `${REDIS_URL}?keyPrefix=${name}`,
      };
}

/**
 * PostgreSQL, past the first 1 000: copies of the row `job-0000000` under the other work ids and
 * holders, in one INSERT … SELECT per 100 000 (acquire runs ~500/s on this loaded machine: 1 000 000
 * would take half an hour). Every column but the ids is the template's, expiry moved 2 h ahead.
 */
async function bulkPostgres(schema: string, from: number): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const cols = (
      await client.query<{ c: string }>(
        `SELECT column_name AS c FROM information_schema.columns
          WHERE table_schema = $1 AND table_name = 'leases' ORDER BY ordinal_position`,
        [schema],
      )
    ).rows.map((r) => r.c);
    const pick = cols.map((c) =>
      c === 'work_id'
        ? `'job-' || lpad(g::text, 7, '0')`
        : c === 'holder_id'
          ? `'worker-' || lpad((g % 500)::text, 3, '0')`
          : c === 'expires_at'
            ? `now() + interval '2 hours'`
            : `l.${c}`,
    );
    const t0 = performance.now();
    for (let lo = from; lo < LEASES; lo += 100_000) {
      const hi = Math.min(LEASES, lo + 100_000) - 1;
      await client.query(
        `INSERT INTO "${schema}".leases (${cols.join(', ')})
         SELECT ${pick.join(', ')} FROM "${schema}".leases l, generate_series($1::int, $2::int) g
          WHERE l.work_id = 'job-0000000'`,
        [lo, hi],
      );
    }
    await client.query(`ANALYZE "${schema}".leases`);
    console.log(
      `  copied ${(LEASES - from).toLocaleString()} rows in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );
  } finally {
    await client.end();
  }
}

async function seed(backend: LeaseBackend, ns: Namespace): Promise<void> {
  if (ns.flavour === 'postgres' && LEASES > 1000) {
    const n = LEASES;
    await seedAcquire(backend, 1000);
    await bulkPostgres(ns.options.schema as string, 1000);
    console.log(`  seeded ${n.toLocaleString()} leases (1 000 through acquire, the rest copied)`);
    return;
  }
  await seedAcquire(backend, LEASES);
}

async function seedAcquire(backend: LeaseBackend, count: number): Promise<void> {
  let next = 0;
  const t0 = performance.now();
  let shown = 0;
  await Promise.all(
    Array.from({ length: 256 }, async () => {
      while (next < count) {
        const i = next++;
        await backend.acquire(jobId(i), `worker-${String(i % 500).padStart(3, '0')}`, TTL_MS);
        if (i >= shown + 100_000) {
          shown = i;
          console.log(`  seeding: ${i.toLocaleString()} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
        }
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  console.log(
    `  acquired ${count.toLocaleString()} leases in ${s.toFixed(0)} s (${(count / s).toFixed(0)}/s)`,
  );
}

/** Page code (a string: the TypeScript loader's helpers must not leak into the page). */
const PAGE_INIT = `
  window.__bench = { longtasks: [], frames: 0, seen: {} };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__bench.longtasks.push(e.duration);
  }).observe({ type: 'longtask', buffered: true });
  const frame = () => { window.__bench.frames++; requestAnimationFrame(frame); };
  requestAnimationFrame(frame);
  // Change → screen: the wall-clock time each hot holder name is first drawn in a row.
  const note = () => {
    for (const td of document.querySelectorAll('.fleet-table td.c-holder')) {
      const t = td.textContent ?? '';
      if (t.startsWith('hot-') && window.__bench.seen[t] === undefined)
        window.__bench.seen[t] = performance.timeOrigin + performance.now();
    }
  };
  new MutationObserver(note).observe(document, { subtree: true, childList: true, characterData: true });
`;

const ANSWERED = `(() => {
  const total = document.querySelector('[data-testid="fleet-total"]')?.textContent ?? '';
  const first = document.querySelector('.fleet-table tbody tr');
  const pending = document.querySelector('.fleet-table')?.getAttribute('data-pending') === 'true';
  return { total, first: first?.querySelector('.c-work')?.textContent ?? '', firstStatus: first?.querySelector('.c-status')?.textContent ?? '', busy: pending || first === null || first.classList.contains('row-loading') };
})()`;

interface Answered {
  total: string;
  first: string;
  firstStatus: string;
  busy: boolean;
}

async function waitFor(page: Page, ok: (a: Answered) => boolean, timeoutMs = 120_000): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const a = (await page.evaluate(ANSWERED)) as Answered;
    if (ok(a)) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out: ${JSON.stringify(a)}`);
    await sleep(5);
  }
}

async function heapAfterGc(cdp: CDPSession): Promise<number> {
  await cdp.send('HeapProfiler.collectGarbage');
  const { metrics } = (await cdp.send('Performance.getMetrics')) as {
    metrics: { name: string; value: number }[];
  };
  return (metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? Number.NaN) / (1024 * 1024);
}

/** Acquires and releases the hot work items in turn, `RATE` writes a second; acquires under unique holder names. */
function churn(backend: LeaseBackend) {
  const held = new Map<number, LeaseRecord>();
  const writes = new Map<string, number>();
  let n = 0;
  let stopped = false;
  let errors = 0;
  const loop = (async () => {
    const perTick = Math.max(1, Math.round(RATE / 20));
    let slot = 0;
    while (!stopped) {
      const t = Date.now();
      await Promise.all(
        Array.from({ length: perTick }, async () => {
          const i = slot++ % HOT;
          try {
            const r = held.get(i);
            if (r !== undefined) {
              held.delete(i);
              await backend.release(r);
            } else {
              const holder = `hot-${n++}`;
              const rec = await backend.acquire(hotId(i), holder, TTL_MS);
              writes.set(holder, Date.now());
              held.set(i, rec);
            }
          } catch {
            errors++;
          }
        }),
      );
      await sleep(Math.max(0, 50 - (Date.now() - t)));
    }
  })();
  return {
    writes,
    get errors() {
      return errors;
    },
    async stop() {
      stopped = true;
      await loop;
      for (const r of held.values()) await backend.release(r).catch(() => {});
    },
  };
}

async function runOne(flavour: BackendFlavour): Promise<void> {
  const name = args.reuse !== '' ? args.reuse : `bench_ui_${randomBytes(4).toString('hex')}`;
  const ns = nsOf(flavour, name);
  console.log(
    `\n== ${flavour}: ${LEASES.toLocaleString()} leases (namespace ${name}); load average ${loadAverage()}`,
  );
  const backend = await openBackend(ns.baseUrl, { ...ns.options, migrate: true });
  if (args.reuse === '') await seed(backend, ns);
  if (args['seed-only']) {
    await backend.close();
    console.log(`  seeded namespace ${name}: run again with --reuse ${name}`);
    return;
  }
  const consoleUt = await startConsole([{ name: `bench-${flavour}`, url: ns.consoleUrl }]);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.addInitScript(PAGE_INIT);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');
    const connId = consoleUt.service.connections()[0]!.id;
    // Final (not loading): "1,000,000 leases · whole fleet:" (a kept namespace also holds the hot items).
    const isWhole = (t: string) => /^[\d,]+ leases · whole fleet:$/.test(t);
    const shown = (a: Answered) => a.first !== '' && !a.busy;
    const t0 = Date.now();
    await page.goto(consoleUt.server.url, { waitUntil: 'commit' });
    await waitFor(page, shown);
    const firstMs = Date.now() - t0;
    await waitFor(page, (a) => isWhole(a.total));
    const wholeMs = Date.now() - t0;
    console.log(
      `  (1) cold (the console server reads the fleet as the page loads): first rows ${firstMs} ms; whole-fleet counts final ${wholeMs} ms`,
    );
    // Warm: the console server's index is built; a new page.
    const w0 = Date.now();
    await page.reload({ waitUntil: 'commit' });
    await waitFor(page, shown);
    const warmFirst = Date.now() - w0;
    await waitFor(page, (a) => isWhole(a.total));
    console.log(
      `      warm page: first rows ${warmFirst} ms, counts ${Date.now() - w0} ms; load average ${loadAverage()}`,
    );

    // (2) search / filter / sort → screen, interleaved.
    const search = page.getByRole('searchbox', { name: 'Search leases' });
    const times: Record<string, number[]> = { search: [], filter: [], sort: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const i = Math.floor(Math.random() * LEASES);
      const id = jobId(i);
      let s0 = Date.now();
      await search.fill(id);
      await waitFor(page, (a) => a.first === id && !a.busy && a.total.startsWith('1 of '));
      times.search!.push(Date.now() - s0);
      await search.fill('');
      await waitFor(page, (a) => isWhole(a.total) && !a.busy);
      s0 = Date.now();
      await page.getByRole('button', { name: /^expiring/ }).click();
      await waitFor(page, (a) => a.total.includes(' of ') && !a.total.includes('updating'));
      times.filter!.push(Date.now() - s0);
      await page.getByRole('button', { name: /^expiring/ }).click();
      await waitFor(page, (a) => isWhole(a.total) && !a.busy);
      s0 = Date.now();
      await page.getByRole('button', { name: /^Expires/ }).click();
      // Rows of the previous sort are marked pending from the render of the click on.
      await waitFor(page, (a) => !a.busy);
      times.sort!.push(Date.now() - s0);
      await page.goto(new URL(`/c/${encodeURIComponent(connId)}`, consoleUt.server.origin).href, {
        waitUntil: 'commit',
      });
      await waitFor(page, shown);
    }
    for (const [k, xs] of Object.entries(times)) {
      console.log(
        `  (2) ${k.padEnd(6)} → screen: p50 ${pct(xs, 50)} ms, p95 ${pct(xs, 95)} ms, max ${Math.max(...xs)} ms (${xs.length} rounds)`,
      );
    }

    // (3) scroll while RATE leases/s change.
    const writer = churn(backend);
    await page.evaluate('window.__bench.longtasks = []; window.__bench.frames = 0');
    const grid = page.getByRole('grid', { name: 'Leases' });
    await grid.focus();
    await page.mouse.move(600, 500);
    const s0 = Date.now();
    let steps = 0;
    while (Date.now() - s0 < SECONDS * 1000) {
      if (++steps % 40 === 0) {
        // A scroll-bar jump: somewhere random in the fleet.
        await page.evaluate(
          `(() => { const t = document.querySelector('.fleet-table'); t.scrollTop = Math.random() * t.scrollHeight; })()`,
        );
      } else {
        await page.mouse.wheel(0, 900);
      }
      await sleep(100);
    }
    const stats = (await page.evaluate('window.__bench')) as { longtasks: number[]; frames: number };
    const secs = (Date.now() - s0) / 1000;
    console.log(
      `  (3) scroll ${secs.toFixed(0)} s while ${RATE}/s change: ${(stats.frames / secs).toFixed(0)} fps; ${stats.longtasks.length} long tasks, max ${Math.max(0, ...stats.longtasks).toFixed(0)} ms; load average ${loadAverage()}`,
    );

    // (4) change → screen: the hot items sort first; the page stays at the top.
    await page.keyboard.press('Home');
    await page.evaluate('window.__bench.seen = {}');
    const since = Date.now();
    await sleep(SECONDS * 1000);
    await writer.stop();
    await sleep(1000);
    const seen = (await page.evaluate('window.__bench.seen')) as Record<string, number>;
    const lat: number[] = [];
    for (const [holder, at] of writer.writes) {
      const drawn = seen[holder];
      if (at >= since && drawn !== undefined) lat.push(Math.max(0, drawn - at));
    }
    console.log(
      `  (4) change → screen (${lat.length} acquires drawn on screen, ${writer.errors} write errors): p50 ${pct(lat, 50).toFixed(0)} ms, p99 ${pct(lat, 99).toFixed(0)} ms, max ${Math.max(0, ...lat).toFixed(0)} ms`,
    );
    console.log(
      `  (5) browser heap after GC: ${(await heapAfterGc(cdp)).toFixed(1)} MiB; page errors ${errors.length}; load average ${loadAverage()}`,
    );
    for (const e of errors.slice(0, 3)) console.log(`      page error: ${e}`);
  } finally {
    await browser.close();
    await consoleUt.close();
    await backend.close();
    if (!args.keep && args.reuse === '') await dropNamespace(ns);
    else console.log(`  kept namespace ${name} (--reuse ${name})`);
  }
}

async function main(): Promise<void> {
  if (!args['no-build']) {
    process.env.NODE_ENV = 'production';
    await build({ configFile: new URL('../vite.config.ts', import.meta.url).pathname, logLevel: 'warn' });
  }
  for (const b of args.backends.split(',')) {
    if (b !== 'postgres' && b !== 'redis') throw new Error(`unknown backend ${b}`);
    await runOne(b);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
