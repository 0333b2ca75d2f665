/** The console's web mode (HTTP + WebSocket transport over the console service). */
export { resolveInside, startWebServer, type WebServer, type WebServerOptions } from './http.ts';
export {
  escapeLabel,
  formatMetrics,
  METRICS_CONTENT_TYPE,
  type MetricsServer,
  parseMetricsBind,
  startMetricsServer,
} from './metrics.ts';
