/**
 * The console's one typed API contract, written once. The console service
 * (src/console/service.ts) implements it; the web server (HTTP + WebSocket),
 * the Electron preload/main (IPC) and the renderer's client are all derived
 * from the `methods` table and the `ConsoleEvent` schema below, and every
 * message crossing a boundary is validated against them.
 *
 * This module is plain TypeScript + zod: no Node, no DOM, no backend. The
 * renderer imports it.
 *
 * Wire conventions: fencing tokens and versions are decimal strings (JSON has
 * no bigint); times are epoch milliseconds by the backend's clock; bytes are
 * base64.
 */
import * as z from 'zod';
import { JobEventSchema, ViewErrorEventSchema, ViewEventSchema, viewMethods } from './common/view.ts';
import {
  ErrorCodeSchema,
  ErrorDataSchema,
  type ErrorDataWire,
  LEASE_STATUSES,
  type LeaseRow,
  LeaseRowSchema,
  type LeaseStatus,
  LeaseStatusSchema,
  type ReleaseRequestWire,
  ReleaseRequestWireSchema,
} from './common/wire.ts';

export {
  ErrorCodeSchema,
  ErrorDataSchema,
  type ErrorDataWire,
  LEASE_STATUSES,
  type LeaseRow,
  LeaseRowSchema,
  type LeaseStatus,
  LeaseStatusSchema,
  type ReleaseRequestWire,
  ReleaseRequestWireSchema,
};

/**
 * True when a SCHEMA_MISMATCH's details say the stored schema is newer than this worklease: a
 * PostgreSQL/PGlite schema version (`version`), or a Redis data layout (`found`), above the one it
 * knows (`expected`). Such a schema needs a newer worklease; `worklease migrate` cannot help. The
 * CLI and the console's error text both decide by it.
 */
export function schemaNewerThanThis(details: Record<string, unknown> | undefined): boolean {
  if (typeof details?.expected !== 'number') return false;
  // Redis reports the stored layout as a string, or null when there is none (NaN: not newer).
  const stored = typeof details.version === 'number' ? details.version : Number(details.found ?? Number.NaN);
  return stored > details.expected;
}

const id = z.string().min(1).max(512);
const token = z.string().regex(/^[1-9][0-9]{0,18}$/, 'a fencing token (decimal string)');
const ms = z.number().int().nonnegative();
/** An audit entry's token: a fencing token, or '0' on an entry that names none (a recovery). */
const auditToken = z.string().regex(/^(0|[1-9][0-9]{0,18})$/, 'a fencing token (decimal string) or 0');

export const ThresholdsSchema = z.strictObject({
  /** A live lease is `expiring` when less than this fraction of its ttl is left. Default 0.25. */
  expiringFraction: z.number().gt(0).lt(1),
  /** A live lease is `stuck` when renewed but its checkpoint has not moved for this long. Default 60 000 ms. */
  stuckAfterMs: z.number().int().positive(),
});
export type Thresholds = z.infer<typeof ThresholdsSchema>;
export const DEFAULT_THRESHOLDS: Thresholds = { expiringFraction: 0.25, stuckAfterMs: 60_000 };

/**
 * `stale`: the backend has not confirmed the feed for a while (a call hangs); rows are as of
 * `syncedAt`. `reconnecting`: calls fail and are retried. Only `live` data is current.
 */
export const ConnectionStateSchema = z.enum([
  'connecting',
  'live',
  'stale',
  'reconnecting',
  'error',
  'closed',
]);
export type ConnectionState = z.infer<typeof ConnectionStateSchema>;

export const HeartbeatCheckSchema = z.strictObject({
  /**
   * Backend time at the start of the last complete heartbeat check; null before the first. Every
   * lease due by then was re-read (src/console/fleet/checks.ts), so statuses are judged at
   * min(backend now, asOf): a lease is shown expired only once a check has confirmed that it ran out.
   */
  asOf: ms.nullable(),
  /** The interval checks run at, ms (the same at every fleet size: a check reads only due and visible rows). */
  intervalMs: ms,
  /** How long the last check took, ms; null before the first. */
  lastMs: ms.nullable(),
  /** Rows the last check read (the due and the visible ones). */
  lastRows: ms,
});
export type HeartbeatCheckWire = z.infer<typeof HeartbeatCheckSchema>;

