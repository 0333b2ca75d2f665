/**
 * `npm run bench:ui` — the renderer under a big, busy fleet, in Chromium.
 *
 * The real web server (HTTP + WebSocket, the same code `worklease serve`
 * runs) serves the built renderer; behind it a synthetic console service
 * holds 100 000 leases and pushes `leases` events carrying 2 000 changes/s
 * (renewals and checkpoints), so what is measured is the renderer and its
 * transport, not a backend's write throughput on a 2-core machine. While the
 * changes flow the bench scrolls the table continuously and, once, sorts and
 * filters it. It reports:
 *
 * - time until the 100 000-row snapshot is shown;
 * - long tasks (> 50 ms, PerformanceObserver 'longtask'): count, total, max,
 *   per sampling window;
 * - frames painted per second (requestAnimationFrame count);
 * - JS heap used (CDP Performance.getMetrics) over time;
 * - how far the table lags the feed (newest seq shown vs sent).
 *
 * Usage: npm run bench:ui -- [--leases 100000] [--rate 2000] [--seconds 60] [--long]  (--long = 5 minutes)
 *        [--profile] [--trace [--trace-for S]] [--at S] [--no-build] [--no-minify]  (--no-minify: readable names in --profile)
 */
import type { Browser, CDPSession, Page } from 'playwright-core';
import { build } from 'vite';
import { benchArgs, intArg } from '../bench/args.ts';
import {
  type ConnectionInfo,
  type ConsoleEvent,
  DEFAULT_THRESHOLDS,
  type LeaseRow,
  type MethodName,
  type ParsedParams,
  type Result,
} from '../src/console/api.ts';
import { NotFoundError } from '../src/lease/errors.ts';
import { startWebServer } from '../src/server/index.ts';
import { launchChromium, STATIC_DIR } from './harness.ts';

const args = benchArgs(import.meta.filename, {
  leases: { type: 'string', default: '100000' },
  rate: { type: 'string', default: '2000' },
  seconds: { type: 'string', default: '60' },
  long: { type: 'boolean', default: false },
  'no-build': { type: 'boolean', default: false },
  profile: { type: 'boolean', default: false },
  trace: { type: 'boolean', default: false },
  at: { type: 'string', default: '0' },
  'trace-for': { type: 'string', default: '5' },
  'no-minify': { type: 'boolean', default: false },
});
const LEASES = intArg(import.meta.filename, 'leases', args.leases);
const RATE = intArg(import.meta.filename, 'rate', args.rate);
const SECONDS = args.long ? 300 : intArg(import.meta.filename, 'seconds', args.seconds);
const TICK_MS = 50;
const SAMPLE_MS = SECONDS >= 120 ? 30_000 : 10_000;
const CONN_ID = 'bench';

// ---------------------------------------------------------------------------
// A synthetic console service: the fleet lives in memory and changes on a timer.

const rows = new Map<string, LeaseRow>();
const ids: string[] = [];
const started = Date.now();
for (let i = 0; i < LEASES; i++) {
  const workId = `jobs/${String(i).padStart(6, '0')}`;
  ids.push(workId);
  const at = started - ((i * 7919) % 50_000);
  rows.set(workId, {
    workId,
    holderId: `worker-${String(i % 500).padStart(3, '0')}`,
    fencingToken: String(1 + (i % 7)),
    expiresAt: at + 60_000,
    ttlMs: 60_000,
    stepId: null,
    acquiredAt: at,
    renewedAt: at,
    checkpointedAt: i % 10 === 0 ? null : at,
    releasedAt: null,
    checkpointSize: i % 10 === 0 ? null : 100 + (i % 5000),
    cleanHandoff: true,
    predecessorEnd: 'none',
    ended: null,
    version: '1',
  });
}
let seq = 0;
let snapshots = 0;
let held: { seq: number; serverTime: number; rows: LeaseRow[] } | null = null;
let sentChanges = 0;
const listeners = new Set<(e: ConsoleEvent) => void>();
const connection: ConnectionInfo = {
  id: CONN_ID,
  name: 'bench',
  url: 'synthetic://bench',
  kind: 'postgres',
  readOnly: false,
  environment: 'bench',
  thresholds: DEFAULT_THRESHOLDS,
  state: 'live',
  syncedAt: started,
  clockOffsetMs: 0,
  error: null,
};

