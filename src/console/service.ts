/**
 * The console service: the one implementation of the console API
 * (src/console/api.ts). It holds the connections (one backend + server clock +
 * fleet model each), answers requests, enforces read-only profiles, and pushes
 * events to subscribers. Transports (the web server, Electron main) only
 * validate and route to it; it never trusts them to enforce anything.
 *
 * The console never changes a backend's schema: backends are opened with
 * `{ migrate: false }`, so a missing or older schema shows as SCHEMA_MISMATCH
 * in the connection's `error` instead of being created on a production
 * database by someone who only wanted to look.
 */
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { resolveTarget } from '../backends/common.ts';
import { openBackend as defaultOpenBackend } from '../backends/open.ts';
import { parseBackendUrl, resolveBackendUrl } from '../backends/url.ts';
import {
  BackendUnavailableError,
  ForbiddenError,
  InvalidArgumentError,
  NotFoundError,
  WorkleaseError,
} from '../lease/errors.ts';
import type { LeaseBackend, OpenOptions } from '../lease/types.ts';
import { packageVersion } from '../version.ts';
import {
  ALLOWED,
  addedUrlRefusal,
  adminOfEvery,
  atLeast,
  type Caller,
  checkConnectionName,
  connectionNameKey,
  denied,
  type Permission,
  pgliteRefusal,
  type Role,
  roleOn,
  type SharedConsoleOptions,
  urlTargets,
} from './access.ts';
import {
  type ConnectionInfo,
  type ConnectionState,
  type ConsoleApi,
  type ConsoleEvent,
  type LeaseRow,
  type LeaseStatus,
  type MethodName,
  methods,
  type Params,
  type ParsedParams,
  type Result,
} from './api.ts';
import { Connection, type ConnectionInput, resolveInput } from './connection.ts';
import { decodeCheckpoint } from './decode/page.ts';
import { DecodedCheckpoints } from './decode/store.ts';
import { auditMatches, auditRecord } from './export.ts';
import { type FleetStore, ST_EXPIRING, ST_LIVE, ST_STUCK } from './fleet/store.ts';
import { FleetApi } from './fleet-api.ts';
import { legacyHandlers } from './fleet-legacy.ts';
import { connectionIdFor } from './links.ts';
import type { FleetModel, FleetModelOptions } from './model.ts';
import type { ProfileStore, ThresholdOverrides } from './profiles.ts';
import { datasetLossOf, recoverTarget } from './recovery.ts';
import { toAuditWire, toLeaseRow } from './rows.ts';
import type { ViewWatcher } from './views.ts';

export type { ConnectionInput } from './connection.ts';
export { CallMeter } from './connection.ts';

export interface ConsoleServiceOptions {
  /** Every connection read-only (`serve --read-only`). Default false. */
  readOnly?: boolean;
  /** Recorded in the audit log by force-release. Default: the OS user name. */
  operator?: string;
  /** This machine's clock, epoch ms. Default `Date.now`. Statuses use it plus the measured server offset. */
  now?: () => number;
  /** Saved profiles: loaded at start, written by connections.add/update/remove. Default none (nothing persisted). */
  profiles?: ProfileStore | null;
  /** Connections that are not persisted (URLs from arguments or the environment). */
  connections?: ConnectionInput[];
  /** Whether connections may be added/edited/removed through the API. Default true. */
  profilesEditable?: boolean;
  /** Opens a backend; the service always passes `migrate: false`. Default `openBackend`. */
  openBackend?: (url: string, options: OpenOptions) => Promise<LeaseBackend>;
  /** Options for every connection's opened backend (besides migrate/schema/keyPrefix). */
  backendOptions?: Omit<OpenOptions, 'migrate'>;
  /** Fleet model tuning (poll intervals, batching). */
  feed?: FleetModelOptions;
  /** How often the server clock offset is re-measured, ms. Default 600 000. */
  clockRefreshMs?: number;
  /** Version shown by console.info. Default: package.json's. */
  version?: string;
  /**
   * The console is served to several people (`worklease serve`): every call
   * must come with an authenticated {@link Caller} whose role on the
   * connection allows it; `readOnly` can be turned on through the API but
   * never off; connections.test only tests configured connections; PGlite
   * URLs are restricted. Default: not shared (the desktop app's one local user).
   */
  shared?: SharedConsoleOptions;
}

