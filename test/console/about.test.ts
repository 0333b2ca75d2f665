/**
 * `console.about`: each connection's backend kind and the version its server reports, read from
 * the real servers; refused cleanly when the backend is down, and for connections the caller
 * cannot see; bad params refused before any call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/console/access.ts';
import { type ConsoleService, createConsoleService, dispatch, methods } from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { PG_URL, REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { until } from './helpers.ts';

const schema = uniqueNamespace('about');
const prefix = uniqueNamespace('about');
let pg: LeaseBackend;
let redis: LeaseBackend;
let service: ConsoleService;
const ids: Record<string, string> = {};
const viewer: Caller = {
  user: 'vera',
  via: 'token',
  roles: { pg: 'viewer', redis: 'viewer', down: 'viewer' },
};

beforeAll(async () => {
  pg = await openBackend(PG_URL, { schema });
  redis = await openBackend(REDIS_URL, { keyPrefix: prefix });
  service = createConsoleService({
    shared: {},
    connections: [
      { name: 'pg', url: `${PG_URL}?schema=${schema}` },
      { name: 'redis', url: `${REDIS_URL}?keyPrefix=${prefix}` },
      { name: 'down', url: 'redis://127.0.0.1:1' },
      { name: 'hidden', url: `${PG_URL}?schema=${schema}` },
    ],
  });
  for (const c of service.connections()) ids[c.name] = c.id;
  await service.waitLive(ids.pg!);
  await service.waitLive(ids.redis!);
});
afterAll(async () => {
  await service?.close();
  await pg?.close();
  await redis?.close();
  await dropNamespace({ kind: 'postgres', url: PG_URL }, schema);
  await dropNamespace({ kind: 'redis', url: REDIS_URL }, prefix);
});

describe('console.about', () => {
  it("reports PostgreSQL's server_version and Redis' redis_version", async () => {
    const a = await service.handle('console.about', { connectionId: ids.pg! }, viewer);
    methods['console.about'].result.parse(a);
    expect(a.kind).toBe('postgres');
    expect(a.serverVersion).toBe(await pg.admin.serverVersion());
    expect(a.serverVersion).toMatch(/^\d+(\.\d+)?/);
    const r = await service.handle('console.about', { connectionId: ids.redis! }, viewer);
    expect(r.kind).toBe('redis');
    expect(r.serverVersion).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('is refused with BACKEND_UNAVAILABLE while the backend is down, NOT_FOUND when hidden, INVALID_ARGUMENT on bad params', async () => {
    await until(
      'down is reconnecting',
      () => service.connections().find((c) => c.name === 'down')?.state === 'reconnecting',
    );
    const down = await dispatch(service, 'console.about', { connectionId: ids.down! }, viewer);
    expect(down.ok ? 'ok' : down.error.code).toBe('BACKEND_UNAVAILABLE');
    const hidden = await dispatch(service, 'console.about', { connectionId: ids.hidden! }, viewer);
    expect(hidden.ok ? 'ok' : hidden.error.code).toBe('NOT_FOUND');
    for (const params of [{}, { connectionId: '' }, { connectionId: ids.pg!, extra: 1 }]) {
      const out = await dispatch(service, 'console.about', params, viewer);
      expect(out.ok ? 'ok' : out.error.code).toBe('INVALID_ARGUMENT');
    }
  });
});