const service = {
  connections: () => [{ ...connection, syncedAt: Date.now() }],
  canView: () => true,
  subscribe(listener: (e: ConsoleEvent) => void) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  async handle<M extends MethodName>(method: M, params: ParsedParams<M>): Promise<Result<M>> {
    const p = params as Record<string, unknown>;
    const result = ((): unknown => {
      switch (method) {
        case 'console.info':
          return { version: 'bench', readOnly: false, operator: 'bench', profilesEditable: false };
        case 'connections.list':
          return service.connections();
        case 'fleet.snapshot': {
          if (p.limit === undefined) {
            snapshots++;
            return { connectionId: CONN_ID, rows: [...rows.values()], seq, serverTime: Date.now() };
          }
          // Paged, as the console service does it: pages of one held snapshot in work-id order (ids are made in order).
          if (held === null || p.seq !== held.seq) {
            snapshots++;
            held = { seq, serverTime: Date.now(), rows: [...rows.values()] };
          }
          const from = Number(p.offset ?? 0);
          return {
            connectionId: CONN_ID,
            rows: held.rows.slice(from, from + Number(p.limit)),
            seq: held.seq,
            serverTime: held.serverTime,
            total: held.rows.length,
          };
        }
        case 'fleet.counts':
          return { counts: { total: rows.size, byStatus: {}, byHolder: [] }, rates: [], since: null };
        case 'audit.list':
          return [];
        case 'lease.get':
          return rows.get(String(p.workId)) ?? null;
        case 'checkpoint.read':
          return null;
        default:
          throw new NotFoundError(`the bench does not implement ${method}`);
      }
    })();
    return result as Result<M>;
  },
};

function tick(): void {
  const now = Date.now();
  const n = Math.round((RATE * TICK_MS) / 1000);
  const upserts: LeaseRow[] = [];
  for (let k = 0; k < n; k++) {
    const id = ids[Math.floor(Math.random() * ids.length)] as string;
    const old = rows.get(id) as LeaseRow;
    const checkpoint = Math.random() < 0.3;
    const next: LeaseRow = {
      ...old,
      expiresAt: now + old.ttlMs,
      renewedAt: now,
      checkpointedAt: checkpoint ? now : old.checkpointedAt,
      checkpointSize: checkpoint ? 100 + Math.floor(Math.random() * 5000) : old.checkpointSize,
      version: String(Number(old.version) + 1),
    };
    rows.set(id, next);
    upserts.push(next);
  }
  seq++;
  sentChanges += n;
  const event: ConsoleEvent = {
    type: 'leases',
    connectionId: CONN_ID,
    seq,
    upserts,
    removed: [],
    serverTime: now,
  };
  for (const l of listeners) l(event);
  // The console service announces each connection every second; the renderer greys a silent one.
  if (seq % Math.round(1000 / TICK_MS) === 0) {
    const announce: ConsoleEvent = { type: 'connection', connection: { ...connection, syncedAt: now } };
    for (const l of listeners) l(announce);
  }
}

// ---------------------------------------------------------------------------

const mb = (bytes: number) => (bytes / (1024 * 1024)).toFixed(1);

async function heap(cdp: CDPSession): Promise<number> {
  const { metrics } = (await cdp.send('Performance.getMetrics')) as {
    metrics: { name: string; value: number }[];
  };
  return metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? Number.NaN;
}

interface PageStats {
  longtasks: number[];
  frames: number;
}