export const ConnectionInfoSchema = z.strictObject({
  id: z.string().min(1).max(100),
  name: z.string().min(1).max(100),
  /** Backend URL with the password removed. */
  url: z.string(),
  kind: z.enum(['postgres', 'redis', 'redis-cluster', 'pglite']),
  readOnly: z.boolean(),
  /** A label shown beside the connection so ops see where they are ("prod", "staging", "demo"). */
  environment: z.string().max(40),
  thresholds: ThresholdsSchema,
  state: ConnectionStateSchema,
  /**
   * When the model was last known to match the backend (backend clock, ms); null before the first sync.
   * Confirmed about every second while live; statuses of a connection that is not live are computed
   * at this time, never by a clock that runs on without the backend.
   */
  syncedAt: ms.nullable(),
  /** Backend clock minus this machine's clock, ms. */
  clockOffsetMs: z.number(),
  error: ErrorDataSchema.nullable(),
  /** The console's own calls to this backend per second (average of the last 10 s). */
  callsPerSecond: z.number().nonnegative().optional(),
  /**
   * Heartbeat checks: the change feed carries ownership changes only, so the console re-reads the
   * fleet itself (a sweep) to see renews and checkpoints. Absent before the backend opened.
   */
  heartbeats: HeartbeatCheckSchema.optional(),
});
export type ConnectionInfo = z.infer<typeof ConnectionInfoSchema>;

export const CountsSchema = z.strictObject({
  total: ms,
  byStatus: z.record(LeaseStatusSchema, ms),
  /** Top holders by number of leases (current or last holder). */
  byHolder: z.array(z.strictObject({ holderId: z.string(), count: ms })),
});
export type Counts = z.infer<typeof CountsSchema>;

export const RatePointSchema = z.strictObject({
  /** Start of the minute, backend clock, ms. */
  minute: ms,
  acquires: ms,
  takeovers: ms,
  releases: ms,
  forceReleases: ms,
});
export type RatePoint = z.infer<typeof RatePointSchema>;

export const AuditEntryWireSchema = z.strictObject({
  id: z.string(),
  at: ms,
  /** `recover`: a lost bucket re-initialised (Redis); it names no work item and no token ('' and '0'). */
  action: z.enum(['force-release', 'request-release', 'recover', 'hold', 'unhold']),
  workId: z.string().max(512),
  operator: z.string(),
  reason: z.string(),
  oldHolderId: z.string(),
  oldToken: auditToken,
  newToken: auditToken,
  /** Shared by the entries of one bulk force-release (`lease.forceReleaseMany`); null otherwise. */
  batchId: z.string().nullable(),
});
export type AuditEntryWire = z.infer<typeof AuditEntryWireSchema>;

export const DecodedCheckpointSchema = z.strictObject({
  /** How the page is shown: JSON (pretty), UTF-8 text, or a hex dump with offsets. */
  kind: z.enum(['empty', 'json', 'text', 'hex']),
  /** The rendering of the bytes in this page. */
  text: z.string(),
  /** Parsed JSON value when kind is json (whole payload in one page only). */
  json: z.unknown().optional(),
});

export const CheckpointPageSchema = z.strictObject({
  workId: id,
  fencingToken: token,
  size: ms.nullable(),
  offset: ms,
  length: ms,
  /** The raw bytes of this page, base64. */
  base64: z.string(),
  decoded: DecodedCheckpointSchema,
});
export type CheckpointPage = z.infer<typeof CheckpointPageSchema>;

