/**
 * Why an open failed, when the error alone cannot say: a TLS client at a plain server waits for a
 * handshake that never comes (a connect timeout), and a plain client at a TLS server is reset
 * (ECONNRESET). Only after an open failed like that, one probe in the other mode tells the two
 * apart from a server that is merely slow or gone: a plain PING answered in RESP, or a TLS
 * handshake that completes (the certificate is not checked: the probe sends nothing over it).
 */
import net from 'node:net';
import tls from 'node:tls';
import { BackendUnavailableError, ErrorCode, type WorkleaseError } from '../../lease/errors.ts';
import { type RedisTarget, tlsFor } from './connection.ts';

/** Resolves true when the server at `host:port` answers `PING` in plain RESP within `timeoutMs`. */
function speaksPlain(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (answer: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('connect', () => socket.write('PING\r\n'));
    // '+PONG', or an error reply ('-NOAUTH …', '-DENIED …'): either way the server speaks RESP in the clear.
    socket.once('data', (chunk: Buffer) => done(chunk[0] === 0x2b || chunk[0] === 0x2d));
    socket.on('error', () => done(false));
    socket.on('close', () => done(false));
  });
}

/** Resolves true when a TLS handshake with `host:port` completes within `timeoutMs`. */
function speaksTls(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host, port, rejectUnauthorized: false, ...tlsFor(host) });
    const done = (answer: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('secureConnect', () => done(true));
    socket.on('error', () => done(false));
    socket.on('close', () => done(false));
  });
}

/**
 * `err` (an open's failure on a standalone target), with a TLS hint and `details.reason: 'tls'`
 * when a probe shows that the server speaks the other mode; otherwise `err` unchanged.
 */
export async function withTlsHint(
  err: WorkleaseError,
  target: RedisTarget,
  timeoutMs: number,
): Promise<WorkleaseError> {
  const details = (err.details ?? {}) as Record<string, unknown>;
  if (err.code !== ErrorCode.BACKEND_UNAVAILABLE || details.reason !== undefined) return err;
  if (target.kind !== 'redis' || target.sentinel !== undefined) return err;
  const { host, port } = target.nodes[0]!;
  const other = target.tls
    ? await speaksPlain(host, port, timeoutMs)
    : await speaksTls(host, port, timeoutMs);
  if (!other) return err;
  const hint = target.tls
    ? 'the server does not speak TLS here (it answered a plain PING): use redis:// (or tls=false), or its TLS port'
    : 'the server expects TLS here (it completed a TLS handshake): use rediss:// (or tls=true)';
  return new BackendUnavailableError(`${err.message} — ${hint}`, {
    cause: err,
    details: { ...details, reason: 'tls' },
  });
}
