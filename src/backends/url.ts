/**
 * Parsing of backend URLs, shared by `openBackend`, the CLI and the console.
 * Nothing here does I/O.
 */
import { InvalidArgumentError } from '../lease/errors.ts';
import type { BackendKind } from '../lease/types.ts';

export interface ParsedBackendUrl {
  kind: BackendKind;
  /** The URL with any password replaced by `***`, safe to print and log. */
  redacted: string;
}

const SCHEMES: Record<string, BackendKind> = {
  'postgres:': 'postgres',
  'postgresql:': 'postgres',
  'redis:': 'redis',
  'rediss:': 'redis',
  'redis+cluster:': 'redis-cluster',
  'pglite:': 'pglite',
};

export function parseBackendUrl(url: unknown): ParsedBackendUrl {
  if (typeof url !== 'string' || url.length === 0) {
    throw new InvalidArgumentError('backend URL must be a non-empty string');
  }
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0]?.toLowerCase();
  const kind = scheme === undefined ? undefined : SCHEMES[scheme];
  if (kind === undefined) {
    throw new InvalidArgumentError(
      `unsupported backend URL scheme in '${redactUrl(url)}': use postgres://, postgresql://, redis://, rediss://, redis+cluster://host:port[,host:port…], pglite://memory or pglite:///absolute/dir`,
    );
  }
  return { kind, redacted: redactUrl(url) };
}

/** Replaces the password part of `scheme://user:password@host` with `***`. Works on multi-host URLs too. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@/]*@/i, '$1***@');
}
