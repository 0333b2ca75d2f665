/**
 * The service's side of identity: the desktop's local user may do everything
 * (the OS user, read-only can be turned off), a shared service runs nothing
 * without an authenticated caller and checks the caller's role per call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/console/access.ts';
import { type ConsoleService, createConsoleService } from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { sharedOpener } from './helpers.ts';

let backend: LeaseBackend;
let desktop: ConsoleService;
let shared: ConsoleService;

beforeAll(async () => {
  backend = await openBackend('pglite://memory');
  const common = {
    openBackend: sharedOpener(backend),
    connections: [
      { name: 'main', url: 'pglite://memory' },
      { name: 'locked', url: 'pglite://memory', readOnly: true },
    ],
  };
  desktop = createConsoleService({ ...common, operator: 'os-user' });
  shared = createConsoleService({ ...common, shared: { allowConnectionEdits: true } });
});
afterAll(async () => {
  await desktop?.close();
  await shared?.close();
  await backend?.close();
});

const ids = (s: ConsoleService) => Object.fromEntries(s.connections().map((c) => [c.name, c.id]));

describe('the desktop (no caller: the one local user)', () => {
  it('is the OS user with every role, and may turn read-only off', async () => {
    const session = await desktop.call('console.session', {});
    expect(session).toMatchObject({ user: 'os-user', via: 'desktop', addConnection: { allowed: true } });
    expect(session.connections.every((c) => c.role === 'admin' && c.makeWritable.allowed)).toBe(true);
    const updated = await desktop.call('connections.update', {
      id: ids(desktop).locked!,
      changes: { readOnly: false },
    });
    expect(updated.readOnly).toBe(false);
  });
});

describe('a shared service', () => {
  const viewer: Caller = { user: 'vera', via: 'token', roles: { main: 'viewer' } };
  const admin: Caller = { user: 'adam', via: 'token', roles: { '*': 'admin' } };

  it('refuses every call without an authenticated caller', async () => {
    await expect(shared.call('connections.list', {})).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(shared.handle('console.session', {})).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it('shows a caller only the connections they have a role on; others are NOT_FOUND', async () => {
    const list = await shared.handle('connections.list', {}, viewer);
    expect(list.map((c) => c.name)).toEqual(['main']);
    expect(shared.canView(viewer, ids(shared).locked!)).toBe(false);
    expect(shared.canView(undefined, ids(shared).main!)).toBe(false);
    await expect(
      shared.handle('fleet.counts', { connectionId: ids(shared).locked! }, viewer),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('request-release needs the operator role: a viewer is FORBIDDEN, an operator is recorded as itself', async () => {
    const operator: Caller = { user: 'olivia', via: 'token', roles: { main: 'operator' } };
    const rec = await backend.acquire('acc-rr', 'worker-1', 60_000);
    const params = {
      connectionId: ids(shared).main!,
      workId: 'acc-rr',
      expectedToken: rec.fencingToken.toString(),
      reason: 'drain',
    };
    await expect(shared.handle('lease.requestRelease', params, viewer)).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    const session = await shared.handle('console.session', {}, viewer);
    expect(session.connections[0]?.requestRelease).toMatchObject({ allowed: false });
    expect((await backend.admin.get('acc-rr'))?.releaseRequest).toBeNull();
    await expect(
      shared.handle('lease.requestRelease', { ...params, operator: 'someone-else' }, operator),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await shared.waitLive(ids(shared).main!);
    const row = await shared.handle('lease.requestRelease', params, operator);
    expect(row.releaseRequest).toMatchObject({ operator: 'olivia', reason: 'drain' });
  });

  it('never turns read-only off, even for an admin, and refuses a url test', async () => {
    await expect(
      shared.handle('connections.update', { id: ids(shared).locked!, changes: { readOnly: false } }, admin),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(
      shared.handle('connections.test', { url: 'redis://127.0.0.1:1' }, admin),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const session = await shared.handle('console.session', {}, admin);
    const locked = session.connections.find((c) => c.connectionId === ids(shared).locked);
    expect(locked?.makeWritable).toMatchObject({
      allowed: false,
      reason: expect.stringMatching(/server configuration/),
    });
  });

  it('refuses to start read-only with connection edits allowed', () => {
    expect(() => createConsoleService({ readOnly: true, shared: { allowConnectionEdits: true } })).toThrow(
      /read-only console cannot allow connection edits/,
    );
  });
});
