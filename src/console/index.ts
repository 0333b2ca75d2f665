/**
 * The console core (no Electron, no DOM): the service behind every console
 * transport, its fleet model, and the pieces the CLI reuses.
 */

export { type Caller, pgliteRefusal, roleOn, type SharedConsoleOptions } from './access.ts';
export * from './api.ts';
export { type ClockSample, ServerClock, type ServerClockOptions } from './clock.ts';
export { decodeCheckpoint, hexDump } from './decode/page.ts';
export { dispatch } from './dispatch.ts';
export * from './export.ts';
export { FleetModel, type FleetModelOptions, type ModelEvent, type ModelSnapshot } from './model.ts';
export {
  configDir,
  defaultProfilesPath,
  type Profile,
  ProfileStore,
  type SecretCodec,
  stripSecrets,
  urlHasSecret,
} from './profiles.ts';
export { toAuditWire, toLeaseRow } from './rows.ts';
export {
  type ConnectionInput,
  type ConsoleService,
  type ConsoleServiceOptions,
  createConsoleService,
  splitConsoleUrl,
} from './service.ts';
export { countFleet, RateRecorder } from './stats.ts';
export { judgedAt, leaseStatus, nextStatusChangeAt } from './status.ts';
