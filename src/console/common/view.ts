/**
 * The fleet view API (issue 43): the console server filters, sorts, pages and counts the fleet;
 * the browser holds only the rows it shows. Browser-safe: zod and the console's wire types only,
 * no Node, no DOM, no backend. The renderer imports console code from src/console/common/ alone.
 *
 * - `fleet.view` (request): one window of the fleet under a filter and a sort, by keyset paging.
 *   A cursor is opaque: it names the sort key and the work id of the row it continues from, and a
 *   direction. `nextCursor` continues after the last row, `prevCursor` before the first.
 * - A view subscription (WebSocket message `view.watch`, or `fleet.watch` on IPC/direct): the
 *   server pushes the window again as a `view` event whenever its rows, its total or the fleet's
 *   counts change, at most {@link VIEW_PUSH_PER_SECOND} times a second.
 * - Bulk force-release and export run on the server by filter over one snapshot of the matching
 *   work ids, as jobs with progress (`job` events, `job.get`).
 */
import * as z from 'zod';
import { ErrorDataSchema, LeaseRowSchema, LeaseStatusSchema } from './wire.ts';

const connectionId = z.string().min(1).max(100);
const ms = z.number().int().nonnegative();

/** Columns a view can be sorted by. Ties (and `workId` itself) are ordered by work id. */
export const VIEW_SORT_COLUMNS = [
  'workId',
  'holderId',
  'status',
  'fencingToken',
  'expiresAt',
  'acquiredAt',
  'renewedAt',
  'checkpointedAt',
  'ttlMs',
  'checkpointSize',
] as const;
export const ViewSortColumnSchema = z.enum(VIEW_SORT_COLUMNS);
export type ViewSortColumn = z.infer<typeof ViewSortColumnSchema>;

/**
 * Every part optional; all given parts must match. Text is compared as stored (UTF-16 code
 * units), `search` case-insensitively.
 */
export const ViewFilterSchema = z.strictObject({
  /** Only these statuses (judged at the view's `statusAt`); absent or empty: every status. */
  statuses: z.array(LeaseStatusSchema).max(6).optional(),
  /** Holder id prefix (current or last holder). */
  holder: z.string().max(512).optional(),
  /** Work id prefix. */
  workIdPrefix: z.string().max(512).optional(),
  /** Substring of the work id or the holder id, case-insensitive. */
  search: z.string().max(200).optional(),
});
export type ViewFilter = z.infer<typeof ViewFilterSchema>;

export const ViewSortSchema = z.strictObject({
  column: ViewSortColumnSchema,
  dir: z.enum(['asc', 'desc']),
});
export type ViewSort = z.infer<typeof ViewSortSchema>;
export const DEFAULT_VIEW_SORT: ViewSort = { column: 'workId', dir: 'asc' };

/** Most rows in one window. */
export const MAX_VIEW_LIMIT = 1000;
/** Most `view` events one subscription receives per second. */
export const VIEW_PUSH_PER_SECOND = 10;

/**
 * One window of a view. Give `cursor` (from an earlier answer) or `offset` (a position in the
 * filtered, sorted fleet: for a scroll bar's jump; costs a scan when a filter other than a
 * work-id prefix or statuses alone is set), or neither (the first rows).
 */
export const ViewQuerySchema = z
  .strictObject({
    connectionId,
    filter: ViewFilterSchema.default({}),
    sort: ViewSortSchema.default(DEFAULT_VIEW_SORT),
    cursor: z.string().min(1).max(2048).nullable().default(null),
    offset: z.number().int().nonnegative().max(100_000_000).optional(),
    limit: z.number().int().min(1).max(MAX_VIEW_LIMIT).default(100),
  })
  .refine((q) => q.cursor === null || q.offset === undefined, {
    message: 'give a cursor or an offset, not both',
    path: ['offset'],
  });
export type ViewQuery = z.input<typeof ViewQuerySchema>;
export type ParsedViewQuery = z.output<typeof ViewQuerySchema>;

