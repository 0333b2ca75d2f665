/**
 * The one entry point transports use: validates an untrusted method name and
 * params against the contract, runs the service, and turns the outcome into a
 * {@link ResponseEnvelope}. Never throws; every failure is an envelope with a
 * stable error code, so the web server and Electron main answer alike.
 */
import { errorToData, InvalidArgumentError } from '../lease/errors.ts';
import { isMethodName, methods, type ParsedParams, type ResponseEnvelope } from './api.ts';
import { type ConsoleService, paramsError } from './service.ts';

export async function dispatch(
  service: Pick<ConsoleService, 'handle'>,
  method: unknown,
  params: unknown,
): Promise<ResponseEnvelope> {
  try {
    if (!isMethodName(method)) {
      const shown = typeof method === 'string' ? `'${method.slice(0, 100)}'` : typeof method;
      throw new InvalidArgumentError(`unknown method ${shown}`, {
        details: { known: Object.keys(methods) },
      });
    }
    const parsed = methods[method].params.safeParse(params ?? {});
    if (!parsed.success) throw paramsError(method, parsed.error.issues);
    const result = await service.handle(method, parsed.data as ParsedParams<typeof method>);
    return { ok: true, result };
  } catch (err) {
    return { ok: false, error: errorToData(err) };
  }
}
