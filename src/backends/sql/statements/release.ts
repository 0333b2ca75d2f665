/**
 * release: `UPDATE … WHERE work_id = $1 AND <token = $2 AND live, or else the refusal>` setting
 * the expiry 1 ms in the past and `ended = 'released'` (a clean handoff for the next holder), and
 * the end NOTIFY in the RETURNING when a waiter asked for it (migration 11). Refusals as
 * checkpoint's (checkpoint.ts). The `released` history row (migration 13) is inserted from the
 * UPDATE's RETURNING in the same statement.
 *
 * $1 work_id, $2 token.
 */
import type { LeaseFragments } from './fragments.ts';
import { NOW } from './fragments.ts';

/** `history` false: without the history row, for `npm run bench:history` only (see acquire.ts). */
export function releaseStatement(
  f: LeaseFragments,
  history = true,
): { name: string; text: string; hot: true } {
  const { s, L, accepts, ends, notifyEnded } = f;
  const update = `UPDATE ${L} l SET
  ${ends(NOW, 'released', 'releases')}
WHERE l.work_id = $1 AND ${accepts}`;
  if (!history) {
    return {
      name: 'wl_release_no_history',
      hot: true,
      text: `\n${update}\nRETURNING l.expires_at, ${notifyEnded('l')}`,
    };
  }
  return {
    name: 'wl_release',
    hot: true,
    text: `
WITH r AS (
${update}
RETURNING l.work_id, l.holder_id, l.token, l.released_at, l.state_size, l.expires_at, ${notifyEnded('l')}
),
h AS (
  INSERT INTO ${s}.history (work_id, at, kind, holder_id, token, checkpoint_bytes)
  SELECT r.work_id, r.released_at, 'released', r.holder_id, r.token, r.state_size FROM r
)
SELECT r.expires_at, r.notified FROM r`,
  };
}