/** Whole-fleet counts by status, from the console server's index (never read from the rows shown). */
export const ViewCountsSchema = z.strictObject({
  /** Leases in the fleet (every status). While `loading`, what was read so far: NOT a total. */
  total: ms,
  byStatus: z.record(LeaseStatusSchema, ms),
});
export type ViewCounts = z.infer<typeof ViewCountsSchema>;

/**
 * The index is being built (first load, or a reload after a gap or a data loss): `read` leases
 * so far of about `estimate` (the backend's count when it has one, else null). Every total and
 * count of such an answer is a lower bound and must be shown as loading, never as a total.
 */
export const ViewLoadingSchema = z
  .strictObject({
    read: ms,
    estimate: ms.nullable(),
    /**
     * The whole fleet's counts by status from one aggregate read of the backend (PostgreSQL and
     * PGlite), exact at backend time `at` and not after: show them with their age (statusAt - at),
     * apart from the index's counts. Absent until the backend answered, and where it cannot count.
     */
    counted: z.strictObject({ at: ms, total: ms, byStatus: z.record(LeaseStatusSchema, ms) }).optional(),
  })
  .nullable();

export const ViewResultSchema = z.strictObject({
  connectionId,
  /** The window, in the view's order. */
  rows: z.array(LeaseRowSchema),
  /** Each row's status at `statusAt` (the same judgement the filter and the counts used). */
  statuses: z.array(LeaseStatusSchema),
  /** Position of the first row in the filtered, sorted fleet (0-based). */
  offset: ms,
  /** Continues after the last row; null when it is the last. */
  nextCursor: z.string().nullable(),
  /** Continues before the first row; null when it is the first. */
  prevCursor: z.string().nullable(),
  /** Rows matching the filter in the whole fleet (a lower bound while `loading`). */
  total: ms,
  counts: ViewCountsSchema,
  loading: ViewLoadingSchema,
  /** Backend time the index was last confirmed current at (the connection's syncedAt); null before. */
  asOf: ms.nullable(),
  /** Backend time statuses were judged at: min(backend now, heartbeatsAsOf). */
  statusAt: ms,
  /** Start of the last complete heartbeat check (see HeartbeatCheckSchema.asOf). */
  heartbeatsAsOf: ms.nullable(),
  /** The connection's fleet generation: it changes when the index was rebuilt (gap, data loss). */
  generation: ms,
  /** Index change sequence this answer reflects; a `view` event with a higher one supersedes it. */
  seq: ms,
});
export type ViewResult = z.infer<typeof ViewResultSchema>;

/** A client-chosen name of one subscription (unique per client; 8..64 of [A-Za-z0-9_-]). */
export const WatchIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{8,64}$/, 'a watch id (8-64 of A-Z a-z 0-9 _ -)');

/**
 * WebSocket messages from the page (`/api/events`). Invalid ones are answered with a
 * `view.error` event (watchId null when unreadable), never acted on. A client holds at most
 * {@link MAX_WATCHES} subscriptions; `view.watch` with a known watchId replaces its query
 * (scrolling, a new filter), which answers with a `view` event at once.
 */
export const ClientMessageSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('view.watch'), watchId: WatchIdSchema, query: ViewQuerySchema }),
  z.strictObject({ type: z.literal('view.unwatch'), watchId: WatchIdSchema }),
]);
export type ClientMessage = z.input<typeof ClientMessageSchema>;
export const MAX_WATCHES = 32;

/** Pushed to the subscribing client only. */
export const ViewEventSchema = z.strictObject({
  type: z.literal('view'),
  watchId: WatchIdSchema,
  view: ViewResultSchema,
});
export type ViewEvent = z.infer<typeof ViewEventSchema>;

