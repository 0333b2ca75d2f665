/**
 * release: `UPDATE … WHERE work_id = $1 AND <token = $2 AND live, or else the refusal>` setting
 * the expiry 1 ms in the past and `ended = 'released'` (a clean handoff for the next holder), and
 * the end NOTIFY in the RETURNING when a waiter asked for it (migration 11). Refusals as
 * checkpoint's (checkpoint.ts).
 *
 * $1 work_id, $2 token.
 */
import type { LeaseFragments } from './fragments.ts';
import { NOW } from './fragments.ts';

export function releaseStatement(f: LeaseFragments): { name: string; text: string; hot: true } {
  const { L, accepts, ends, notifyEnded } = f;
  return {
    name: 'wl_release',
    hot: true,
    text: `
UPDATE ${L} l SET
  ${ends(NOW, 'released', 'releases')}
WHERE l.work_id = $1 AND ${accepts}
RETURNING l.expires_at, ${notifyEnded('l')}`,
  };
}