/** Kinds of node in a decoded checkpoint (src/console/decode/value.ts). */
export const DecodedKindSchema = z.enum([
  'object',
  'array',
  'map',
  'message',
  'repeated',
  'packed',
  'tag',
  'ext',
  'string',
  'number',
  'integer',
  'boolean',
  'null',
  'undefined',
  'bytes',
  'date',
]);
export type DecodedKind = z.infer<typeof DecodedKindSchema>;

/** One node of a decoded checkpoint, as a tree row shows it (src/console/decode/tree.ts). */
export const DecodedNodeSchema = z.strictObject({
  /** Its key in its parent: a property, an index, a map key, a protobuf field number. */
  key: z.string(),
  type: DecodedKindSchema,
  /** Children (0 for a leaf). */
  count: ms,
  /** The value in one line (a JSON literal for scalars, `{3}` / `[12]` for containers), cut at 200 characters. */
  preview: z.string(),
  /** The preview does not show the whole value. */
  truncated: z.boolean(),
  /** Characters of a string, bytes of a byte string; null otherwise. */
  size: ms.nullable(),
  /** A string or byte string that was decoded, and how (outermost first: base64, gzip, msgpack). */
  via: z.array(z.string()).optional(),
  /** Protobuf: field number, wire type, the reading chosen and the other readings. */
  field: z.strictObject({ no: ms, wire: z.string(), as: z.string(), alt: z.string() }).optional(),
  /** A guess decided what this is (protobuf without a schema). */
  guessed: z.boolean(),
  /** Why an embedded value could not be decoded. */
  error: z.string().optional(),
});
export type DecodedNode = z.infer<typeof DecodedNodeSchema>;

/** Path of a node in a decoded checkpoint: its keys from the root (a JSON Pointer's segments). */
const DecodedPathSchema = z.array(z.string().max(4096)).max(1024).default([]);

/** Children per `checkpoint.decode` page: 200 by default, at most 1000. */
export const DECODED_PAGE = 200;

/** A decoded checkpoint's identity, node and one page of its children (`checkpoint.decode`). */
export const DecodedTreeSchema = z.strictObject({
  workId: id,
  fencingToken: token,
  /** Bytes stored; null when no checkpoint was ever saved. */
  size: ms.nullable(),
  /**
   * Names this decoding (the token and a hash of the bytes): later pages, searches and exports
   * pass it back, and are refused with CONFLICT once the checkpoint changed.
   */
  id: z.string(),
  /** How the bytes were read, outermost first (`gzip`, `protobuf`); empty for binary shown as hex. */
  layers: z.array(z.string()),
  /** A guess decided the format (protobuf without a schema). */
  guessed: z.boolean(),
  /** What else the bytes could be, what was left undecoded. */
  notes: z.array(z.string()),
  /** "could not decode: …" (corrupt, a decompression bomb, too deep, too large); null when decoded. */
  error: z.string().nullable(),
  /** The node at the path asked for; null when nothing was decoded. */
  node: DecodedNodeSchema.nullable(),
  /** Position of each key of the path among its parent's children (to show the right pages). */
  trail: z.array(ms),
  offset: ms,
  children: z.array(DecodedNodeSchema),
});
export type DecodedTree = z.infer<typeof DecodedTreeSchema>;

const connectionId = z.string().min(1).max(100);

export const ExportFormatSchema = z.enum(['csv', 'json']);
/** The fleet view's filter, as `fleet.export` applies it. */
export const ExportFilterSchema = z.strictObject({
  search: z.string().max(200).optional(),
  holder: z.string().max(512).optional(),
  workIdPrefix: z.string().max(512).optional(),
  statuses: z.array(LeaseStatusSchema).max(LEASE_STATUSES.length).optional(),
});
/** Most snapshot rows one `fleet.export` page reads (a page stays far below any transport cap). */
export const MAX_EXPORT_PAGE = 5000;

/** Most leases in one `lease.forceReleaseMany`. */
export const MAX_BULK_ITEMS = 1000;