export interface ConsoleService extends ConsoleApi {
  /**
   * Runs one method with already-validated params (what `dispatch` calls) on
   * behalf of `caller`. Without a caller, the local user (the desktop app, the
   * CLI); a shared service refuses calls without one.
   */
  handle<M extends MethodName>(method: M, params: ParsedParams<M>, caller?: Caller): Promise<Result<M>>;
  /** Whether `caller` may see the connection (and so its events). */
  canView(caller: Caller | undefined, connectionId: string): boolean;
  connections(): ConnectionInfo[];
  /**
   * View subscriptions of one client (a WebSocket): `view.watch` / `view.unwatch` messages go to
   * it, and its `view` / `view.error` events to `send` only. Close it with the client.
   */
  watcher(caller: Caller | undefined, send: (event: ConsoleEvent) => void): ViewWatcher;
  /** The fleet model of a connection (for the CLI's `watch`); undefined before its backend opened. */
  model(connectionId: string): FleetModel | undefined;
  /** Resolves when the connection is live (first snapshot loaded); rejects after `timeoutMs` with its last error. */
  waitLive(connectionId: string, timeoutMs?: number): Promise<ConnectionInfo>;
  /**
   * Figures for `/metrics` (src/server/metrics.ts), for the connections `caller` may see
   * (undefined: every connection — the unauthenticated metrics listener the operator chose).
   */
  metrics(caller: Caller | undefined): ConnectionMetrics[];
  readonly readOnly: boolean;
  readonly operator: string;
  close(): Promise<void>;
}

/** One connection's figures for `/metrics`. */
export interface ConnectionMetrics {
  id: string;
  name: string;
  kind: ConnectionInfo['kind'];
  state: ConnectionState;
  /** Leases by status at the backend's time; null before the first snapshot. */
  byStatus: Record<LeaseStatus, number> | null;
  /** Distinct holders of the leases that are held now (live, expiring, stuck). */
  holders: number | null;
  /** The console's calls to this backend: in all, and per second over the last 10 s. */
  callsTotal: number;
  callsPerSecond: number;
  /** Heartbeat checks: the last one's age by the backend's clock, the interval, the last one's duration (s); null before. */
  heartbeats: { ageSeconds: number; intervalSeconds: number; lastSeconds: number } | null;
}

function defaultOperator(): string {
  try {
    return userInfo().username || 'operator';
  } catch {
    return process.env.USER ?? process.env.USERNAME ?? 'operator';
  }
}

/**
 * A console URL split into the driver's URL and its open options. Kept for
 * callers of earlier versions: the console itself hands URLs to `openBackend`
 * whole, which reads `?schema=`, `?keyPrefix=` and the other options of the one
 * URL grammar (src/backends/url.ts).
 */
/**
 * Every connection is announced this often (with its syncedAt, which the model confirms about once a
 * second), so a renderer hears of each connection twice a second and can tell a silent console
 * server from a quiet fleet within 2 s even on a loaded machine. Two small events per connection a
 * second.
 */
const FRESHNESS_EVENT_MS = 500;

export function splitConsoleUrl(url: string): { url: string; options: OpenOptions } {
  const { driverUrl, options } = resolveBackendUrl(url);
  return { url: driverUrl, options };
}

class Service implements ConsoleService {
  readonly readOnly: boolean;
  readonly operator: string;
  readonly now: () => number;
  readonly openBackendFn: (url: string, options: OpenOptions) => Promise<LeaseBackend>;
  readonly backendOptions: Omit<OpenOptions, 'migrate'>;
  readonly feedOptions: FleetModelOptions;
  readonly clockRefreshMs: number;
  private readonly version: string;
  private readonly store: ProfileStore | null;
  private readonly editable: boolean;
  private readonly shared: SharedConsoleOptions | null;
  /** `host:port` pairs added connections may reach on a shared console (SharedConsoleOptions.connectionHosts). */
  private readonly allowedHosts: ReadonlySet<string>;
  private readonly local: Caller;
  private readonly conns = new Map<string, Connection>();
  private readonly listeners = new Set<(event: ConsoleEvent) => void>();
  private readonly freshnessTimer: NodeJS.Timeout;
  /** Checkpoints read whole and decoded, kept a while for their tree pages (decode/store.ts). */
  private readonly decoded = new DecodedCheckpoints();
  private closed = false;

