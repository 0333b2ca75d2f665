/**
 * Node.js socket error codes (`err.code`) that mean the connection to a server
 * is gone or never came up. Every server backend classifies them as
 * BACKEND_UNAVAILABLE; they live here so the backends share one list.
 */
export const SOCKET_ERRNOS: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ERR_SOCKET_CLOSED',
  'ERR_STREAM_DESTROYED',
]);
