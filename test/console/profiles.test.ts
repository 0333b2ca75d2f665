import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  configDir,
  createConsoleService,
  defaultProfilesPath,
  ProfileStore,
  type SecretCodec,
} from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { sharedOpener } from './helpers.ts';

/** Stands in for Electron's safeStorage: reversible, and visibly not plain text. */
const codec: SecretCodec = {
  available: true,
  encrypt: (plain) => `enc:${Buffer.from(plain).toString('base64').split('').reverse().join('')}`,
  decrypt: (cipher) => Buffer.from(cipher.slice(4).split('').reverse().join(''), 'base64').toString(),
};

describe('connection profiles', () => {
  let dir: string;
  let backend: LeaseBackend;

  beforeAll(async () => {
    backend = await openBackend('pglite://memory');
  });
  afterAll(async () => {
    await backend?.close();
  });
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('lives in the config dir, overridable by WORKLEASE_CONFIG_DIR', () => {
    expect(configDir({ WORKLEASE_CONFIG_DIR: '/x/y' })).toBe('/x/y');
    expect(configDir({ XDG_CONFIG_HOME: '/cfg' }, 'linux')).toBe('/cfg/worklease');
    expect(defaultProfilesPath({ WORKLEASE_CONFIG_DIR: '/x/y' })).toBe('/x/y/profiles.json');
  });

  it('writes the file with mode 0600 and round-trips profiles', () => {
    dir = mkdtempSync(join(tmpdir(), 'wl-prof-'));
    const store = new ProfileStore(join(dir, 'sub', 'profiles.json'));
    const saved = store.save({
      name: 'staging',
      url: 'postgres://ops@db:5432/app?schema=jobs',
      readOnly: true,
      environment: 'staging',
      thresholds: { stuckAfterMs: 5000 },
    });
    expect(statSync(store.path).mode & 0o777).toBe(0o600);
    expect(store.load()).toEqual([saved]);
    expect(store.remove(saved.id)).toBe(true);
    expect(store.load()).toEqual([]);
  });

  it('refuses to save a password without a codec, and stores it only encrypted with one', () => {
    dir = mkdtempSync(join(tmpdir(), 'wl-prof-'));
    const path = join(dir, 'profiles.json');
    const plain = new ProfileStore(path);
    const withPassword = {
      name: 'prod',
      url: 'postgres://ops:hunter2secret@db/app',
      readOnly: false,
      environment: 'prod',
    };
    expect(() => plain.save(withPassword)).toThrow(/password.*WORKLEASE_URL|command line/);
    expect(() =>
      plain.save({ ...withPassword, url: 'postgres://ops@db/app?password=hunter2secret' }),
    ).toThrow();
    const secure = new ProfileStore(path, codec);
    const saved = secure.save(withPassword);
    const text = readFileSync(path, 'utf8');
    expect(text).not.toContain('hunter2secret');
    expect(text).toContain('postgres://ops:***@db/app');
    expect(secure.load()[0]?.url).toBe(withPassword.url);
    // Without the codec the profile still loads, password-less.
    expect(plain.load()[0]?.url).toBe('postgres://ops:***@db/app');
    expect(saved.id).toMatch(/^p_/);
  });

  it('the service persists connections added through the API and reloads them', async () => {
    dir = mkdtempSync(join(tmpdir(), 'wl-prof-'));
    const store = new ProfileStore(join(dir, 'profiles.json'));
    const first = createConsoleService({ profiles: store, openBackend: sharedOpener(backend) });
    try {
      const added = await first.call('connections.add', { name: 'embedded', url: 'pglite://memory' });
      await first.call('connections.update', { id: added.id, changes: { environment: 'demo' } });
      await expect(
        first.call('connections.add', { name: 'prod', url: 'postgres://ops:pw@db/app' }),
      ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      await first.close();
    }
    const second = createConsoleService({ profiles: store, openBackend: sharedOpener(backend) });
    try {
      const list = second.connections();
      expect(list.map((c) => [c.name, c.environment])).toEqual([['embedded', 'demo']]);
      await second.waitLive(list[0]!.id);
      await second.call('connections.remove', { id: list[0]!.id });
      expect(store.load()).toEqual([]);
    } finally {
      await second.close();
    }
  });

  it('a console with profiles not editable refuses changes with FORBIDDEN', async () => {
    const service = createConsoleService({ profilesEditable: false, openBackend: sharedOpener(backend) });
    try {
      await expect(
        service.call('connections.add', { name: 'x', url: 'pglite://memory' }),
      ).rejects.toMatchObject({
        code: 'FORBIDDEN',
      });
    } finally {
      await service.close();
    }
  });
});