/** One row of a bulk force-release: the lease after it, or why it was refused. */
export const BulkResultSchema = z.strictObject({
  workId: id,
  ok: z.boolean(),
  row: LeaseRowSchema.optional(),
  error: z.strictObject({ code: ErrorCodeSchema, message: z.string() }).optional(),
});
export type BulkResult = z.infer<typeof BulkResultSchema>;

/** A caller's role on one connection: viewer (read), operator (+ force-release, request release), admin (+ connections). */
export const RoleSchema = z.enum(['viewer', 'operator', 'admin']);
export type Role = z.infer<typeof RoleSchema>;

/** Whether an action is allowed, and if not, the sentence the page shows instead of the control. */
export const PermissionSchema = z.discriminatedUnion('allowed', [
  z.strictObject({ allowed: z.literal(true) }),
  z.strictObject({ allowed: z.literal(false), reason: z.string() }),
]);
export type Permission = z.infer<typeof PermissionSchema>;

export const SessionSchema = z.strictObject({
  /** The authenticated identity, as the audit log records it. */
  user: z.string(),
  /** desktop: the OS user; token: a per-user token; shared-token: the console's one token; proxy: a trusted proxy's header. */
  via: z.enum(['desktop', 'token', 'shared-token', 'proxy']),
  /** Adding a connection. */
  addConnection: PermissionSchema,
  connections: z.array(
    z.strictObject({
      connectionId,
      role: RoleSchema,
      forceRelease: PermissionSchema,
      /** Asking the holder to hand a lease over (the same rules as force-release). */
      requestRelease: PermissionSchema,
      /** Editing, testing or removing this connection. */
      edit: PermissionSchema,
      /** Turning read-only off (it can always be turned on by whoever may edit). */
      makeWritable: PermissionSchema,
      /** Re-initialising the lost buckets of a Redis key prefix (`connection.recover`): admin role, not read-only. */
      recover: PermissionSchema,
    }),
  ),
});
export type Session = z.infer<typeof SessionSchema>;

/**
 * WebSocket close code of the event stream when the server dropped a client
 * that fell too far behind (its send buffer passed the cap): the page must
 * reconnect and take fresh snapshots, since events were lost.
 */
export const CLOSE_RESYNC = 4000;
/** WebSocket close code when the session ended (signed out or expired): the page must sign in again. */
export const CLOSE_UNAUTHENTICATED = 4001;

const urlSchema = z.string().min(1).max(4096);

export const ConnectionInputSchema = z.strictObject({
  name: z.string().trim().min(1).max(100),
  url: urlSchema,
  readOnly: z.boolean().default(false),
  environment: z.string().trim().max(40).default(''),
  thresholds: ThresholdsSchema.partial().optional(),
});

/** The parameters of an action on one lease (force-release, request-release): the same for both. */
const LeaseActionParams = z.strictObject({
  connectionId,
  workId: id,
  expectedToken: token,
  reason: z.string().trim().min(1).max(2000),
  operator: z.string().trim().min(1).max(200).optional(),
});

/** Most affected work ids `connection.datasetLoss` lists (`affectedTotal` counts them all). */
export const MAX_AFFECTED = 1000;

const bucketList = z.array(z.number().int().min(0).max(16383)).max(16384);

/** What a Redis key prefix lost (LeaseAdmin.datasetLoss), as the server read it at the call. */
export const DatasetLossWireSchema = z.strictObject({
  keyPrefix: z.string(),
  dataset: z.string().nullable(),
  buckets: z.number().int().min(1).max(16384),
  /** Buckets whose data is gone: their work items fail DATASET_LOST until recovered. */
  lost: bucketList,
  /** Buckets of another dataset: never recovered. */
  foreign: bucketList,
  metaLost: z.boolean(),
  /** Work items the console showed that live in a lost bucket (at most MAX_AFFECTED). */
  affected: z.array(id).max(MAX_AFFECTED),
  affectedTotal: ms,
});
export type DatasetLossWire = z.infer<typeof DatasetLossWireSchema>;

