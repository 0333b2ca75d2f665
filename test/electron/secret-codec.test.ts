import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ProfileStore } from '../../src/console/profiles.ts';
import { createSafeStorageCodec, type SafeStorageLike } from '../../src/electron-common/secret-codec.ts';

/** Stands in for Electron's safeStorage: a reversible transform that is visibly not the plain text. */
function fakeSafeStorage(available: boolean, backend?: string): SafeStorageLike {
  const storage: SafeStorageLike = {
    isEncryptionAvailable: () => available,
    encryptString: (plain) => Buffer.from(`enc:${Buffer.from(plain).reverse().toString('latin1')}`, 'latin1'),
    decryptString: (cipher) => Buffer.from(cipher.toString('latin1').slice(4), 'latin1').reverse().toString(),
  };
  if (backend !== undefined) storage.getSelectedStorageBackend = () => backend;
  return storage;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('safeStorage secret codec', () => {
  it('round-trips secrets through safeStorage as base64', () => {
    const codec = createSafeStorageCodec(fakeSafeStorage(true), 'darwin');
    expect(codec.available).toBe(true);
    const cipher = codec.encrypt('postgres://u:hunter2@db/app');
    expect(cipher).not.toContain('hunter2');
    expect(codec.decrypt(cipher)).toBe('postgres://u:hunter2@db/app');
  });

  it('is unavailable (and refuses) when safeStorage cannot encrypt', () => {
    const codec = createSafeStorageCodec(fakeSafeStorage(false), 'win32');
    expect(codec.available).toBe(false);
    expect(() => codec.encrypt('x')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
  });

  it("treats Linux's basic_text fallback as no encryption at all", () => {
    expect(createSafeStorageCodec(fakeSafeStorage(true, 'basic_text'), 'linux').available).toBe(false);
    expect(createSafeStorageCodec(fakeSafeStorage(true, 'gnome_libsecret'), 'linux').available).toBe(true);
  });

  it('lets the profile store keep passwords only encrypted, and refuses them without encryption', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'wl-codec-'));
    dirs.push(dir);
    const file = path.join(dir, 'profiles.json');
    const store = new ProfileStore(file, createSafeStorageCodec(fakeSafeStorage(true), 'darwin'));
    store.save({ name: 'prod', url: 'postgres://ops:hunter2@db/app', readOnly: true, environment: 'prod' });
    expect(readFileSync(file, 'utf8')).not.toContain('hunter2');
    expect(store.load()[0]?.url).toBe('postgres://ops:hunter2@db/app');

    const locked = new ProfileStore(file, createSafeStorageCodec(fakeSafeStorage(false), 'linux'));
    expect(locked.canStoreSecrets).toBe(false);
    expect(() =>
      locked.save({ name: 'stage', url: 'postgres://ops:pw@db/stage', readOnly: false, environment: '' }),
    ).toThrow();
  });
});