  constructor(options: ConsoleServiceOptions) {
    this.readOnly = options.readOnly ?? false;
    this.operator = options.operator ?? defaultOperator();
    this.now = options.now ?? Date.now;
    this.openBackendFn = options.openBackend ?? defaultOpenBackend;
    this.backendOptions = options.backendOptions ?? {};
    this.feedOptions = options.feed ?? {};
    this.clockRefreshMs = options.clockRefreshMs ?? 600_000;
    this.version = options.version ?? packageVersion();
    this.store = options.profiles ?? null;
    this.shared = options.shared ?? null;
    if (this.shared !== null && this.readOnly && this.shared.allowConnectionEdits === true) {
      throw new InvalidArgumentError(
        'a read-only console cannot allow connection edits: drop --read-only or --allow-connection-edits',
      );
    }
    this.editable =
      this.shared === null
        ? (options.profilesEditable ?? true)
        : this.shared.allowConnectionEdits === true && options.profilesEditable !== false;
    this.local = { user: this.operator, via: 'desktop', roles: { '*': 'admin' } };
    this.allowedHosts = new Set([
      ...(this.shared?.connectionHosts ?? []),
      ...(options.connections ?? []).flatMap((c) => configuredTargets(c.url)),
    ]);
    this.freshnessTimer = setInterval(() => this.announceFreshness(), FRESHNESS_EVENT_MS);
    this.freshnessTimer.unref();
  }

  start(initial: ConnectionInput[]): void {
    for (const profile of this.store?.load() ?? []) {
      this.addConnection(profile.id, profile, true);
    }
    for (const input of initial) this.addConnection(this.givenId(input.url), input, false);
  }

  // ---- ConsoleApi ------------------------------------------------------------

  /** The ConsoleApi as the local user (desktop app, CLI, tests). */
  async call<M extends MethodName>(method: M, params: Params<M>): Promise<Result<M>> {
    const spec = methods[method];
    if (spec === undefined) throw new InvalidArgumentError(`unknown method '${String(method)}'`);
    const parsed = spec.params.safeParse(params ?? {});
    if (!parsed.success) throw paramsError(method, parsed.error.issues);
    return this.handle(method, parsed.data as ParsedParams<M>);
  }

