/**
 * The CLI end to end on real Redis (the same commands as on PostgreSQL; the
 * namespace is a key prefix).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LAYOUT_VERSION } from '../../src/backends/redis/layout.ts';
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
  expect(migrated.stdout.trim().split('\n')).toEqual([
    `created key prefix ${ns} with data layout ${LAYOUT_VERSION}`,
    `schema up to date on ${REDIS_URL}?keyPrefix=${ns} (key prefix ${ns})`,
  ]);
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

  it('a refused connection: exit 12 naming ECONNREFUSED (not only "Connection is closed"), quickly', async () => {
    const r = await run(['ls', 'redis://:hunter2@127.0.0.1:1', '--timeout', '2000']);
    expect(r.code).toBe(12);
    expect(r.ms).toBeLessThan(15_000);
    expect(r.stderr).toMatch(
      /^worklease: BACKEND_UNAVAILABLE: open on redis:\/\/:\*\*\*@127\.0\.0\.1:1\?keyPrefix=worklease failed: connect ECONNREFUSED 127\.0\.0\.1:1 \(Connection is closed\) — nothing listens there[^\n]*\n$/,
    );
    expect(r.stderr).not.toContain('hunter2');
  });

  it('a DNS failure: exit 11 naming ENOTFOUND; --debug shows the socket error', async () => {
    const r = await run(['ls', 'redis://nohost.invalid:6379', '--timeout', '5000', '--debug']);
    expect(r.code).toBe(11);
    const [first, ...rest] = r.stderr.trim().split('\n');
    expect(first).toMatch(
      /^worklease: BACKEND_UNAVAILABLE: open on redis:\/\/nohost\.invalid:6379\?keyPrefix=worklease failed: getaddrinfo ENOTFOUND nohost\.invalid .*— check the host name/,
    );
    expect(rest.join('\n')).toMatch(/getaddrinfo ENOTFOUND nohost\.invalid/);
  });

  it('ls --limit prints "N of M"; audit and a prune dry run work on Redis too', async () => {
    const [ls, audit, prune] = await Promise.all([
      run(['ls', `${REDIS_URL}?keyPrefix=${ns}`, '--limit', '1']),
      run(['audit', REDIS_URL, '--key-prefix', ns, '--work-id', 'job/2', '--json']),
      run(['prune', REDIS_URL, '--key-prefix', ns, '--older-than', '0s']),
    ]);
    expect(ls.code).toBe(0);
    expect(ls.stdout.trim().split('\n').at(-1)).toMatch(/^1 of 2 leases \(first 1 by work id\)/);
    expect(audit.code).toBe(0);
    const entries = JSON.parse(audit.stdout) as Array<{ oldToken: string; newToken: string }>;
    expect(entries).toEqual([expect.objectContaining({ workId: 'job/2', reason: 'test' })]);
    expect(BigInt(entries[0]!.newToken) > BigInt(entries[0]!.oldToken)).toBe(true);
    expect(prune.code).toBe(0);
    // job/2 was force-released above; blob/1 is live.
    expect(prune.stdout).toMatch(/^job\/2\s+force-released/m);
    expect(prune.stdout).toMatch(/dry run: 1 work item ended .* would be pruned/);
    expect(await backend.admin.get('job/2')).not.toBeNull();
  });

  it('a data layout newer than this worklease: exit 6 and "upgrade worklease", never "run worklease migrate"', async () => {
    const newer = uniqueNamespace('clinew');
    const created = await run(['migrate', REDIS_URL, '--key-prefix', newer]);
    expect(created.code).toBe(0);
    const redis = new Redis(REDIS_URL);
    try {
      await redis.hset(`${newer}:meta`, 'layout', String(LAYOUT_VERSION + 1));
      for (const args of [['ls'], ['migrate', '--check'], ['migrate']]) {
        const r = await run([...args, REDIS_URL, '--key-prefix', newer]);
        expect(r.code, args.join(' ')).toBe(6);
        const lines = r.stderr.trim().split('\n');
        expect(lines, args.join(' ')).toHaveLength(1);
        expect(lines[0], args.join(' ')).toMatch(
          new RegExp(
            `holds data layout ${LAYOUT_VERSION + 1} .*; a newer worklease wrote it: upgrade worklease`,
          ),
        );
        expect(lines[0], args.join(' ')).not.toContain('migration needed');
        expect(lines[0], args.join(' ')).not.toContain('run `worklease migrate');
      }
      expect(await redis.hget(`${newer}:meta`, 'layout')).toBe(String(LAYOUT_VERSION + 1));
    } finally {
      redis.disconnect();
      await dropNamespace({ kind: 'redis', url: REDIS_URL }, newer);
    }
  });
});
