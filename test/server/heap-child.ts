/**
 * Run by heap.test.ts under `node --expose-gc`: a web server whose sessions, limits and security
 * log live as long as the process, driven through rounds of sign-ins and sign-outs, wrong tokens
 * from ever new addresses, and event streams opened and closed. Prints the heap and the active
 * handles after the warm-up rounds and after the rest, each after a full GC, as one JSON line.
 * `--leak` keeps what each sign-in answered, the leak of about 1 KiB a sign-in that the test's
 * bound must catch (its positive control).
 *
 * Usage: node --expose-gc --import tsx test/server/heap-child.ts ROUNDS PER_ROUND [--leak]
 */
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { WebSocket } from 'ws';
import { startWebServer, type WebServerOptions } from '../../src/server/index.ts';
import { LIVE_CONNECTION } from '../support/connection-info.ts';

const rounds = Number(process.argv[2] ?? 25);
const perRound = Number(process.argv[3] ?? 100);
const leak = process.argv.includes('--leak');
const kept: unknown[] = [];
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

const conn = LIVE_CONNECTION;
const service: WebServerOptions['service'] = {
  handle: async () => ({ user: 'x' }) as never,
  subscribe: () => () => {},
  connections: () => [conn],
  canView: () => true,
};
const token = randomBytes(32).toString('hex');
let logged = 0;
const server = await startWebServer({
  service,
  port: 0,
  staticDir: '/nonexistent',
  auth: {
    sharedToken: null,
    sharedRoles: {},
    users: [
      { name: 'u', tokenSha256: createHash('sha256').update(token).digest('hex'), roles: { '*': 'viewer' } },
    ],
  },
  // Sign-ins are not what is measured here: a 1 ms window never refuses one, and keeps 1 000 times at most.
  limits: { maxSignIns: 1_000, signInWindowMs: 1, maxKeys: 500 },
  securityLog: () => {
    logged++;
  },
});
const origin = `http://127.0.0.1:${server.port}`;

function http(
  method: string,
  path: string,
  headers: Record<string, string>,
  from: string,
): Promise<{
  status: number;
  cookie: string;
  body: string;
}> {
  return new Promise((resolve, reject) => {
    // No keep-alive: every request its own connection, closed after, so open sockets are the server's own.
    const req = request(
      { host: '127.0.0.1', port: server.port, method, path, headers, localAddress: from, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            cookie: String(res.headers['set-cookie'] ?? '').split(';')[0]!,
            body,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

let address = 0;
/** A new loopback address each time: 127.1.x.y (127.0.0.0/8 is all this machine's). */
const nextAddress = (): string => {
  address++;
  return `127.1.${(address >> 8) & 255}.${address & 255}`;
};

async function round(): Promise<void> {
  for (let i = 0; i < perRound; i++) {
    const from = nextAddress();
    const signIn = await http('POST', '/api/session', { origin, authorization: `Bearer ${token}` }, from);
    if (signIn.status !== 200) throw new Error(`sign-in ${signIn.status}`);
    const secret = (JSON.parse(signIn.body) as { result: { secret: string } }).result.secret;
    if (leak) kept.push(JSON.parse(signIn.body), { ...signIn, from, at: new Date() });
    const headers = { origin, cookie: signIn.cookie, 'x-worklease-session': secret };
    if (i % 4 === 0) {
      const ws = new WebSocket(
        `ws://127.0.0.1:${server.port}/api/events`,
        ['worklease', `worklease.session.${secret}`],
        {
          headers: { origin, cookie: signIn.cookie },
          localAddress: from,
        },
      );
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      const closed = new Promise((r) => ws.once('close', r));
      ws.close();
      await closed;
    }
    const out = await http('DELETE', '/api/session', headers, from);
    if (out.status !== 200) throw new Error(`sign-out ${out.status}`);
    const wrong = await http('POST', '/api/session', { origin, authorization: 'Bearer nope' }, nextAddress());
    if (wrong.status !== 401) throw new Error(`wrong token ${wrong.status}`);
  }
}

const measure = async () => {
  await new Promise((r) => setTimeout(r, 200));
  for (let i = 0; i < 3; i++) gc();
  const kinds: Record<string, number> = {};
  for (const k of process.getActiveResourcesInfo()) kinds[k] = (kinds[k] ?? 0) + 1;
  return { heap: process.memoryUsage().heapUsed, handles: process.getActiveResourcesInfo().length, kinds };
};

// The first rounds fill every bounded table (500 keys: PER_ROUND new addresses a round); ten let
// V8 settle (with 200 a round, its own code and caches grew by about 540 KiB over the first 20
// rounds here, and by 220 KiB over the next 130). What comes after must not grow.
const WARM_UP = 10;
for (let i = 0; i < WARM_UP; i++) await round();
const before = await measure();
for (let i = WARM_UP; i < rounds; i++) await round();
const after = await measure();
await server.close();
process.stdout.write(
  `${JSON.stringify({ before, after, rounds: rounds - WARM_UP, logged, kept: kept.length })}\n`,
);