export const RecoveryWireSchema = z.strictObject({
  keyPrefix: z.string(),
  dataset: z.string().nullable(),
  buckets: z.number().int().min(1).max(16384),
  lost: bucketList,
  foreign: bucketList,
  metaLost: z.boolean(),
  recovered: bucketList,
  metaRecreated: z.boolean(),
  dryRun: z.boolean(),
});
export type RecoveryWire = z.infer<typeof RecoveryWireSchema>;

/**
 * Every request the console answers: name → params schema and result schema.
 * Transports route by name, validate `params` before calling the service and
 * (in tests) validate results too.
 */
export const methods = {
  'connections.list': { params: z.strictObject({}), result: z.array(ConnectionInfoSchema) },
  'connections.add': { params: ConnectionInputSchema, result: ConnectionInfoSchema },
  'connections.update': {
    params: z.strictObject({ id: connectionId, changes: ConnectionInputSchema.partial() }),
    result: ConnectionInfoSchema,
  },
  'connections.remove': { params: z.strictObject({ id: connectionId }), result: z.strictObject({}) },
  /**
   * Opens the URL (or the configured connection `id`), reads the server clock,
   * closes. Never migrates. A served console tests configured connections only.
   */
  'connections.test': {
    params: z
      .strictObject({ url: urlSchema.optional(), id: connectionId.optional() })
      .refine((p) => (p.url === undefined) !== (p.id === undefined), 'give exactly one of url and id'),
    result: z.strictObject({ kind: ConnectionInfoSchema.shape.kind, serverTime: ms, latencyMs: z.number() }),
  },
  /**
   * The whole model of one connection (rows never carry checkpoint bytes).
   * With `limit`, one page of it instead: rows `offset`… of the snapshot in
   * work-id order (UTF-16 code units), plus `total`. Pass the first page's
   * `seq` for the next pages to read the same snapshot; a page whose `seq`
   * differs comes from a newer one (the held one was replaced or expired):
   * start again from offset 0.
   */
  'fleet.snapshot': {
    params: z.strictObject({
      connectionId,
      offset: z.number().int().nonnegative().optional(),
      limit: z.number().int().min(1).max(50_000).optional(),
      seq: ms.optional(),
    }),
    result: z.strictObject({
      connectionId,
      rows: z.array(LeaseRowSchema),
      /** Sequence number of the last event applied to this snapshot; events with a higher one follow. */
      seq: ms,
      serverTime: ms,
      /** When these rows' heartbeats were last checked (see HeartbeatCheckSchema.asOf). */
      heartbeatsAsOf: ms.nullable().optional(),
      /** Paged requests only: rows in the whole snapshot. */
      total: z.number().int().nonnegative().optional(),
    }),
  },
  'fleet.counts': {
    params: z.strictObject({
      connectionId,
      /** How many minutes of rates (default 60), ending with the backend's current minute: the chart's windows. */
      minutes: z.union([z.literal(15), z.literal(60), z.literal(1440)]).optional(),
    }),
    result: z.strictObject({
      counts: CountsSchema,
      rates: z.array(RatePointSchema),
      /** Start of the oldest minute (backend clock, ms) the console has any event for, in its last 24 h; null when none. */
      since: ms.nullable(),
    }),
  },
  /** One lease, read fresh from the backend. */
  'lease.get': { params: z.strictObject({ connectionId, workId: id }), result: LeaseRowSchema.nullable() },
  'checkpoint.read': {
    params: z.strictObject({
      connectionId,
      workId: id,
      offset: ms.max(64 * 1024 * 1024).default(0),
      length: z
        .number()
        .int()
        .min(1)
        .max(1024 * 1024)
        .default(64 * 1024),
    }),
    result: CheckpointPageSchema.nullable(),
  },
  /**
   * The checkpoint decoded (JSON, text, msgpack, CBOR, guessed protobuf; gzip, deflate, brotli
   * and base64 unwrapped, also inside strings), as a tree served by path: the node at `path` and
   * its children `offset`… (`limit`, default 200). The server reads and decodes the checkpoint
   * once and keeps it a while; pass the first answer's `id` to read the same decoding (CONFLICT
   * when the checkpoint changed since). NOT_FOUND for a path with no node. Null without a lease.
   * Viewer role.
   */
  'checkpoint.decode': {
    params: z.strictObject({
      connectionId,
      workId: id,
      id: z.string().max(200).optional(),
      path: DecodedPathSchema,
      offset: ms.default(0),
      limit: z.number().int().min(1).max(1000).default(DECODED_PAGE),
    }),
    result: DecodedTreeSchema.nullable(),
  },
  /**
   * Nodes of a decoded checkpoint whose key or value contains `query` (case-insensitive), in
   * document order; `truncated` when the search stopped at `limit` matches or its time cap.
   */
  'checkpoint.search': {
    params: z.strictObject({
      connectionId,
      workId: id,
      id: z.string().max(200),
      query: z.string().min(1).max(200),
      limit: z.number().int().min(1).max(200).default(100),
    }),
    result: z.strictObject({
      matches: z.array(
        z.strictObject({ path: z.array(z.string()), type: DecodedKindSchema, preview: z.string() }),
      ),
      truncated: z.boolean(),
      searched: ms,
    }),
  },
  /**
   * A decoded checkpoint for download or copy, 1 MiB at a time from `offset`: `json`, the node
   * at `path` as JSON text (characters); `text`, a string node as it is; `raw`, the stored bytes
   * (base64 of up to 1 MiB). `nextOffset` is null after the last page.
   */
  'checkpoint.export': {
    params: z.strictObject({
      connectionId,
      workId: id,
      id: z.string().max(200),
      format: z.enum(['json', 'text', 'raw']),
      path: DecodedPathSchema,
      offset: ms.default(0),
    }),
    result: z.strictObject({ data: z.string(), total: ms, nextOffset: ms.nullable() }),
  },
  /** Refused with FORBIDDEN on read-only connections, CONFLICT when the token moved. */
  'lease.forceRelease': {
    params: LeaseActionParams,
    result: LeaseRowSchema,
  },
  /**
   * Asks the holder to hand the lease over (docs/request-release.md): the same parameters and
   * rules as force-release (operator role, FORBIDDEN on read-only connections, CONFLICT when the
   * token moved or the lease is not live, NOT_FOUND without a lease). The lease keeps its token;
   * the row returned carries the request. Asking again returns the first request.
   */
  'lease.requestRelease': {
    params: LeaseActionParams,
    result: LeaseRowSchema,
  },
  /**
   * Force-releases a selection (the rows a filter shows), each lease fenced by
   * compare-and-set on its own `expectedToken`. `confirmCount` is the count the
   * operator typed and must equal `items.length`. Refused as a whole (before any
   * write) with FORBIDDEN on read-only connections or without the operator role;
   * otherwise run row by row: a lease whose token moved is a CONFLICT in its own
   * result and the others go on. Every entry written shares `batchId` in the audit.
   */
  'lease.forceReleaseMany': {
    params: z
      .strictObject({
        connectionId,
        items: z
          .array(z.strictObject({ workId: id, expectedToken: token }))
          .min(1)
          .max(MAX_BULK_ITEMS),
        reason: z.string().trim().min(1).max(2000),
        operator: z.string().trim().min(1).max(200).optional(),
        confirmCount: z.number().int().min(1).max(MAX_BULK_ITEMS),
      })
      .refine((p) => p.confirmCount === p.items.length, {
        message: 'the typed count must equal the number of items',
        path: ['confirmCount'],
      })
      .refine((p) => new Set(p.items.map((i) => i.workId)).size === p.items.length, {
        message: 'a work id appears more than once',
        path: ['items'],
      }),
    result: z.strictObject({
      batchId: z.string(),
      results: z.array(BulkResultSchema),
    }),
  },
  /**
   * The fleet as an export, one page at a time: the rows `offset`…`offset+limit`
   * of the held snapshot (work-id order, as `fleet.snapshot` pages) that pass
   * `filter`, as CSV lines or JSON objects (see src/console/export.ts; the page
   * joins them with `assembleExport`). Statuses are computed at `statusAt`: the
   * first page (offset 0) chooses it (the backend's time now) and later pages
   * pass it back with `seq`; a page whose `seq` differs comes from a newer
   * snapshot: start again. Viewer role.
   */
  'fleet.export': {
    params: z.strictObject({
      connectionId,
      format: ExportFormatSchema,
      filter: ExportFilterSchema.default({}),
      offset: ms.default(0),
      limit: z.number().int().min(1).max(MAX_EXPORT_PAGE).default(MAX_EXPORT_PAGE),
      seq: ms.optional(),
      statusAt: ms.optional(),
    }),
    result: z.strictObject({
      records: z.array(z.string()),
      /** Rows in the whole snapshot (before the filter). */
      total: ms,
      /** Offset of the next page; null after the last one. */
      nextOffset: ms.nullable(),
      seq: ms,
      statusAt: ms,
    }),
  },
  /** The audit log (newest first, at most 1000 entries: the backend's limit) as CSV lines or JSON objects. Viewer role. */
  'audit.export': {
    params: z.strictObject({
      connectionId,
      format: ExportFormatSchema,
      workId: id.optional(),
      search: z.string().max(200).optional(),
      limit: z.number().int().min(1).max(1000).default(1000),
    }),
    result: z.strictObject({ records: z.array(z.string()) }),
  },
  'audit.list': {
    params: z.strictObject({
      connectionId,
      workId: id.optional(),
      limit: z.number().int().min(1).max(1000).default(100),
    }),
    result: z.array(AuditEntryWireSchema),
  },
  /**
   * Redis only: which buckets of the connection's key prefix lost their data (a Cluster master that
   * came back empty), read from the server now, and which of the work items the console shows live
   * in them. Works also when the connection could not open (its meta key lost). Viewer role;
   * INVALID_ARGUMENT on PostgreSQL and PGlite.
   */
  'connection.datasetLoss': {
    params: z.strictObject({ connectionId }),
    result: DatasetLossWireSchema,
  },
  /**
   * Redis only: re-initialises exactly the lost buckets (and the meta key if it went too), each
   * with an audit entry (action `recover`) naming the caller; `worklease recover` does the same.
   * `confirmKeyPrefix` must be the key prefix the operator typed. Admin role; FORBIDDEN on
   * read-only connections and consoles.
   */
  'connection.recover': {
    params: z.strictObject({
      connectionId,
      reason: z.string().trim().min(1).max(2000),
      operator: z.string().trim().min(1).max(200).optional(),
      confirmKeyPrefix: z.string().min(1).max(512),
    }),
    result: RecoveryWireSchema,
  },
  /** Facts about the server side of the console (for the About box and the read-only banner). */
  'console.info': {
    params: z.strictObject({}),
    result: z.strictObject({
      version: z.string(),
      /** True when the whole console was started read-only (`serve --read-only`). */
      readOnly: z.boolean(),
      operator: z.string(),
      /** Whether connection profiles can be added/edited through this transport. */
      profilesEditable: z.boolean(),
    }),
  },
  /**
   * The backend server behind one connection, for the settings page: its kind and the version the
   * server reports (PostgreSQL `server_version`, Redis `redis_version`). Asked of the backend at
   * each call; refused with the connection's error (BACKEND_UNAVAILABLE…) when it is down. Viewer role.
   */
  'console.about': {
    params: z.strictObject({ connectionId }),
    result: z.strictObject({
      connectionId,
      kind: ConnectionInfoSchema.shape.kind,
      serverVersion: z.string(),
    }),
  },
  /**
   * Who the caller is and what they may do on each connection they can see
   * (the page shows it and disables what is not allowed, with the reason).
   */
  'console.session': { params: z.strictObject({}), result: SessionSchema },
  /**
   * Closes and opens the connection's backend again and rebuilds its index (after a data loss, or
   * to retry at once). Operator role. The answer is the connection as it starts reconnecting.
   */
  'connections.reopen': { params: z.strictObject({ id: connectionId }), result: ConnectionInfoSchema },
  ...viewMethods,
} as const;

