/**
 * `worklease/lease`: the contract, its errors and the holder layer, without
 * `openBackend` — no backend module, not even a lazy one. For code that is
 * handed a {@link LeaseBackend} by its caller.
 */
export * from './errors.ts';
export type {
  HeartbeatOptions,
  HolderOptions,
  LeaseHolder,
  LossReason,
  WithLeaseOptions,
} from './holder.ts';
export { claim, DEFAULT_HOLDER_TTL_MS, withLease } from './holder.ts';
export type * from './types.ts';
export { DEFAULT_MAX_STATE_BYTES, MAX_ID_LENGTH, MAX_TTL_MS } from './validate.ts';
