/**
 * The security log of a served console: one JSON line on stderr per event an
 * operator may have to act on (who signed in, who failed, who was refused,
 * what was revoked), and a counter per event kind for `/metrics`.
 *
 * A line never holds a secret: no token, no session id or secret, no proxy
 * secret, no cookie. A session is named by `session`, the first 12 hex digits
 * of the SHA-256 of its server-side key (itself a hash of the cookie value), so
 * lines about one session can be told apart and correlated and nothing in them
 * signs anyone in. Repeated refusals from one address are written once a
 * minute (with how many were folded in) and counted every time, so a flood
 * cannot flood the log.
 */

/** Every kind of event, as written in the `event` field and the `event` label of the counter. */
export const SECURITY_EVENTS = [
  'sign-in',
  'sign-in-failed',
  'sign-in-throttled',
  'sign-out',
  'sign-out-everywhere',
  'session-expired',
  'session-revoked',
  'proxy-refused',
  'forbidden',
  'cap-refused',
  'config-reloaded',
] as const;
export type SecurityEvent = (typeof SECURITY_EVENTS)[number];

export interface SecurityFields {
  user?: string | undefined;
  via?: string | undefined;
  address?: string | undefined;
  session?: string | undefined;
  reason?: string | undefined;
  method?: string | undefined;
  count?: number | undefined;
}

/** Events whose lines are folded per address and reason (they come in floods). */
const FOLDED: ReadonlySet<SecurityEvent> = new Set([
  'sign-in-failed',
  'sign-in-throttled',
  'proxy-refused',
  'cap-refused',
]);
const FOLD_MS = 60_000;

export class SecurityLog {
  private readonly counts = new Map<SecurityEvent, number>(SECURITY_EVENTS.map((e) => [e, 0]));
  private readonly folded = new Map<string, { at: number; skipped: number }>();

  /**
   * @param maxKeys Addresses (with event and reason) remembered for folding; past it the least
   *   recently seen are forgotten, and each then writes a line again. Default 10 000, like the limits'.
   */
  constructor(
    private readonly write: (line: string) => void = (line) => process.stderr.write(line),
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 10_000,
  ) {}

  record(event: SecurityEvent, fields: SecurityFields = {}): void {
    this.counts.set(event, (this.counts.get(event) ?? 0) + 1);
    const at = this.now();
    let count: number | undefined;
    if (FOLDED.has(event)) {
      const key = `${event}\0${fields.address ?? ''}\0${fields.reason ?? ''}`;
      const seen = this.folded.get(key);
      if (seen !== undefined && at - seen.at < FOLD_MS) {
        seen.skipped++;
        return;
      }
      if (seen !== undefined) count = seen.skipped + 1;
      this.folded.delete(key);
      this.folded.set(key, { at, skipped: 0 });
      if (this.folded.size > this.maxKeys) this.folded.delete(this.folded.keys().next().value as string);
    }
    const line: Record<string, unknown> = { time: new Date(at).toISOString(), log: 'security', event };
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) line[k] = v;
    if (count !== undefined && count > 1) line.count = count;
    this.write(`${JSON.stringify(line)}\n`);
  }

  /** Events by kind since start (every kind present, zeros included). */
  snapshot(): Record<SecurityEvent, number> {
    return Object.fromEntries(this.counts) as Record<SecurityEvent, number>;
  }
}
