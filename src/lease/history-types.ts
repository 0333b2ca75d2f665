/**
 * A work item's history and holds (docs/history.md): the types of {@link LeaseAdmin.history},
 * {@link LeaseAdmin.hold}, {@link LeaseAdmin.unhold} and {@link LeaseAdmin.handoffCheckpoint}.
 */

/**
 * What changed hands. `expired`: a lease that ran out without being released, recorded when the
 * next acquire (or a prune) notices it, with `at` the moment it ran out (backend clock).
 */
export type HistoryKind =
  | 'acquired'
  | 'released'
  | 'expired'
  | 'force-released'
  | 'release-requested'
  | 'held'
  | 'unheld';

/**
 * One ownership change of a work item. Written on ownership changes only (acquire, release, the
 * expiry noticed by the next acquire or by prune, force-release, request-release, hold, unhold),
 * never on renew or checkpoint.
 */
export interface HistoryEntry {
  /** Opaque, unique per backend; pass the last one of a page as {@link HistoryOptions.before}. */
  id: string;
  kind: HistoryKind;
  /** When it happened, by the backend's clock. */
  at: Date;
  /**
   * The holder of the lease the change concerns: the new holder for `acquired`, the holder that
   * lost or ended its lease for the others; for `held` / `unheld` the current or last holder.
   */
  holderId: string;
  /** The fencing token of that lease (for `force-released`, the token the holder had, not the bumped one). */
  token: bigint;
  /** Who acted: set for `force-released`, `release-requested`, `held`, `unheld`. */
  operator?: string;
  /** Why, as the operator gave it: set with `operator`. */
  reason?: string;
  /**
   * Size of the stored checkpoint at that moment, in bytes: set for `acquired` (the checkpoint the
   * new holder starts from), `released` and `force-released`, when one exists.
   */
  checkpointBytes?: number;
}

export interface HistoryOptions {
  /** Newest first; 1..1000, default 100. */
  limit?: number;
  /** Only entries older than the entry with this id (from a previous page). */
  before?: string;
}

/** Options of {@link LeaseAdmin.hold} and {@link LeaseAdmin.unhold}. */
export interface HoldOptions {
  /** Who did it (recorded in the audit log and the history). */
  operator: string;
  /** Why (recorded in the audit log and the history). Required, non-empty, at most 2 000 characters. */
  reason: string;
}

/** A hold on a work item, as stored (see {@link LeaseAdmin.hold}). */
export interface Hold {
  /** When it was put on hold, by the backend's clock. */
  at: Date;
  operator: string;
  reason: string;
}

/** History retention, applied by {@link LeaseAdmin.prune}. */
export interface HistoryRetention {
  /** Removes entries older than this. Default 30 days. */
  olderThanMs?: number;
  /** Keeps at most this many entries per work item (the newest). 1..1 000 000, default 1 000. */
  keepPerItem?: number;
}

/** 30 days: the default of {@link HistoryRetention.olderThanMs}. */
export const DEFAULT_HISTORY_MAX_AGE_MS = 30 * 24 * 3600 * 1000;
/** The default of {@link HistoryRetention.keepPerItem}. */
export const DEFAULT_HISTORY_KEEP_PER_ITEM = 1000;
