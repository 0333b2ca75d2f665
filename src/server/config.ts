/**
 * The config file of `worklease serve --config FILE` (JSON): the connections
 * it serves, the people who may sign in (per-user token hashes, roles per
 * connection) and the trusted reverse proxy. Connections come only from here
 * and the command line unless the server allows edits through the API; a
 * connection's `readOnly` can be turned off only here.
 *
 * ```json
 * {
 *   "connections": [{ "name": "prod", "url": "postgres://ops@db/app", "readOnly": true, "environment": "prod" }],
 *   "users": [{ "name": "alice", "tokenSha256": "<sha256 hex of her token>", "roles": { "*": "viewer", "prod": "operator" } }],
 *   "proxy": { "trusted": ["127.0.0.1"], "headers": ["x-forwarded-email"], "defaultRoles": { "*": "viewer" } }
 * }
 * ```
 */
import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { RoleSchema, ThresholdsSchema } from '../console/api.ts';
import { InvalidArgumentError } from '../lease/errors.ts';
import type { ProxyOptions, UserEntry } from './auth.ts';

const Roles = z.record(z.string().min(1).max(100), RoleSchema);

const ConfigSchema = z.strictObject({
  connections: z
    .array(
      z.strictObject({
        name: z.string().trim().min(1).max(100),
        url: z.string().min(1).max(4096),
        readOnly: z.boolean().default(false),
        environment: z.string().trim().max(40).default(''),
        thresholds: ThresholdsSchema.partial().optional(),
      }),
    )
    .default([]),
  users: z
    .array(
      z.strictObject({
        name: z.string().min(1).max(200),
        tokenSha256: z
          .string()
          .regex(/^[0-9a-fA-F]{64}$/, 'tokenSha256 must be the SHA-256 of the token, 64 hex digits')
          .optional(),
        roles: Roles,
      }),
    )
    .default([]),
  proxy: z
    .strictObject({
      trusted: z.array(z.string().min(1)).min(1),
      headers: z
        .array(z.string().regex(/^[A-Za-z0-9-]+$/))
        .min(1)
        .optional(),
      defaultRoles: Roles.optional(),
    })
    .optional(),
});

export interface ServeConfig {
  connections: Array<{
    name: string;
    url: string;
    readOnly: boolean;
    environment: string;
    thresholds?: { expiringFraction?: number | undefined; stuckAfterMs?: number | undefined } | undefined;
  }>;
  users: UserEntry[];
  proxy: ProxyOptions | null;
}

/** Reads and validates the file; every problem is one INVALID_ARGUMENT naming the file and the field. */
export function loadServeConfig(path: string): ServeConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InvalidArgumentError(`cannot read the config file ${path}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new InvalidArgumentError(`the config file ${path} is not valid JSON`);
  }
  return parseServeConfig(json, path);
}

export function parseServeConfig(json: unknown, path = 'config'): ServeConfig {
  const parsed = ConfigSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? '' : ` at ${issue.path.join('.')}`;
    throw new InvalidArgumentError(`the config file ${path} is not valid${where}: ${issue?.message ?? ''}`);
  }
  const names = new Set<string>();
  for (const c of parsed.data.connections) {
    if (names.has(c.name)) throw new InvalidArgumentError(`${path}: connection '${c.name}' is listed twice`);
    names.add(c.name);
  }
  return {
    connections: parsed.data.connections,
    users: parsed.data.users,
    proxy: parsed.data.proxy ?? null,
  };
}
