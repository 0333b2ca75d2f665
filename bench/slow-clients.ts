/**
 * `npm run bench:slow-clients` — memory of a real `worklease serve` process
 * while 100 WebSocket clients stall (they complete the upgrade, then never
 * read) and the fleet changes ~1 000 times a second.
 *
 * Each stalled client's queue grows until it passes the server's send-buffer
 * cap (4 MiB); the server then closes it with code 4000 (resync) and destroys
 * the socket 2 s later. Events are serialized once and the same Buffer is
 * queued for every client, so the backlog the stalled clients hold is shared.
 * Target: RSS at most 64 MiB above the baseline while the clients stall, and
 * back near the baseline after they are dropped.
 *
 * Prints the serve process's RSS (from /proc) before the clients connect,
 * every few seconds while they stall, and after; the write rate achieved; the
 * load average. About a minute in all.
 *
 * Usage: npm run bench:slow-clients -- [--clients 100] [--rate 1000] [--stall-seconds 40] [--pg <url>]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { type LeaseRecord, openBackend } from '../src/index.ts';
import { benchArgs, intArg } from './args.ts';

const args = benchArgs(import.meta.filename, {
  clients: { type: 'string', default: '100' },
  rate: { type: 'string', default: '1000' },
  'stall-seconds': { type: 'string', default: '40' },
  pg: {
    type: 'string',
    default: process.env.WORKLEASE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  },
});
const CLIENTS = intArg(import.meta.filename, 'clients', args.clients);
const RATE = intArg(import.meta.filename, 'rate', args.rate);
const STALL_S = intArg(import.meta.filename, 'stall-seconds', args['stall-seconds']);
const PG_URL = args.pg;
const BIN = fileURLToPath(new URL('../bin/worklease', import.meta.url));

const mib = (kib: number): string => `${(kib / 1024).toFixed(1)} MiB`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0);
}

/** Open sockets of the process (its fds that are sockets). */
function socketCount(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Completes the WebSocket upgrade by hand, then stops reading for good. */
function stalledClient(port: number, token: string): Socket {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(
    [
      'GET /api/events HTTP/1.1',
      `Host: 127.0.0.1:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      'Sec-WebSocket-Version: 13',
      `Authorization: Bearer ${token}`,
      '',
      '',
    ].join('\r\n'),
  );
  socket.pause();
  return socket;
}

async function main(): Promise<void> {
  const schema = `bench_slow_${randomBytes(4).toString('hex')}`;
  const backend = await openBackend(PG_URL, { schema, migrate: true });
  const items = 500;
  const records: LeaseRecord[] = [];
  // Long holder ids make each pushed row ~700 bytes, so a stalled client passes the kernel's socket
  // buffers (~4 MiB send side here) and the 4 MiB cap in ~15 s, well before the 40 s ping timeout
  // would drop it: the drops the bench shows are the cap's.
  const holder = `bench-${'h'.repeat(300)}`;
  for (let i = 0; i < items; i++) records.push(await backend.acquire(`slow/${i}`, holder, 600_000));

  const token = randomBytes(32).toString('hex');
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      BIN,
      'serve',
      '--connect',
      `${PG_URL}?schema=${schema}`,
      '--port',
      String(port),
      '--max-clients',
      String(CLIENTS + 10),
      // Every client is the one token's holder, from 127.0.0.1: lift the per-person and per-address caps too.
      '--max-clients-per-user',
      String(CLIENTS + 10),
      '--max-clients-per-address',
      String(CLIENTS + 10),
    ],
    { env: { ...process.env, WORKLEASE_TOKEN: token }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  const sockets: Socket[] = [];
  let writes = 0;
  let writing = true;
  try {
    while (!stdout.includes('open:')) {
      if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}`);
      await sleep(100);
    }
    const pid = child.pid!;

    // Writer: renewals at RATE/s in 10 ms slices, each one change in the feed.
    const writer = (async () => {
      let i = 0;
      const perSlice = Math.max(1, Math.round(RATE / 100));
      let next = Date.now();
      while (writing) {
        const batch: Promise<void>[] = [];
        for (let k = 0; k < perSlice; k++) {
          const at = i++ % items;
          batch.push(
            backend.renew(records[at]!, 600_000).then((r) => {
              records[at] = r;
              writes++;
            }),
          );
        }
        await Promise.all(batch);
        next += 10;
        const wait = next - Date.now();
        if (wait > 0) await sleep(wait);
      }
    })();

    await sleep(5_000); // the console is live and the feed is flowing
    const writesAtStart = writes;
    const baseline = rssKiB(pid);
    const baseSockets = socketCount(pid);
    console.log(
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    console.log(`baseline (feed running, no client): RSS ${mib(baseline)}`);

    for (let c = 0; c < CLIENTS; c++) sockets.push(stalledClient(port, token));
    let peak = baseline;
    const t0 = Date.now();
    while (Date.now() - t0 < STALL_S * 1000) {
      await sleep(5_000);
      const rss = rssKiB(pid);
      peak = Math.max(peak, rss);
      // A paused client cannot see its socket close; the server's own fd count can.
      const open = Math.max(0, socketCount(pid) - baseSockets);
      console.log(
        `  +${Math.round((Date.now() - t0) / 1000)} s: RSS ${mib(rss)} (+${mib(rss - baseline)}), ` +
          `${CLIENTS - open}/${CLIENTS} stalled clients dropped by the server`,
      );
    }
    const rate = (writes - writesAtStart) / ((Date.now() - t0) / 1000 + 5);
    for (const s of sockets) s.destroy();
    await sleep(5_000);
    const after = rssKiB(pid);
    writing = false;
    await writer;
    console.log(`after the clients are gone: RSS ${mib(after)} (+${mib(after - baseline)})`);
    console.log(
      `writes ${rate.toFixed(0)}/s; peak ${mib(peak)} = +${mib(peak - baseline)} over baseline ` +
        `(target ≤ +64.0 MiB): ${peak - baseline <= 64 * 1024 ? 'ok' : 'OVER'}`,
    );
    console.log(
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    writing = false;
    for (const s of sockets) s.destroy();
    child.kill('SIGINT');
    await new Promise((r) => child.once('exit', r));
    await backend.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}

await main();
