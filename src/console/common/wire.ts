/**
 * The console's wire forms of an error and of one lease row: shared by the request/event contract
 * (src/console/api.ts) and the fleet view (view.ts). Browser-safe: zod and the error codes only.
 */
import * as z from 'zod';
import { ErrorCode, type ErrorData } from '../../lease/errors.ts';

const id = z.string().min(1).max(512);
const token = z.string().regex(/^[1-9][0-9]{0,18}$/, 'a fencing token (decimal string)');
const ms = z.number().int().nonnegative();

/** The wire form of {@link ErrorCode}: the same codes, from the one table in src/lease/errors.ts. */
export const ErrorCodeSchema = z.enum(ErrorCode);

/** An error as it crosses IPC/HTTP: {@link ErrorData}, defined once in src/lease/errors.ts. */
export type ErrorDataWire = ErrorData;
export const ErrorDataSchema: z.ZodType<ErrorDataWire> = z.lazy(() =>
  z.object({
    name: z.string(),
    code: ErrorCodeSchema,
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
    cause: ErrorDataSchema.optional(),
  }),
);

/** Derived status of one lease (see src/console/status.ts for the rules). */
export const LeaseStatusSchema = z.enum([
  'live',
  'expiring',
  'expired',
  'released',
  'stuck',
  'force-released',
]);
export type LeaseStatus = z.infer<typeof LeaseStatusSchema>;
export const LEASE_STATUSES = LeaseStatusSchema.options;

/** An operator's request that the holder hand the lease over (backend clock, ms). */
export const ReleaseRequestWireSchema = z.strictObject({
  at: ms,
  operator: z.string().max(200),
  reason: z.string().max(2000),
});
export type ReleaseRequestWire = z.infer<typeof ReleaseRequestWireSchema>;

/** One lease as the console shows it. Never carries checkpoint bytes. */
export const LeaseRowSchema = z.strictObject({
  workId: id,
  holderId: id,
  fencingToken: token,
  expiresAt: ms,
  ttlMs: ms,
  stepId: z.string().nullable(),
  acquiredAt: ms,
  renewedAt: ms.nullable(),
  checkpointedAt: ms.nullable(),
  releasedAt: ms.nullable(),
  checkpointSize: ms.nullable(),
  cleanHandoff: z.boolean(),
  predecessorEnd: z.enum(['none', 'released', 'expired', 'force-released']),
  ended: z.enum(['released', 'force-released']).nullable(),
  version: z.string().regex(/^[0-9]{1,20}$/),
  /**
   * The pending release request, or null. The service always sends it; optional in the schema
   * only so rows built by older code still validate. Its age is server time minus `at`.
   */
  releaseRequest: ReleaseRequestWireSchema.nullable().optional(),
});
export type LeaseRow = z.infer<typeof LeaseRowSchema>;
