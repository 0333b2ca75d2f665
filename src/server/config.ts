/**
 * The config file of `worklease serve --config FILE` (JSON): the connections
 * it serves, the people who may sign in (per-user token hashes, roles per
 * connection) and the trusted reverse proxy. Connections come only from here
 * and the command line unless the server allows edits through the API; a
 * connection's `readOnly` can be turned off only here. `serve` reads the file
 * again on SIGHUP and applies its users and proxy (not its connections).
 *
 * ```json
 * {
 *   "connections": [{ "name": "prod", "url": "postgres://ops@db/app", "readOnly": true, "environment": "prod" }],
 *   "users": [
 *     { "name": "alice", "tokenSha256": "<sha256 hex of her token>", "roles": { "*": "viewer", "prod": "operator" } },
 *     { "name": "bob@example.com", "roles": { "*": "viewer" } }
 *   ],
 *   "proxy": { "trusted": ["127.0.0.1"], "header": "x-forwarded-email", "defaultRoles": { "*": "viewer" } }
 * }
 * ```
 *
 * A user with `tokenSha256` signs in with that token only; one without is a
 * proxy user, named by the proxy's header only. The proxy's shared secret is
 * not in this file: `WORKLEASE_PROXY_SECRET` or `--proxy-secret-file`.
 */
import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { checkConnectionName, connectionNameKey } from '../console/access.ts';
import { RoleSchema, ThresholdsSchema } from '../console/api.ts';
import { InvalidArgumentError } from '../lease/errors.ts';
import type { ProxyOptions, UserEntry } from './auth.ts';

const Roles = z.record(z.string().min(1).max(100), RoleSchema);
const HeaderName = z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'a header name: letters, digits and -');

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
      /** The one identity header (default x-forwarded-email). */
      header: HeaderName.optional(),
      /** The header carrying the proxy's secret (default x-worklease-proxy-secret). */
      secretHeader: HeaderName.optional(),
      defaultRoles: Roles.optional(),
    })
    .optional(),
});

/** The proxy as the file gives it: everything but the secret, which comes from the environment or a file. */
export type ProxyConfig = Omit<ProxyOptions, 'secret'>;

export interface ServeConfig {
  connections: Array<{
    name: string;
    url: string;
    readOnly: boolean;
    environment: string;
    thresholds?: { expiringFraction?: number | undefined; stuckAfterMs?: number | undefined } | undefined;
  }>;
  users: UserEntry[];
  proxy: ProxyConfig | null;
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
  const names = new Map<string, string>();
  const connections = parsed.data.connections.map((c, i) => {
    const name = checkConnectionName(c.name, `${path}: connections.${i}.name`);
    const other = names.get(connectionNameKey(name));
    if (other !== undefined) {
      throw new InvalidArgumentError(
        other === name
          ? `${path}: connection '${name}' is listed twice`
          : `${path}: connections '${other}' and '${name}' differ only in case or in characters that look alike`,
      );
    }
    names.set(connectionNameKey(name), name);
    return { ...c, name };
  });
  const roles = (r: Record<string, UserEntry['roles'][string]>, where: string) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => [
        k === '*' ? k : checkConnectionName(k, `${path}: ${where} '${k}'`),
        v,
      ]),
    );
  return {
    connections,
    users: parsed.data.users.map((u, i) => ({ ...u, roles: roles(u.roles, `users.${i}.roles`) })),
    proxy:
      parsed.data.proxy === undefined
        ? null
        : {
            ...parsed.data.proxy,
            ...(parsed.data.proxy.defaultRoles === undefined
              ? {}
              : { defaultRoles: roles(parsed.data.proxy.defaultRoles, 'proxy.defaultRoles') }),
          },
  };
}
