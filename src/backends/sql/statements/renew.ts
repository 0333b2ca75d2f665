/**
 * renew: `UPDATE … WHERE work_id = $1 AND <token = $2 AND live, or else the refusal>`; a HOT update
 * (no indexed column written: migration 6). Outcomes as checkpoint's (checkpoint.ts): the new
 * expiry and the release request (`rq`); WL001 → FENCED / LEASE_EXPIRED; no row → FENCED.
 *
 * $1 work_id, $2 token, $3 ttl_ms.
 */
import type { LeaseFragments } from './fragments.ts';
import { MS, NOW } from './fragments.ts';

export function renewStatement(f: LeaseFragments): { name: string; text: string; hot: true } {
  const { L, accepts, request } = f;
  return {
    name: 'wl_renew',
    hot: true,
    text: `
UPDATE ${L} l SET
  renewed_at = ${NOW},
  expires_at = ${NOW} + $3::integer ${MS},
  ttl_ms = $3::integer,
  version = l.version + 1
WHERE l.work_id = $1 AND ${accepts}
RETURNING l.expires_at, ${request}`,
  };
}
