/**
 * Who is calling the console service, and what they may do.
 *
 * The desktop app has one local user (the OS user) who may do everything the
 * connection allows. A served console (`worklease serve`) is shared: the web
 * server authenticates each request (a per-user token, a trusted proxy's
 * identity header, or the one shared token) and passes the {@link Caller} to
 * the service, which checks the caller's role on the connection for every
 * call — the transport never decides alone.
 *
 * Roles are per connection, by connection name (names are what a config file
 * and an operator use; ids are generated), with `*` for every other one:
 *   viewer   — read: fleet, lease, checkpoint, audit;
 *   operator — viewer + force-release;
 *   admin    — operator + connections.add/update/remove/test (when the
 *              server allows connection edits at all).
 * No role on a connection: the caller does not see it.
 */
import { resolve, sep } from 'node:path';
import type { Permission, Role } from './api.ts';

export type { Permission, Role } from './api.ts';

export interface Caller {
  /** The authenticated identity: shown on the page and written to the audit log. */
  user: string;
  /** How the identity was established. */
  via: 'desktop' | 'token' | 'shared-token' | 'proxy';
  /** Role per connection name; `*` covers every connection not named. */
  roles: Readonly<Record<string, Role>>;
}

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

/** The caller's role on the connection named `name`, or null (no access). */
export function roleOn(caller: Caller, name: string): Role | null {
  return (Object.hasOwn(caller.roles, name) ? caller.roles[name] : caller.roles['*']) ?? null;
}

export function atLeast(role: Role | null, needed: Role): boolean {
  return role !== null && RANK[role] >= RANK[needed];
}

export const ALLOWED: Permission = { allowed: true };
export function denied(reason: string): Permission {
  return { allowed: false, reason };
}

/**
 * Restrictions for a console served to several people (`serve`); the desktop
 * app has none of them.
 */
export interface SharedConsoleOptions {
  /**
   * Allow connections.add/update/remove/test through the API (admins only).
   * Default false: connections come from the command line or the config file.
   * Refused together with a read-only console.
   */
  allowConnectionEdits?: boolean;
  /**
   * The only directory under which `pglite:///dir` connections may be added
   * through the API. Default none: such connections are refused.
   */
  pgliteDataDir?: string;
  /** Most `pglite://memory` connections at once (each holds a whole database in memory). Default 2. */
  maxMemoryConnections?: number;
}

/**
 * Checks a URL given through the API of a shared console: a PGlite directory
 * must lie inside `dataDir` (its own subdirectory, not the directory itself),
 * `pglite://memory` may exist at most `max` times (`memoryInUse` counts the
 * current ones). Returns the refusal reason, or null when allowed. Pure; no I/O.
 */
export function pgliteRefusal(
  url: string,
  dataDir: string | undefined,
  memoryInUse: number,
  max: number,
): string | null {
  if (!/^pglite:/i.test(url)) return null;
  const rest = url.slice('pglite:'.length);
  if (rest === '//memory' || rest === '//memory/') {
    return memoryInUse >= max
      ? `at most ${max} pglite://memory connections can be open on this console`
      : null;
  }
  if (dataDir === undefined) {
    return 'pglite:///dir connections cannot be added on this console (the server has no --pglite-dir)';
  }
  let path: string;
  try {
    path = decodeURIComponent(rest.replace(/^\/\//, ''));
  } catch {
    return 'the pglite path is not valid percent-encoding';
  }
  // `..` is refused outright rather than resolved: no legitimate path needs it.
  if (!path.startsWith('/') || path.split('/').includes('..') || path.includes('\0')) {
    return 'a pglite path must be absolute, without ".." segments';
  }
  const root = resolve(dataDir);
  const target = resolve(path);
  if (!target.startsWith(root + sep)) return `pglite paths must lie inside ${root}`;
  return null;
}
