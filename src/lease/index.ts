/**
 * `worklease/lease`: the contract, its errors and the holder layer, without
 * `openBackend` — no backend module, not even a lazy one. For code that is
 * handed a {@link LeaseBackend} by its caller.
 */
export type { Deposed, Leadership, LeadOptions, Term } from './election.ts';
export { lead } from './election.ts';
export * from './errors.ts';
export type { GroupMember, GroupOptions, RevokeReason } from './group.ts';
export { joinGroup, memberWorkId } from './group.ts';
export { DEFAULT_HISTORY_KEEP_PER_ITEM, DEFAULT_HISTORY_MAX_AGE_MS } from './history-types.ts';
export type {
  ClaimOptions,
  HeartbeatOptions,
  HolderOptions,
  LeaseHolder,
  LossReason,
  WithLeaseOptions,
  WorkSignals,
} from './holder.ts';
export { claim, DEFAULT_HOLDER_TTL_MS, withLease } from './holder.ts';
export type { Logger, TelemetryOptions } from './telemetry.ts';
export type * from './types.ts';
export { DEFAULT_MAX_STATE_BYTES, MAX_ID_LENGTH, MAX_TTL_MS } from './validate.ts';