  subscribe(listener: (event: ConsoleEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  async handle<M extends MethodName>(
    method: M,
    params: ParsedParams<M>,
    caller?: Caller,
  ): Promise<Result<M>> {
    if (this.closed) throw new BackendUnavailableError('the console service is closed');
    const who = this.resolveCaller(caller);
    const handler = this.handlers[method] as (p: ParsedParams<M>, c: Caller) => Promise<Result<M>>;
    return handler(params, who);
  }

  watcher(caller: Caller | undefined, send: (event: ConsoleEvent) => void): ViewWatcher {
    return this.fleetApi.watcher(this.resolveCaller(caller), send);
  }

  canView(caller: Caller | undefined, connectionId: string): boolean {
    const conn = this.conns.get(connectionId);
    if (conn === undefined) return false;
    if (caller === undefined) return this.shared === null;
    return roleOn(caller, conn.input.name) !== null;
  }

  private resolveCaller(caller: Caller | undefined): Caller {
    if (caller !== undefined) return caller;
    // A shared console's transport must say who is calling; a missing caller
    // is a transport bug, refused rather than run as the server's OS user.
    if (this.shared !== null) throw new ForbiddenError('this console needs an authenticated caller');
    return this.local;
  }

  private readonly fleetApi = new FleetApi(this);
  private readonly legacy = legacyHandlers({
    now: () => this.now(),
    visibleConnection: (id, caller) => this.visibleConnection(id, caller),
    operatorPermission: (caller, conn, action) => this.operatorPermission(caller, conn, action),
  });

  private readonly handlers: {
    [M in MethodName]: (p: ParsedParams<M>, caller: Caller) => Promise<Result<M>>;
  } = {
    'connections.list': async (_p, caller) =>
      [...this.conns.values()].filter((c) => roleOn(caller, c.input.name) !== null).map((c) => c.info()),
    'connections.add': async (p, caller) => {
      this.requireEditable();
      this.requireConnectionAdmin(caller, p.name, 'add a connection');
      const name = this.uniqueName(p.name, null);
      resolveBackendUrl(p.url, this.backendOptions);
      this.checkSharedUrl(p.url, null);
      const input: ConnectionInput = {
        name,
        url: p.url,
        readOnly: p.readOnly,
        environment: p.environment,
        thresholds: p.thresholds,
      };
      let id = newId();
      if (this.store !== null) id = this.store.save({ ...resolveProfile(input) }).id;
      const conn = this.addConnection(id, input, this.store !== null);
      this.emitConnections();
      return conn.info();
    },
    'connections.update': async ({ id, changes }, caller) => {
      this.requireEditable();
      const conn = this.visibleConnection(id, caller);
      this.requireConnectionAdmin(caller, conn.input.name, 'edit this connection');
      const name = changes.name === undefined ? undefined : this.uniqueName(changes.name, conn);
      if (name !== undefined && name !== conn.input.name) {
        this.requireConnectionAdmin(caller, name, `rename a connection to '${name}'`);
      }
      if (changes.readOnly === false && conn.input.readOnly) {
        const p = this.makeWritablePermission();
        if (!p.allowed) throw new ForbiddenError(p.reason, { details: { connectionId: id } });
      }
      if (changes.url !== undefined) {
        resolveBackendUrl(changes.url, this.backendOptions);
        this.checkSharedUrl(changes.url, conn);
      }
      const merged: ConnectionInput = {
        name: name ?? conn.input.name,
        url: changes.url ?? conn.input.url,
        readOnly: changes.readOnly ?? conn.input.readOnly,
        environment: changes.environment ?? conn.input.environment,
        thresholds:
          changes.thresholds === undefined
            ? conn.input.thresholdOverrides
            : { ...conn.input.thresholdOverrides, ...changes.thresholds },
      };
      if (conn.persistent && this.store !== null) this.store.save({ id, ...resolveProfile(merged) });
      const resolved = resolveInput(merged);
      if (resolved.url !== conn.input.url) {
        await conn.close();
        this.conns.delete(id);
        const fresh = this.addConnection(id, merged, conn.persistent);
        this.emitConnections();
        return fresh.info();
      }
      conn.setInput(resolved);
      this.emitConnection(conn);
      return conn.info();
    },
    'connections.remove': async ({ id }, caller) => {
      this.requireEditable();
      const conn = this.visibleConnection(id, caller);
      this.requireConnectionAdmin(caller, conn.input.name, 'remove this connection');
      if (conn.persistent && this.store !== null) this.store.remove(id);
      this.conns.delete(id);
      await conn.close();
      this.emitConnections();
      return {};
    },
    'connections.test': async ({ url: given, id }, caller) => {
      this.requireEditable();
      let url: string;
      if (id !== undefined) {
        const conn = this.visibleConnection(id, caller);
        this.requireConnectionAdmin(caller, conn.input.name, 'test this connection');
        url = conn.input.url;
      } else {
        // A shared console is no oracle for arbitrary hosts (port scans,
        // credentials sent to a listener of the caller's choice).
        if (this.shared !== null) {
          throw new ForbiddenError('this console tests configured connections only: pass their id');
        }
        url = given ?? '';
      }
      const kind = resolveBackendUrl(url, this.backendOptions).kind;
      const backend = await this.openBackendFn(url, { ...this.backendOptions, migrate: false });
      try {
        const t0 = performance.now();
        const serverTime = await backend.admin.serverTime();
        return { kind, serverTime: serverTime.getTime(), latencyMs: performance.now() - t0 };
      } finally {
        await backend.close().catch(() => {});
      }
    },
    'lease.get': async ({ connectionId, workId }, caller) => {
      const conn = this.visibleConnection(connectionId, caller);
      const info = await conn.requireAdmin().get(workId);
      if (info === null) return null;
      conn.model?.applyInfo(info);
      return toLeaseRow(info);
    },
    'checkpoint.read': async ({ connectionId, workId, offset, length }, caller) => {
      const conn = this.visibleConnection(connectionId, caller);
      const page = await conn.requireAdmin().readState(workId, { offset, length });
      if (page === null) return null;
      const decoded = decodeCheckpoint(page.bytes, page.size, page.offset);
      return {
        workId,
        fencingToken: page.fencingToken.toString(),
        size: page.size,
        offset: page.offset,
        length: page.bytes.length,
        base64: Buffer.from(page.bytes.buffer, page.bytes.byteOffset, page.bytes.byteLength).toString(
          'base64',
        ),
        decoded: decoded.json === undefined ? { kind: decoded.kind, text: decoded.text } : decoded,
      };
    },
    'checkpoint.decode': async (p, caller) => {
      const conn = this.visibleConnection(p.connectionId, caller);
      return this.decoded.tree(conn, conn.requireAdmin(), p);
    },
    'checkpoint.search': async (p, caller) => {
      const conn = this.visibleConnection(p.connectionId, caller);
      return this.decoded.search(conn, conn.requireAdmin(), p);
    },
    'checkpoint.export': async (p, caller) => {
      const conn = this.visibleConnection(p.connectionId, caller);
      return this.decoded.export(conn, conn.requireAdmin(), p);
    },
    'lease.forceRelease': (params, caller) => this.operatorAction('force-release', params, caller),
    'lease.requestRelease': (params, caller) => this.operatorAction('request-release', params, caller),
    ...this.legacy,
    'audit.export': async ({ connectionId, format, workId, search, limit }, caller) => {
      const conn = this.visibleConnection(connectionId, caller);
      const entries = await conn.requireAdmin().audit(workId === undefined ? { limit } : { workId, limit });
      return {
        records: entries
          .map(toAuditWire)
          .filter((e) => auditMatches(search, e))
          .map((e) => auditRecord(format, conn.input.name, e)),
      };
    },
    'audit.list': async ({ connectionId, workId, limit }, caller) => {
      const conn = this.visibleConnection(connectionId, caller);
      const entries = await conn.requireAdmin().audit(workId === undefined ? { limit } : { workId, limit });
      return entries.map(toAuditWire);
    },
    'connection.datasetLoss': async ({ connectionId }, caller) => {
      const conn = this.visibleConnection(connectionId, caller);
      return datasetLossOf(conn.lossTarget(), this.backendOptions, caller.user);
    },
    'connection.recover': async ({ connectionId, reason, operator, confirmKeyPrefix }, caller) => {
      const conn = this.visibleConnection(connectionId, caller);
      const allowed = this.recoverPermission(caller, conn);
      if (!allowed.allowed) throw new ForbiddenError(allowed.reason, { details: { connectionId } });
      if (caller.via !== 'desktop' && operator !== undefined && operator !== caller.user) {
        throw new ForbiddenError(
          `the audit log records the signed-in user ('${caller.user}'); another operator name is refused`,
          { details: { connectionId } },
        );
      }
      const who = caller.via === 'desktop' ? (operator ?? caller.user) : caller.user;
      const result = await recoverTarget(
        conn.lossTarget(),
        this.backendOptions,
        who,
        reason,
        confirmKeyPrefix,
      );
      conn.model?.wake();
      return result;
    },
    'console.info': async (_p, caller) => ({
      version: this.version,
      readOnly: this.readOnly,
      operator: caller.user,
      profilesEditable: this.editable,
    }),
    'console.about': async ({ connectionId }, caller) => {
      const conn = this.visibleConnection(connectionId, caller);
      const serverVersion = await conn.requireAdmin().serverVersion();
      return { connectionId, kind: conn.kind, serverVersion };
    },
    ...this.fleetApi.handlers,
    'console.session': async (_p, caller) => ({
      user: caller.user,
      via: caller.via,
      addConnection: this.editPermission(caller, null),
      connections: [...this.conns.values()].flatMap((c) => {
        const role = roleOn(caller, c.input.name);
        if (role === null) return [];
        const edit = this.editPermission(caller, c);
        return [
          {
            connectionId: c.id,
            role,
            forceRelease: this.operatorPermission(caller, c, 'force-release'),
            requestRelease: this.operatorPermission(caller, c, 'request-release'),
            edit,
            makeWritable: edit.allowed ? this.makeWritablePermission() : edit,
            recover: this.recoverPermission(caller, c),
          },
        ];
      }),
    }),
  };

  /** Force-release and request release: the same checks, the same audit identity, one backend call. */
  private async operatorAction(
    action: 'force-release' | 'request-release',
    p: {
      connectionId: string;
      workId: string;
      expectedToken: string;
      reason: string;
      operator?: string | undefined;
    },
    caller: Caller,
  ): Promise<LeaseRow> {
    const { connectionId, workId } = p;
    const conn = this.visibleConnection(connectionId, caller);
    const allowed = this.operatorPermission(caller, conn, action);
    if (!allowed.allowed) throw new ForbiddenError(allowed.reason, { details: { connectionId, workId } });
    // The audit names the authenticated caller. Only the desktop's one local
    // user may label the entry otherwise (e.g. on behalf of a colleague).
    if (caller.via !== 'desktop' && p.operator !== undefined && p.operator !== caller.user) {
      throw new ForbiddenError(
        `the audit log records the signed-in user ('${caller.user}'); another operator name is refused`,
        { details: { connectionId, workId } },
      );
    }
    const options = {
      expectedToken: BigInt(p.expectedToken),
      operator: caller.via === 'desktop' ? (p.operator ?? caller.user) : caller.user,
      reason: p.reason,
    };
    const admin = conn.requireAdmin();
    const info =
      action === 'force-release'
        ? await admin.forceRelease(workId, options)
        : await admin.requestRelease(workId, options);
    conn.model?.applyInfo(info);
    conn.model?.wake();
    return toLeaseRow(info);
  }

  // ---- permissions --------------------------------------------------------------

  operatorPermission(
    caller: Caller,
    conn: Connection,
    action: 'force-release' | 'request-release',
  ): Permission {
    if (this.readOnly) return denied(`the console was started read-only: ${action} is refused`);
    if (conn.input.readOnly) {
      return denied(`connection '${conn.input.name}' is read-only: ${action} is refused`);
    }
    return this.rolePermission(caller, conn.input.name, 'operator', action);
  }

  /** Recovering the lost buckets of `conn`'s key prefix: writes, so never read-only; admin role. */
  private recoverPermission(caller: Caller, conn: Connection): Permission {
    if (this.readOnly) return denied('the console was started read-only: recover is refused');
    if (conn.input.readOnly)
      return denied(`connection '${conn.input.name}' is read-only: recover is refused`);
    return this.rolePermission(caller, conn.input.name, 'admin', 'recover');
  }

  /** Editing `conn` (null: adding a connection). */
  private editPermission(caller: Caller, conn: Connection | null): Permission {
    if (!this.editable) return denied(this.notEditableReason());
    if (this.shared !== null) {
      return adminOfEvery(caller)
        ? ALLOWED
        : denied(
            `${conn === null ? 'adding' : 'editing'} a connection needs the admin role on every connection ("*": "admin")`,
          );
    }
    if (conn === null) {
      return atLeast(caller.roles['*'] ?? null, 'admin')
        ? ALLOWED
        : denied('adding a connection needs the admin role');
    }
    return this.rolePermission(caller, conn.input.name, 'admin', 'editing this connection');
  }

  /**
   * Connection edits on a shared console need an admin of every connection: an admin of one name
   * could otherwise add (or rename) a connection of that name pointing at another connection's
   * database, and act there with the role that name gives. The desktop's one user is admin anyway.
   */
  private requireConnectionAdmin(caller: Caller, name: string, action: string): void {
    if (this.shared === null) {
      this.requireRole(caller, name, 'admin', action);
      return;
    }
    if (!adminOfEvery(caller)) {
      throw new ForbiddenError(`to ${action} you need the admin role on every connection ("*": "admin")`, {
        details: { needed: 'admin', connection: '*' },
      });
    }
  }

  /** `name` as stored (normalised, checked), refused when another connection (not `self`) has the same name by {@link connectionNameKey}. */
  private uniqueName(name: string, self: Connection | null): string {
    const normal = checkConnectionName(name);
    const key = connectionNameKey(normal);
    for (const c of this.conns.values()) {
      if (c !== self && connectionNameKey(c.input.name) === key) {
        throw new InvalidArgumentError(
          c.input.name === normal
            ? `a connection named '${normal}' exists already`
            : `'${normal}' looks like the existing connection '${c.input.name}' (case or look-alike characters): choose another name`,
          { details: { option: 'name' } },
        );
      }
    }
    return normal;
  }

  private makeWritablePermission(): Permission {
    return this.shared === null
      ? ALLOWED
      : denied('read-only can be turned off only in the server configuration, not through a shared console');
  }

  /** The audit's operator name: the signed-in user; only the desktop's one user may name another. */
  auditOperator(caller: Caller, given: string | undefined, details: Record<string, unknown>): string {
    if (caller.via !== 'desktop' && given !== undefined && given !== caller.user) {
      throw new ForbiddenError(
        `the audit log records the signed-in user ('${caller.user}'); another operator name is refused`,
        { details },
      );
    }
    return caller.via === 'desktop' ? (given ?? caller.user) : caller.user;
  }

  rolePermission(caller: Caller, name: string, needed: Role, action: string): Permission {
    const role = roleOn(caller, name);
    if (atLeast(role, needed)) return ALLOWED;
    return denied(`your role on '${name}' is ${role ?? 'none'}; ${action} needs ${needed}`);
  }

  private requireRole(caller: Caller, name: string, needed: Role, action: string): void {
    const p = this.rolePermission(caller, name, needed, action);
    if (!p.allowed) throw new ForbiddenError(p.reason, { details: { connection: name, needed } });
  }

  /** The connection, or NOT_FOUND when it does not exist or the caller has no role on it (no oracle for names). */
  visibleConnection(id: string, caller: Caller): Connection {
    const conn = this.connection(id);
    if (roleOn(caller, conn.input.name) === null) {
      throw new NotFoundError(`no connection with id '${id}'`, { details: { what: 'connection', id } });
    }
    return conn;
  }

  private checkSharedUrl(url: string, replacing: Connection | null): void {
    if (this.shared === null) return;
    const memoryInUse = [...this.conns.values()].filter(
      (c) => c !== replacing && /^pglite:\/\/memory\/?$/i.test(c.input.url),
    ).length;
    const refusal =
      pgliteRefusal(url, this.shared.pgliteDataDir, memoryInUse, this.shared.maxMemoryConnections ?? 2) ??
      addedUrlRefusal(url, parseBackendUrl(url).kind, this.allowedHosts);
    if (refusal !== null) throw new ForbiddenError(refusal, { details: { option: 'url' } });
  }

  private notEditableReason(): string {
    if (this.shared === null) return 'connection profiles cannot be edited through this console';
    return this.readOnly
      ? 'the console is read-only: connections come from the server configuration'
      : 'connections come from the server configuration (serve --allow-connection-edits lets admins edit them here)';
  }

  // ---- connections ------------------------------------------------------------

  metrics(caller: Caller | undefined): ConnectionMetrics[] {
    return [...this.conns.values()]
      .filter((c) => caller === undefined || roleOn(caller, c.input.name) !== null)
      .map((c) => {
        const model = c.model;
        let byStatus: Record<LeaseStatus, number> | null = null;
        let holders: number | null = null;
        if (model !== null && model.syncedAt !== null) {
          const store = model.judged(c.statusNow());
          byStatus = store.countsByStatus();
          holders = heldHolders(store);
        }
        return {
          id: c.id,
          name: c.input.name,
          kind: c.kind,
          state: c.state,
          byStatus,
          holders,
          callsTotal: c.calls.total,
          callsPerSecond: c.calls.perSecond(),
          heartbeats:
            model === null || model.heartbeatsAsOf === null
              ? null
              : {
                  ageSeconds: Math.max(0, c.serverNow() - model.heartbeatsAsOf) / 1000,
                  intervalSeconds: model.heartbeatCheck.intervalMs / 1000,
                  lastSeconds: (model.heartbeatCheck.lastMs ?? 0) / 1000,
                },
        };
      });
  }

  connections(): ConnectionInfo[] {
    return [...this.conns.values()].map((c) => c.info());
  }

  model(connectionId: string): FleetModel | undefined {
    return this.conns.get(connectionId)?.model ?? undefined;
  }

  async waitLive(connectionId: string, timeoutMs = 30_000): Promise<ConnectionInfo> {
    const conn = this.connection(connectionId);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = conn.error;
        reject(
          err instanceof WorkleaseError
            ? err
            : new BackendUnavailableError(
                `connection '${conn.input.name}' did not become live within ${timeoutMs} ms (state ${conn.state})`,
              ),
        );
      }, timeoutMs);
    });
    try {
      await Promise.race([conn.whenLive(), timeout]);
    } finally {
      clearTimeout(timer);
    }
    return conn.info();
  }

  /** A given connection's id: derived from its effective URL (src/console/links.ts), unique here. */
  private givenId(url: string): string {
    let base: string;
    try {
      base = connectionIdFor(
        resolveTarget(url, this.backendOptions, ['postgres', 'pglite', 'redis', 'redis-cluster'], 'backend')
          .url,
      );
    } catch {
      // Refused when opened, with the reason; the id only has to be unique.
      return newId();
    }
    let id = base;
    for (let n = 2; this.conns.has(id); n++) id = `${base}-${n}`;
    return id;
  }

  private addConnection(id: string, input: ConnectionInput, persistent: boolean): Connection {
    const conn = new Connection(id, resolveInput(input), persistent, this);
    this.conns.set(id, conn);
    conn.start();
    return conn;
  }

  private connection(id: string): Connection {
    const conn = this.conns.get(id);
    if (conn === undefined) {
      throw new NotFoundError(`no connection with id '${id}'`, { details: { what: 'connection', id } });
    }
    return conn;
  }

  private requireEditable(): void {
    if (!this.editable) throw new ForbiddenError(this.notEditableReason());
  }

  // ---- events -------------------------------------------------------------------

  emit(event: ConsoleEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // One broken subscriber must not starve the others.
      }
    }
  }

  emitConnection(conn: Connection): void {
    if (this.closed || !this.conns.has(conn.id)) return;
    this.emit({ type: 'connection', connection: conn.info() });
  }

  private emitConnections(): void {
    this.emit({ type: 'connections', connections: this.connections() });
  }

  /** Every connection, every second: its new syncedAt, and proof to subscribers that this service is alive. */
  private announceFreshness(): void {
    for (const conn of this.conns.values()) {
      conn.lastAnnouncedSyncedAt = conn.model?.syncedAt ?? null;
      this.emitConnection(conn);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.freshnessTimer);
    this.decoded.clear();
    this.fleetApi.close();
    await Promise.all([...this.conns.values()].map((c) => c.close()));
    this.conns.clear();
    this.listeners.clear();
  }
}

