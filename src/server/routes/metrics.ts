/**
 * `GET /metrics` on the console's own listener (`serve --metrics`): Prometheus
 * text for an identified caller, with the connections that caller may see and
 * the security log's counters.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from '../../console/access.ts';
import type { ConsoleService } from '../../console/service.ts';
import { InvalidArgumentError } from '../../lease/errors.ts';
import { formatMetrics, METRICS_CONTENT_TYPE } from '../metrics.ts';
import { errData, sendError } from '../respond.ts';
import type { SecurityLog } from '../security-log.ts';

export function createMetricsRoute(options: {
  service: Pick<ConsoleService, 'metrics'>;
  log: SecurityLog;
}): (req: IncomingMessage, res: ServerResponse, caller: Caller) => void {
  return (req, res, caller) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      sendError(res, 405, errData(new InvalidArgumentError('use GET for /metrics')));
      return;
    }
    const body = formatMetrics(options.service.metrics(caller), options.log.snapshot());
    res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