export type MethodName = keyof typeof methods;
export type Params<M extends MethodName> = z.input<(typeof methods)[M]['params']>;
export type ParsedParams<M extends MethodName> = z.output<(typeof methods)[M]['params']>;
export type Result<M extends MethodName> = z.output<(typeof methods)[M]['result']>;

export const METHOD_NAMES = Object.keys(methods) as MethodName[];

/**
 * The methods that change a lease, by the action a refusal names. A read-only web server refuses
 * them before the service is asked (which refuses them on read-only connections as well).
 */
export const LEASE_WRITE_ACTIONS: Readonly<
  Partial<Record<MethodName, 'force-release' | 'request-release' | 'recover'>>
> = {
  'lease.forceRelease': 'force-release',
  'lease.forceReleaseMany': 'force-release',
  'lease.requestRelease': 'request-release',
  'connection.recover': 'recover',
};

export function isMethodName(name: unknown): name is MethodName {
  return typeof name === 'string' && Object.hasOwn(methods, name);
}

/** Pushed to subscribers. `seq` increases by one per event per connection, so a gap is visible. */
export const ConsoleEventSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('leases'),
    connectionId,
    seq: ms,
    /** Changed or new rows (latest version). */
    upserts: z.array(LeaseRowSchema),
    /** Work ids that no longer exist (pruned). */
    removed: z.array(id),
    serverTime: ms,
    /** The connection's heartbeat check time once this event is applied (see HeartbeatCheckSchema.asOf). */
    heartbeatsAsOf: ms.nullable().optional(),
  }),
  z.strictObject({
    type: z.literal('connection'),
    connection: ConnectionInfoSchema,
  }),
  z.strictObject({
    /** The model was rebuilt (after a gap in the backend's change feed): fetch a new snapshot. */
    type: z.literal('resync'),
    connectionId,
    seq: ms,
  }),
  z.strictObject({
    type: z.literal('connections'),
    connections: z.array(ConnectionInfoSchema),
  }),
  ViewEventSchema,
  ViewErrorEventSchema,
  JobEventSchema,
]);
export type ConsoleEvent = z.infer<typeof ConsoleEventSchema>;

