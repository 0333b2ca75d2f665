/**
 * `POST /api/call`: one console API call, for an identified caller. The body
 * is capped, must be JSON of the request envelope, and the method's params are
 * validated by `dispatch`; a read-only console refuses lease writes here as
 * well as in the service. A call the service refuses as FORBIDDEN goes to the
 * security log.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from '../../console/access.ts';
import { isMethodName, LEASE_WRITE_ACTIONS, RequestEnvelopeSchema } from '../../console/api.ts';
import { dispatch } from '../../console/dispatch.ts';
import type { ConsoleService } from '../../console/service.ts';
import { ForbiddenError, InvalidArgumentError } from '../../lease/errors.ts';
import { errData, STATUS_BY_CODE, sendError, sendJson } from '../respond.ts';
import type { SecurityLog } from '../security-log.ts';

class BodyTooLarge extends Error {}

/** The request body, at most `maxBody` bytes (past it: {@link BodyTooLarge}, the rest read and dropped). */
export function readBody(req: IncomingMessage, maxBody: number): Promise<Buffer> {
  return new Promise((resolveBody, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > maxBody) {
      req.resume();
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBody) {
        // The rest is read and dropped (bounded by requestTimeout) so the
        // client gets the 413 instead of a reset connection.
        chunks.length = 0;
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolveBody(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function createApiRoute(options: {
  service: Pick<ConsoleService, 'handle'>;
  readOnly: boolean;
  maxBody: number;
  log: SecurityLog;
}): (req: IncomingMessage, res: ServerResponse, caller: Caller, address: string) => Promise<void> {
  const { service, readOnly, maxBody, log } = options;
  return async (req, res, caller, address) => {
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      sendError(res, 405, errData(new InvalidArgumentError('use POST for /api/call')));
      return;
    }
    const type = req.headers['content-type'] ?? '';
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      sendError(res, 415, errData(new InvalidArgumentError('Content-Type must be application/json')));
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(req, maxBody);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        res.setHeader('Connection', 'close');
        sendError(res, 413, errData(new InvalidArgumentError(`request body exceeds ${maxBody} bytes`)));
      } else {
        res.destroy();
      }
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      sendError(res, 400, errData(new InvalidArgumentError('request body is not valid JSON')));
      return;
    }
    const envelope = RequestEnvelopeSchema.safeParse(json);
    if (!envelope.success) {
      sendError(
        res,
        400,
        errData(
          new InvalidArgumentError('request body must be {"method": string, "params": object}', {
            details: { issues: envelope.error.issues.map((i) => i.message) },
          }),
        ),
      );
      return;
    }
    const { method, params } = envelope.data;
    const action = readOnly && isMethodName(method) ? LEASE_WRITE_ACTIONS[method] : undefined;
    if (action !== undefined) {
      log.record('forbidden', { user: caller.user, via: caller.via, address, method, reason: 'read-only' });
      sendError(res, 403, errData(new ForbiddenError(`the console is read-only: ${action} is refused`)));
      return;
    }
    const out = await dispatch(service, method, params, caller);
    if (!out.ok && out.error.code === 'FORBIDDEN') {
      log.record('forbidden', {
        user: caller.user,
        via: caller.via,
        address,
        method: method.slice(0, 100),
        reason: out.error.message.slice(0, 200),
      });
    }
    sendJson(res, out.ok ? 200 : (STATUS_BY_CODE[out.error.code] ?? 500), out);
  };
}
