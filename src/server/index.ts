/** The console's web mode (HTTP + WebSocket transport over the console service). */
export type { AuthOptions, ProxyOptions, UserEntry } from './auth.ts';
export type { LimitOptions } from './guards/limits.ts';
export type { SessionOptions } from './guards/sessions.ts';
export { resolveInside, startWebServer, type WebServer, type WebServerOptions } from './http.ts';
export {
  escapeLabel,
  formatMetrics,
  METRICS_CONTENT_TYPE,
  type MetricsServer,
  parseMetricsBind,
  startMetricsServer,
} from './metrics.ts';
export { SECURITY_EVENTS, type SecurityEvent } from './security-log.ts';
