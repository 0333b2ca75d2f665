/**
 * A {@link SecretCodec} backed by Electron's `safeStorage` (OS keychain on
 * macOS, DPAPI on Windows, libsecret/kwallet on Linux). Written against a
 * structural stand-in so it is tested without Electron.
 *
 * On Linux without a keyring, `safeStorage` falls back to the `basic_text`
 * backend, which "encrypts" with a hard-coded key: that is plain text in all
 * but name, so the codec reports itself unavailable and the profile store
 * then refuses to save passwords instead of pretending to protect them.
 */
import type { SecretCodec } from '../console/profiles.ts';
import { ForbiddenError } from '../lease/errors.ts';

/** The parts of Electron's `safeStorage` the codec uses. */
export interface SafeStorageLike {
  isEncryptionAvailable(): boolean;
  encryptString(plain: string): Uint8Array;
  decryptString(cipher: Buffer): string;
  /** Linux only in Electron; absent elsewhere. */
  getSelectedStorageBackend?: () => string;
}

export function isSafeStorageUsable(safeStorage: SafeStorageLike, platform = process.platform): boolean {
  if (!safeStorage.isEncryptionAvailable()) return false;
  if (platform === 'linux' && typeof safeStorage.getSelectedStorageBackend === 'function') {
    const backend = safeStorage.getSelectedStorageBackend();
    if (backend === 'basic_text' || backend === 'unknown') return false;
  }
  return true;
}

/** Call after `app.whenReady()`: before that, `safeStorage` reports no encryption on every platform. */
export function createSafeStorageCodec(
  safeStorage: SafeStorageLike,
  platform = process.platform,
): SecretCodec {
  const available = isSafeStorageUsable(safeStorage, platform);
  const refuse = (): never => {
    throw new ForbiddenError(
      'The OS keychain is not available, so connection passwords cannot be stored encrypted; pass the URL on the command line or in the environment instead',
    );
  };
  return {
    available,
    encrypt(plain) {
      if (!available) return refuse();
      return Buffer.from(safeStorage.encryptString(plain)).toString('base64');
    },
    decrypt(cipher) {
      if (!available) return refuse();
      return safeStorage.decryptString(Buffer.from(cipher, 'base64'));
    },
  };
}
