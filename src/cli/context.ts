/**
 * What every command shares: the global options, opening a backend from a URL
 * argument or WORKLEASE_URL, argument parsers and stdout writing.
 */

import { userInfo } from 'node:os';
import { InvalidArgumentError as CommanderArgumentError } from 'commander';
import { resolveBackendUrl } from '../backends/url.ts';
import { consoleBase } from '../console/links.ts';
import { openBackend } from '../index.ts';
import { InvalidArgumentError } from '../lease/errors.ts';
import type { LeaseBackend, OpenOptions } from '../lease/types.ts';
import { terminalText } from './format.ts';

/** Options accepted by every command (before or after the command name). */
export interface GlobalOptions {
  /** Postgres/PGlite schema (default `worklease`). */
  schema?: string;
  /** Redis key prefix (default `worklease`). */
  keyPrefix?: string;
  /** Per-call timeout in ms, forwarded as `callTimeoutMs`. */
  timeout?: number;
  debug?: boolean;
}

/**
 * The console to link leases to, from `--console-url`, else WORKLEASE_CONSOLE_URL; null when
 * neither is set. Checked before any I/O.
 */
export function resolveConsoleUrl(arg: string | undefined): URL | null {
  const text = arg ?? process.env.WORKLEASE_CONSOLE_URL;
  return text === undefined || text === '' ? null : consoleBase(text);
}

/** The backend URL from the argument, else WORKLEASE_URL; checked (scheme) before any I/O. */
export function resolveUrl(arg: string | undefined): string {
  const url = arg ?? process.env.WORKLEASE_URL;
  if (url === undefined || url === '') {
    throw new InvalidArgumentError(
      'no backend URL: pass one (for example postgres://user@host:5432/db or redis://host:6379) or set WORKLEASE_URL',
    );
  }
  resolveBackendUrl(url);
  return url;
}

export function openOptions(globals: GlobalOptions, migrate: boolean): OpenOptions {
  const options: OpenOptions = { migrate };
  if (globals.schema !== undefined) options.schema = globals.schema;
  if (globals.keyPrefix !== undefined) options.keyPrefix = globals.keyPrefix;
  if (globals.timeout !== undefined) options.callTimeoutMs = globals.timeout;
  return options;
}

/**
 * Opens a backend for the CLI. The URL is read by `openBackend` with the one
 * URL grammar of the library and the console (`?schema=`, `?keyPrefix=`, …);
 * `--schema` / `--key-prefix` / `--timeout` are the same options, so giving one
 * both ways with different values is refused.
 */
export async function openCli(url: string, globals: GlobalOptions, migrate: boolean): Promise<LeaseBackend> {
  return openBackend(url, openOptions(globals, migrate));
}

/**
 * Opens the backend without migrating (only `migrate` and `demo` create
 * schemas: an inspection tool must not change a production database by
 * accident), runs `fn`, and always closes it.
 */
export async function withBackend<T>(
  url: string,
  globals: GlobalOptions,
  fn: (backend: LeaseBackend) => Promise<T>,
  migrate = false,
): Promise<T> {
  const backend = await openCli(url, globals, migrate);
  try {
    return await fn(backend);
  } finally {
    await backend.close().catch(() => {});
  }
}

/** Writes to stdout and waits until the bytes are handed to the OS (so exit cannot cut them). */
export function out(text: string): Promise<void> {
  return new Promise((resolve) => {
    const safe = terminalText(text);
    process.stdout.write(safe.endsWith('\n') ? safe : `${safe}\n`, () => resolve());
  });
}

export function warn(text: string): void {
  process.stderr.write(`worklease: ${terminalText(text)}\n`);
}

/** The OS user, for the audit log's operator when none is given. */
export function osUser(): string {
  try {
    const name = userInfo().username;
    if (name) return name;
  } catch {
    // No passwd entry (some containers): fall back to the environment.
  }
  return process.env.USER ?? process.env.LOGNAME ?? 'unknown';
}

// Parsers for commander: throwing its InvalidArgumentError makes it name the option in the message.

export function parseNonNegativeInt(value: string): number {
  if (!/^[0-9]{1,15}$/.test(value)) throw new CommanderArgumentError('expected a whole number ≥ 0.');
  return Number(value);
}

export function parsePositiveInt(value: string): number {
  const n = parseNonNegativeInt(value);
  if (n === 0) throw new CommanderArgumentError('expected a whole number ≥ 1.');
  return n;
}

/** A TCP port to listen on: 0 (any free one) to 65535. */
export function parsePort(value: string): number {
  const n = /^[0-9]{1,5}$/.test(value) ? Number(value) : -1;
  if (n < 0 || n > 65535)
    throw new CommanderArgumentError('expected a port from 0 to 65535 (0 picks a free one).');
  return n;
}

export function parseFraction(value: string): number {
  const n = Number(value);
  if (!/^[0-9.]+$/.test(value) || !(n > 0 && n < 1)) {
    throw new CommanderArgumentError('expected a number between 0 and 1 (exclusive).');
  }
  return n;
}

export function parseToken(value: string): bigint {
  if (!/^[1-9][0-9]{0,18}$/.test(value) || BigInt(value) > 9_223_372_036_854_775_807n) {
    throw new CommanderArgumentError('expected a fencing token: a whole number from 1 to 2^63-1.');
  }
  return BigInt(value);
}

export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