function newId(): string {
  return `c_${randomBytes(6).toString('hex')}`;
}

function resolveProfile(input: ConnectionInput): {
  name: string;
  url: string;
  readOnly: boolean;
  environment: string;
  thresholds?: ThresholdOverrides | undefined;
} {
  return {
    name: input.name,
    url: input.url,
    readOnly: input.readOnly ?? false,
    environment: input.environment ?? '',
    thresholds: input.thresholds,
  };
}

/** Distinct holders of the leases held now (live, expiring, stuck): one pass over the index. */
function heldHolders(store: FleetStore): number {
  const seen = new Uint8Array(store.cols.holders.values.length);
  let n = 0;
  for (const slot of store.byWorkId) {
    const st = store.status[slot]!;
    if (st !== ST_LIVE && st !== ST_EXPIRING && st !== ST_STUCK) continue;
    const h = store.cols.holder[slot]!;
    if (seen[h] === 0) {
      seen[h] = 1;
      n++;
    }
  }
  return n;
}

/** A zod failure as one readable INVALID_ARGUMENT. */
export function paramsError(
  method: string,
  issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>,
): InvalidArgumentError {
  const first = issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : 'params'}: ${i.message}`)
    .join('; ');
  return new InvalidArgumentError(`invalid params for ${method}: ${first}`, {
    details: { method, issues: issues.map((i) => ({ path: i.path.map(String), message: i.message })) },
  });
}

/** The `host:port` pairs a configured connection reaches (default ports where none is written). */
function configuredTargets(url: string): string[] {
  try {
    const kind = parseBackendUrl(url).kind;
    return kind === 'pglite' ? [] : urlTargets(url, kind === 'postgres' ? 5432 : 6379);
  } catch {
    return [];
  }
}

/** Creates the service and starts opening its connections (profiles first, then `connections`). */
export function createConsoleService(options: ConsoleServiceOptions = {}): ConsoleService {
  const service = new Service(options);
  service.start(options.connections ?? []);
  return service;
}
