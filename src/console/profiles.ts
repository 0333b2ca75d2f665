/**
 * Connection profiles: the backends an operator has saved, in one JSON file in
 * the user's config directory (mode 0600, directory 0700).
 *
 * Passwords are never written in plain text. A URL's secret parts (the
 * password in `scheme://user:password@host`, a `password=` query parameter)
 * are stored only encrypted by a pluggable {@link SecretCodec} — Electron plugs
 * its `safeStorage`. Without a codec, saving a URL with a password is refused;
 * the web mode and the CLI then take such URLs from arguments or the
 * environment instead, where nothing is persisted.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import * as z from 'zod';
import { redactUrl } from '../backends/url.ts';
import { InternalError, InvalidArgumentError } from '../lease/errors.ts';
import { ThresholdsSchema } from './api.ts';

/** Per-connection threshold overrides; unset fields take the defaults. */
export interface ThresholdOverrides {
  expiringFraction?: number | undefined;
  stuckAfterMs?: number | undefined;
}

/** Encrypts secrets at rest. `available: false` means encryption cannot be used on this machine. */
export interface SecretCodec {
  readonly available: boolean;
  encrypt(plain: string): string;
  decrypt(cipher: string): string;
}

export interface Profile {
  id: string;
  name: string;
  /** The full URL, password included (decrypted in memory only). */
  url: string;
  readOnly: boolean;
  environment: string;
  thresholds?: ThresholdOverrides | undefined;
}

const StoredProfileSchema = z.object({
  id: z.string().min(1).max(100),
  name: z.string().min(1).max(100),
  /** The URL with secrets removed. */
  url: z.string().min(1),
  /** The full URL encrypted by the codec, when the URL had a secret. */
  secret: z.string().optional(),
  readOnly: z.boolean().default(false),
  environment: z.string().max(40).default(''),
  thresholds: ThresholdsSchema.partial().optional(),
});
type StoredProfile = z.infer<typeof StoredProfileSchema>;

const FileSchema = z.object({
  version: z.literal(1),
  profiles: z.array(StoredProfileSchema),
});

/**
 * The config directory: `$WORKLEASE_CONFIG_DIR` if set (tests), else the
 * platform's per-user config dir + `/worklease`
 * (`$XDG_CONFIG_HOME` or `~/.config` on Linux, `~/Library/Application Support`
 * on macOS, `%APPDATA%` on Windows).
 */
export function configDir(env: NodeJS.ProcessEnv = process.env, platform = process.platform): string {
  if (env.WORKLEASE_CONFIG_DIR) return env.WORKLEASE_CONFIG_DIR;
  if (platform === 'win32') return join(env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'), 'worklease');
  if (platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'worklease');
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'worklease');
}

export function defaultProfilesPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'profiles.json');
}

/** True when the URL carries a secret (a password in the authority, a secret query parameter). */
export function urlHasSecret(url: string): boolean {
  return redactUrl(url) !== url;
}

/** The URL with every secret replaced by `***` (src/lease/redact.ts). */
export function stripSecrets(url: string): string {
  return redactUrl(url);
}

export class ProfileStore {
  constructor(
    readonly path: string = defaultProfilesPath(),
    private readonly codec: SecretCodec | null = null,
  ) {}

  /** Whether a URL with a password can be saved. */
  get canStoreSecrets(): boolean {
    return this.codec?.available === true;
  }

  /** All profiles; a missing file is an empty list. Profiles whose secret cannot be decrypted keep the redacted URL. */
  load(): Profile[] {
    return this.readFile().map((p) => this.fromStored(p));
  }

  /** Adds or replaces (by id) a profile. Refuses a URL with a password when there is no codec. */
  save(profile: Omit<Profile, 'id'> & { id?: string }): Profile {
    const id = profile.id ?? `p_${randomBytes(6).toString('hex')}`;
    const full: Profile = { ...profile, id };
    const stored = this.toStored(full);
    const all = this.readFile().filter((p) => p.id !== id);
    all.push(stored);
    this.writeFile(all);
    return full;
  }

  remove(id: string): boolean {
    const all = this.readFile();
    const kept = all.filter((p) => p.id !== id);
    if (kept.length === all.length) return false;
    this.writeFile(kept);
    return true;
  }

  private toStored(p: Profile): StoredProfile {
    const stored: StoredProfile = {
      id: p.id,
      name: p.name,
      url: p.url,
      readOnly: p.readOnly,
      environment: p.environment,
    };
    if (p.thresholds !== undefined) stored.thresholds = p.thresholds;
    if (urlHasSecret(p.url)) {
      if (this.codec === null || !this.codec.available) {
        throw new InvalidArgumentError(
          'this URL contains a password and no secure credential store is available to save it encrypted; ' +
            'give the URL on the command line or in the WORKLEASE_URL environment variable instead of saving it',
        );
      }
      stored.url = stripSecrets(p.url);
      stored.secret = this.codec.encrypt(p.url);
    }
    return stored;
  }

  private fromStored(p: StoredProfile): Profile {
    let url = p.url;
    if (p.secret !== undefined && this.codec?.available) {
      try {
        url = this.codec.decrypt(p.secret);
      } catch {
        // Keep the redacted URL: connecting fails with an auth error the operator can act on.
      }
    }
    const out: Profile = { id: p.id, name: p.name, url, readOnly: p.readOnly, environment: p.environment };
    if (p.thresholds !== undefined) out.thresholds = p.thresholds;
    return out;
  }

  private readFile(): StoredProfile[] {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new InternalError(`cannot read connection profiles from ${this.path}`, { cause: err });
    }
    const parsed = FileSchema.safeParse(safeJson(text));
    if (!parsed.success) {
      throw new InternalError(
        `connection profiles file ${this.path} is not valid: ${parsed.error.issues[0]?.message ?? 'bad format'}`,
      );
    }
    return parsed.data.profiles;
  }

  private writeFile(profiles: StoredProfile[]): void {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    // Written whole to a private temp file and renamed, so a crash never leaves
    // a half-written file and the secret is never world-readable, even briefly.
    writeFileSync(tmp, `${JSON.stringify({ version: 1, profiles }, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmp, this.path);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