/** The request envelope every transport carries. */
export const RequestEnvelopeSchema = z.strictObject({
  method: z.string().max(100),
  params: z.unknown(),
});

export type ResponseEnvelope<T = unknown> = { ok: true; result: T } | { ok: false; error: ErrorDataWire };

/**
 * The API as the renderer sees it, whatever the transport: one `call` per
 * request and one event subscription. Implemented by the web client
 * (fetch + WebSocket), the Electron preload bridge, and in tests directly by
 * the service.
 */
export interface ConsoleApi {
  call<M extends MethodName>(method: M, params: Params<M>): Promise<Result<M>>;
  /** Returns an unsubscribe function. */
  subscribe(listener: (event: ConsoleEvent) => void): () => void;
}

/**
 * `window.worklease` in the Electron renderer, defined here once for both
 * sides: the preload implements it (src/electron-common/preload-api.ts) and the
 * renderer's client consumes it. `call` resolves to the raw envelope (never
 * rejects for a console error) so the client turns it into a result or
 * rebuilds the error with the same `code`, exactly as for the web transport.
 */
export interface WorkleaseBridge {
  call<M extends MethodName>(method: M, params: Params<M>): Promise<ResponseEnvelope<Result<M>>>;
  /**
   * Receives every console event. Like the web transport, a new subscriber
   * first gets a `connections` event with the current list. Returns an
   * unsubscribe function.
   */
  subscribe(listener: (event: ConsoleEvent) => void): () => void;
}
