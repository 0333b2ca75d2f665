/**
 * The CLI end to end on real Redis (the same commands as on PostgreSQL; the
 * namespace is a key prefix).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { run } from './support.ts';

// Each spawn pays ~1 s of tsx start-up, several when the machine is busy: be generous.
vi.setConfig({ testTimeout: 90_000 });
const target = { kind: 'redis' as const, url: REDIS_URL };
const ns = uniqueNamespace('cli');
let backend: LeaseBackend;
const tokens: Record<string, bigint> = {};

beforeAll(async () => {
  const migrated = await run(['migrate', REDIS_URL, '--key-prefix', ns]);
  expect(migrated).toMatchObject({ code: 0, stderr: '' });
  backend = await openBackend(REDIS_URL, { keyPrefix: ns, migrate: false });
  const r = await backend.acquire('blob/1', 'w-1', 60_000);
  tokens['blob/1'] = r.fencingToken;
  await backend.checkpoint(r, new Uint8Array([0, 1, 2, 0xfe, 0xff]), 60_000);
  tokens['job/2'] = (await backend.acquire('job/2', 'w-2', 60_000)).fencingToken;
});

afterAll(async () => {
  await backend?.close();
  await dropNamespace(target, ns);
});

describe('worklease on Redis', () => {
  it('lists leases as JSON, with the key prefix from the URL', async () => {
    const r = await run(['ls', `${REDIS_URL}?keyPrefix=${ns}`, '--json', '--status', 'live']);
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<{
      workId: string;
      fencingToken: string;
      checkpointSize: number | null;
    }>;
    expect(rows.map((x) => [x.workId, x.fencingToken, x.checkpointSize])).toEqual([
      ['blob/1', String(tokens['blob/1']), 5],
      ['job/2', String(tokens['job/2']), null],
    ]);
  });

  it('shows a binary checkpoint as hex', async () => {
    const r = await run(['show', REDIS_URL, 'blob/1', '--key-prefix', ns]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('00000000  00 01 02 fe ff');
    expect(r.stdout).toContain('|.....|');
  });

  it('refuses a stale token (exit 4), then force-releases with the right one (exit 0)', async () => {
    const base = ['release', REDIS_URL, 'job/2', '--force', '--reason', 'test', '--key-prefix', ns];
    const stale = await run([...base, '--expected-token', String(tokens['job/2']! - 1n)]);
    expect(stale.code).toBe(4);
    expect(stale.stderr).toMatch(/^worklease: CONFLICT: .*\n$/);
    const ok = await run([...base, '--expected-token', String(tokens['job/2']), '--json']);
    expect(ok.code).toBe(0);
    const released = JSON.parse(ok.stdout) as { workId: string; status: string; fencingToken: string };
    expect(released).toMatchObject({ workId: 'job/2', status: 'force-released' });
    expect(BigInt(released.fencingToken) > tokens['job/2']!).toBe(true);
  });

  it('exits 5 quickly when Redis is unreachable', async () => {
    const r = await run(['ls', 'redis://:hunter2@127.0.0.1:1', '--timeout', '2000']);
    expect(r.code).toBe(5);
    expect(r.ms).toBeLessThan(15_000);
    expect(r.stderr).toMatch(/^worklease: BACKEND_UNAVAILABLE: [^\n]*\n$/);
    expect(r.stderr).not.toContain('hunter2');
  });
});