/** A subscription failed (unknown connection, no role, bad query): it is dropped. */
export const ViewErrorEventSchema = z.strictObject({
  type: z.literal('view.error'),
  watchId: WatchIdSchema.nullable(),
  error: ErrorDataSchema,
});
export type ViewErrorEvent = z.infer<typeof ViewErrorEventSchema>;

/** A server-side job over one snapshot of the matching work ids. */
export const JobSchema = z.strictObject({
  jobId: z.string(),
  connectionId,
  kind: z.enum(['force-release', 'export']),
  /** Work ids in the snapshot. */
  total: ms,
  done: ms,
  ok: ms,
  failed: ms,
  finished: z.boolean(),
  /** force-release: the audit batch id shared by every entry written. */
  batchId: z.string().nullable(),
  /** The first 100 refusals (CONFLICT when a token moved, …). */
  failures: z.array(z.strictObject({ workId: z.string(), code: z.string(), message: z.string() })),
  /** Backend time the snapshot's statuses were judged at. */
  statusAt: ms,
});
export type Job = z.infer<typeof JobSchema>;

export const JobEventSchema = z.strictObject({ type: z.literal('job'), job: JobSchema });
export type JobEvent = z.infer<typeof JobEventSchema>;

/** Request methods of the fleet view; merged into the `methods` table of src/console/api.ts. */
export const viewMethods = {
  /** One window of the fleet (viewer role). NOT_FOUND details.what = 'connection' for an unknown connection. */
  'fleet.view': { params: ViewQuerySchema, result: ViewResultSchema },
  /**
   * Subscribes to a view over a transport without per-client sockets (Electron IPC, direct
   * calls): the answer is the first window, and `view` events for `watchId` follow through
   * `subscribe`. The web console uses the WebSocket message `view.watch` instead.
   */
  'fleet.watch': {
    params: z.strictObject({ watchId: WatchIdSchema, query: ViewQuerySchema }),
    result: ViewResultSchema,
  },
  'fleet.unwatch': { params: z.strictObject({ watchId: WatchIdSchema }), result: z.strictObject({}) },
  /**
   * Force-releases every lease matching `filter` at the moment of the call (a snapshot of the
   * matching work ids and their tokens, each released by compare-and-set on that token). Refused
   * with CONFLICT (details.count: the count now) when `expectCount` (the count the operator saw
   * and typed) differs from the snapshot's. Operator role, refused on read-only connections.
   * Runs as a job: the answer is its first state; `job` events report progress.
   */
  'lease.forceReleaseMatching': {
    params: z.strictObject({
      connectionId,
      filter: ViewFilterSchema,
      expectCount: z.number().int().min(1).max(10_000_000),
      reason: z.string().trim().min(1).max(2000),
      operator: z.string().trim().min(1).max(200).optional(),
    }),
    result: JobSchema,
  },
  /** A job's state (the caller's own jobs); NOT_FOUND once it was dropped (10 min after it finished). */
  'job.get': { params: z.strictObject({ jobId: z.string().min(1).max(100) }), result: JobSchema },
  /**
   * The leases matching `filter` as CSV lines or JSON objects, in the view's sort, over one
   * snapshot: the first call (no `jobId`) takes the snapshot of matching work ids (and judges
   * their statuses once); later calls pass `jobId` and the `nextOffset` they got. Rows are as
   * the index holds them when their page is read (a lease pruned since is left out). Viewer role.
   */
  'fleet.exportMatching': {
    params: z.strictObject({
      connectionId,
      format: z.enum(['csv', 'json']),
      filter: ViewFilterSchema.default({}),
      sort: ViewSortSchema.default(DEFAULT_VIEW_SORT),
      jobId: z.string().min(1).max(100).optional(),
      offset: ms.default(0),
      limit: z.number().int().min(1).max(5000).default(5000),
    }),
    result: z.strictObject({
      jobId: z.string(),
      records: z.array(z.string()),
      /** Work ids in the snapshot. */
      total: ms,
      nextOffset: ms.nullable(),
      statusAt: ms,
    }),
  },
} as const;