/** `--profile`: 5 s of CPU profile with the feed running; prints the top functions by self time. */
async function profile(cdp: CDPSession): Promise<void> {
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.start');
  await new Promise((r) => setTimeout(r, 5000));
  const { profile: prof } = (await cdp.send('Profiler.stop')) as {
    profile: {
      nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
      samples: number[];
      timeDeltas: number[];
    };
  };
  const self = new Map<number, number>();
  prof.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
  });
  const byName = new Map<string, number>();
  for (const n of prof.nodes) {
    const key = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber}`;
    byName.set(key, (byName.get(key) ?? 0) + (self.get(n.id) ?? 0));
  }
  console.log('profile (self ms over 5 s):');
  for (const [k, v] of [...byName.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20)) {
    console.log(`  ${(v / 1000).toFixed(0).padStart(6)}  ${k}`);
  }
}

interface TraceEvent {
  name: string;
  ph: string;
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  args?: { name?: string; elementCount?: number; data?: { functionName?: string; url?: string } };
}

/**
 * `--trace`: 5 s of a Chromium timeline trace with the feed running; prints the
 * renderer main thread's self time by event (style recalc, layout, paint,
 * script…) overall and inside tasks over 50 ms — a CPU profile folds all of
 * the rendering work into "(program)".
 */
async function trace(browser: Browser, page: Page): Promise<void> {
  const secs = intArg(import.meta.filename, 'trace-for', args['trace-for']);
  await startTrace(browser, page);
  await new Promise((r) => setTimeout(r, secs * 1000));
  await reportTrace(browser, `over ${secs} s`);
}

function startTrace(browser: Browser, page: Page): Promise<void> {
  return browser.startTracing(page, {
    categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink', 'v8.execute'],
  });
}

async function reportTrace(browser: Browser, span: string): Promise<void> {
  const buf = await browser.stopTracing();
  const { traceEvents } = JSON.parse(buf.toString('utf8')) as { traceEvents: TraceEvent[] };
  const mains = new Set(
    traceEvents
      .filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain')
      .map((e) => `${e.pid}:${e.tid}`),
  );
  const evs = traceEvents
    .filter((e) => e.ph === 'X' && e.dur !== undefined && mains.has(`${e.pid}:${e.tid}`))
    .sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
  const all = new Map<string, number>();
  const inLong = new Map<string, number>();
  const stack: { e: TraceEvent; end: number; child: number }[] = [];
  let longEnd = -1;
  let longCount = 0;
  let topLevel = 0;
  const perLong: Map<string, number>[] = [];
  const close = (upTo: number) => {
    while (stack.length > 0 && (stack[stack.length - 1] as { end: number }).end <= upTo) {
      const top = stack.pop() as { e: TraceEvent; end: number; child: number };
      const self = (top.e.dur ?? 0) - top.child;
      const fn = top.e.args?.data?.functionName;
      const key = top.e.name === 'FunctionCall' && fn ? `FunctionCall ${fn}` : top.e.name;
      all.set(key, (all.get(key) ?? 0) + self);
      if (top.e.ts < longEnd) {
        inLong.set(key, (inLong.get(key) ?? 0) + self);
        const mine = perLong[perLong.length - 1];
        if (mine !== undefined) mine.set(key, (mine.get(key) ?? 0) + self);
      }
    }
  };
  for (const e of evs) {
    close(e.ts);
    const parent = stack[stack.length - 1];
    if (parent !== undefined) parent.child += e.dur ?? 0;
    if (stack.length === 0) topLevel += e.dur ?? 0;
    if (stack.length === 0 && (e.dur ?? 0) > 50_000) {
      longEnd = e.ts + (e.dur ?? 0);
      longCount++;
      perLong.push(new Map([['(total)', e.dur ?? 0]]));
    }
    stack.push({ e, end: e.ts + (e.dur ?? 0), child: 0 });
  }
  close(Number.POSITIVE_INFINITY);
  const top = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 14)
      .map(([k, v]) => `    ${(v / 1000).toFixed(0).padStart(6)}  ${k}`)
      .join('\n');
  const styles = evs.filter((e) => e.name === 'UpdateLayoutTree');
  const elements = styles.map((e) => e.args?.elementCount ?? 0).sort((a, b) => a - b);
  const styleMs = styles.map((e) => (e.dur ?? 0) / 1000).sort((a, b) => a - b);
  const pct = (xs: number[], q: number) => xs[Math.floor((xs.length - 1) * q)]?.toFixed(0) ?? '-';
  console.log(
    `trace: ${styles.length} style recalcs; elements p50 ${pct(elements, 0.5)} p90 ${pct(elements, 0.9)} max ${pct(elements, 1)}; ms p50 ${pct(styleMs, 0.5)} p90 ${pct(styleMs, 0.9)} max ${pct(styleMs, 1)}`,
  );
  console.log(`trace (main thread self ms ${span}):\n${top(all)}`);
  const sumBy = (pred: (k: string) => boolean) =>
    ([...all.entries()].filter(([k]) => pred(k)).reduce((a, [, v]) => a + v, 0) / 1000).toFixed(0);
  const busy = topLevel / 1000;
  // Whole pauses, not self time: how many full collections, and the longest (a long task on its own if > 50 ms).
  const majors = evs
    // MajorGC and V8.GC_MARK_COMPACTOR are two events for the same pause.
    .filter((e) => e.name === 'MajorGC')
    .map((e) => (e.dur ?? 0) / 1000);
  console.log(
    `  main thread busy ${busy.toFixed(0)} ms; major GC ${sumBy((k) => k.startsWith('V8.GC_MC') || k.startsWith('V8.GC_MARK_COMPACTOR'))} ms (${majors.length} pauses, max ${Math.max(0, ...majors).toFixed(0)} ms); minor GC ${sumBy((k) => k.startsWith('V8.GC_SCAVENGER') || k === 'MinorGC')} ms; layout ${sumBy((k) => k === 'LocalFrameView::performLayout')} ms`,
  );
  console.log(`  inside ${longCount} tasks over 50 ms:\n${top(inLong)}`);
  for (const m of perLong.slice(0, 10)) {
    const parts = [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([k, v]) => `${k} ${(v / 1000).toFixed(0)}`);
    console.log(`    task: ${parts.join(', ')}`);
  }
}

async function main(): Promise<void> {
  if (!args['no-build'])
    await build({
      configFile: new URL('../vite.config.ts', import.meta.url).pathname,
      logLevel: 'warn',
      ...(args['no-minify'] ? { build: { minify: false } } : {}),
    });
  const server = await startWebServer({
    service: service as unknown as Parameters<typeof startWebServer>[0]['service'],
    port: 0,
    staticDir: STATIC_DIR,
    maxBufferedBytes: 256 * 1024 * 1024,
  });
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  // A string, not a function: the TypeScript loader's helpers must not leak into the page.
  await page.addInitScript(`
    window.__bench = { longtasks: [], frames: 0 };
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__bench.longtasks.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
    const frame = () => { window.__bench.frames++; requestAnimationFrame(frame); };
    requestAnimationFrame(frame);
  `);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');

  console.log(`worklease renderer bench: ${LEASES.toLocaleString()} leases, ${RATE} changes/s, ${SECONDS} s`);
  const t0 = Date.now();
  // --trace --at 0 also traces the load: page start, snapshot pages, first render.
  const traceLoad = args.trace && intArg(import.meta.filename, 'at', args.at, 0) === 0;
  if (traceLoad) await startTrace(browser, page);
  // First rows: the first work id on screen (a renderer that shows pages as they arrive shows it
  // before the rest). Whole snapshot: the header counts every lease ("100,000 leases…").
  const wholeText = new RegExp(`^${LEASES.toLocaleString('en-US')} leases`);
  const load = async (start: number): Promise<{ first: number; whole: number }> => {
    await page.getByRole('row', { name: /jobs\/000000/ }).waitFor({ timeout: 120_000 });
    const first = Date.now() - start;
    await page.getByText(wholeText).first().waitFor({ timeout: 120_000 });
    return { first, whole: Date.now() - start };
  };
  await page.goto(server.url, { waitUntil: 'commit' });
  const cold = await load(t0);
  const loadMs = Date.now() - t0;
  console.log(
    `cold load: first rows after ${cold.first} ms, whole snapshot shown after ${cold.whole} ms (page load + snapshot fetch + parse + render)`,
  );
  if (traceLoad) await reportTrace(browser, 'during load');
  const initial = (await page.evaluate('window.__bench')) as PageStats;
  console.log(
    `  during load: ${initial.longtasks.length} long tasks, max ${Math.max(0, ...initial.longtasks).toFixed(0)} ms, heap ${mb(await heap(cdp))} MiB`,
  );
  // Warm: the same page loaded again (static files cached, the server's snapshot held).
  const warmStart = Date.now();
  await page.reload({ waitUntil: 'commit' });
  const warm = await load(warmStart);
  console.log(`warm load: first rows after ${warm.first} ms, whole snapshot shown after ${warm.whole} ms`);
  await page.evaluate('window.__bench.longtasks = []; window.__bench.frames = 0');

  const feed = setInterval(tick, TICK_MS);
  const grid = page.getByRole('grid', { name: 'Leases' });
  await grid.focus();
  let scrolling = true;
  // Continuous scrolling: a wheel step every 100 ms, down through the table then back up.
  const scroller = (async () => {
    let dir = 1;
    let steps = 0;
    await page.mouse.move(500, 500);
    while (scrolling) {
      await page.mouse.wheel(0, dir * 1200);
      if (++steps % 150 === 0) dir = -dir;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  // --at N: profile/trace N seconds into the run instead of at once (does something build up?).
  if (args.profile || args.trace)
    await new Promise((r) => setTimeout(r, intArg(import.meta.filename, 'at', args.at, 0) * 1000));
  if (args.profile) await profile(cdp);
  if (args.trace) await trace(browser, page);
  console.log('\n  t (s)  long tasks  total ms  max ms   fps   heap MiB');
  let last = Date.now();
  const end = Date.now() + SECONDS * 1000;
  let sortedOnce = false;
  const allLong: number[] = [];
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, Math.min(SAMPLE_MS, end - Date.now())));
    if (!sortedOnce && Date.now() - (end - SECONDS * 1000) > SAMPLE_MS / 2) {
      sortedOnce = true;
      const s0 = Date.now();
      await page.getByRole('button', { name: 'Expires' }).click();
      await page
        .getByRole('button', { name: /^stuck|^live/ })
        .first()
        .click();
      await page.getByRole('searchbox', { name: 'Search leases' }).fill('worker-01');
      await page.getByRole('searchbox', { name: 'Search leases' }).fill('');
      await page.getByRole('button', { name: 'Clear filters' }).click();
      await page.getByRole('button', { name: 'Work ID' }).click();
      await grid.focus();
      console.log(
        `  (sorted by expiry, filtered by status and text, and back: ${Date.now() - s0} ms of UI round trips)`,
      );
    }
    const stats = (await page.evaluate(
      '(() => { const s = window.__bench; const out = { longtasks: s.longtasks, frames: s.frames }; s.longtasks = []; s.frames = 0; return out; })()',
    )) as PageStats;
    const now = Date.now();
    const secs = (now - last) / 1000;
    last = now;
    allLong.push(...stats.longtasks);
    const total = stats.longtasks.reduce((a, b) => a + b, 0);
    console.log(
      `  ${String(Math.round((now - t0 - loadMs) / 1000)).padStart(5)}  ${String(stats.longtasks.length).padStart(10)}  ${total.toFixed(0).padStart(8)}  ${Math.max(
        0,
        ...stats.longtasks,
      )
        .toFixed(0)
        .padStart(6)}  ${(stats.frames / secs).toFixed(0).padStart(4)}  ${mb(await heap(cdp)).padStart(9)}`,
    );
  }
  scrolling = false;
  await scroller;
  clearInterval(feed);

  // Is the table current? The newest change must be on screen within a moment.
  const probe = ids[0] as string;
  await page.getByRole('searchbox', { name: 'Search leases' }).fill(probe);
  const wantVersion = (rows.get(probe) as LeaseRow).version;
  await page.getByRole('row', { name: new RegExp(probe.replace('/', '\\/')) }).click();
  const versionCell = page
    .getByRole('complementary', { name: 'Lease details' })
    .locator('dt:text-is("Version") + dd');
  let shown = false;
  for (let i = 0; i < 30 && !shown; i++) {
    shown = (await versionCell.textContent()) === wantVersion;
    if (!shown) await new Promise((r) => setTimeout(r, 100));
  }

  const sum = allLong.reduce((a, b) => a + b, 0);
  console.log(
    `\nsummary: ${sentChanges.toLocaleString()} changes in ${seq} events over ${SECONDS} s; ` +
      `${allLong.length} long tasks (${(sum / SECONDS).toFixed(0)} ms/s blocked, max ${Math.max(0, ...allLong).toFixed(0)} ms); ` +
      `final heap ${mb(await heap(cdp))} MiB; detail pane current after the run: ${shown ? 'yes' : 'NO'}; snapshots served: ${snapshots}; page errors: ${pageErrors.length}`,
  );
  for (const e of pageErrors.slice(0, 5)) console.log(`  page error: ${e}`);
  await browser.close();
  await server.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
