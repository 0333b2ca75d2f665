/**
 * readCheckpoint (`SELECT`): one row; token differs, no row or pruned row → FENCED. The state column
 *   is only sent when the token matches, so a fenced caller costs no payload.
 *
 * $1 work_id, $2 token.
 */
import type { LeaseFragments } from './fragments.ts';

export function readCheckpointStatement(f: LeaseFragments): { name: string; text: string; hot: true } {
  const { L, S } = f;
  return {
    name: 'wl_read_checkpoint',
    hot: true,
    text: `
SELECT l.token, l.expires_at, l.last_op, l.clean_handoff, st.state
FROM ${L} l LEFT JOIN ${S} st ON st.work_id = l.work_id AND l.token = $2
WHERE l.work_id = $1`,
  };
}
