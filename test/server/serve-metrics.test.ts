/**
 * `worklease serve --metrics` and `--metrics-bind` through the real binary: /metrics behind the
 * sign-in on the console's port, and without it on a loopback listener of its own; the bulk
 * force-release refused by a read-only console at the transport. The CLI is a child process.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { type Running, start } from '../cli/support.ts';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';

const ns = uniqueNamespace('srvmetrics');
const url = `${PG_URL}?schema=${ns}`;
const token = randomBytes(32).toString('hex');
let backend: LeaseBackend;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  backend = await openBackend(PG_URL, { schema: ns, migrate: true });
  await backend.acquire('sm-1', 'h-1', 60_000);
});
afterAll(async () => {
  await backend?.close();
  await dropNamespace({ kind: 'postgres', url: PG_URL }, ns);
});

describe('serve --metrics --metrics-bind --read-only', () => {
  let proc: Running;
  let port: number;
  let metricsPort: number;

  beforeAll(async () => {
    metricsPort = await freePort();
    proc = start(
      [
        'serve',
        '--connect',
        url,
        '--port',
        String(await freePort()),
        '--metrics',
        '--metrics-bind',
        String(metricsPort),
        '--read-only',
      ],
      { WORKLEASE_TOKEN: token },
    );
    const [, p] = await proc.waitFor(/open: http:\/\/127\.0\.0\.1:(\d+)\//);
    port = Number(p);
    await proc.waitFor(new RegExp(`metrics: http://127\\.0\\.0\\.1:${metricsPort}/metrics \\(no sign-in\\)`));
  });
  afterAll(async () => {
    await proc?.stop();
  });

  it('serves /metrics with the token on the console port, and without on the loopback listener', async () => {
    const scrape = async (u: string, headers: Record<string, string> = {}) => {
      for (let i = 0; ; i++) {
        const res = await fetch(u, { headers });
        const text = await res.text();
        // The connection goes live a moment after the server starts.
        if (res.status !== 200 || text.includes('status="live"} 1') || i > 100) return { res, text };
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const signed = await scrape(`http://127.0.0.1:${port}/metrics`, { authorization: `Bearer ${token}` });
    expect(signed.res.status).toBe(200);
    expect(signed.text).toMatch(
      /^worklease_console_leases\{connection="[^"]+",connection_id="c_[0-9a-f]{12}",status="live"\} 1$/m,
    );
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
    const open = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(open.res.status).toBe(200);
    expect(open.text).toContain('# TYPE worklease_console_backend_calls_total counter');
    expect(proc.stdout()).not.toContain(token);
  });

  it('refuses lease.forceReleaseMany at the transport of a read-only console', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/api/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        method: 'lease.forceReleaseMany',
        params: {
          connectionId: 'x',
          items: [{ workId: 'sm-1', expectedToken: '1' }],
          reason: 'r',
          confirmCount: 1,
        },
      }),
    });
    expect(res.status).toBe(403);
    expect((await backend.admin.get('sm-1'))?.ended).toBeNull();
  });
});
