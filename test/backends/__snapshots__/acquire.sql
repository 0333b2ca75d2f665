-- wl_acquire
WITH a AS (
INSERT INTO "worklease".leases AS l (work_id, holder_id, token, expires_at, ttl_ms, step_id, acquired_at,
    clean_handoff, predecessor_end, last_op, version, change_xid)
  SELECT $1, $2, floor(extract(epoch FROM statement_timestamp()) * 1000000)::bigint, statement_timestamp() + $3::integer * interval '1 millisecond', $3::integer, $4, statement_timestamp(), true, 'none', 'acquired', 1,
    pg_current_xact_id()
  WHERE CASE WHEN $5::float8 IS NULL OR clock_timestamp() <= to_timestamp($5::float8 / 1000) THEN true ELSE "worklease".acquire_late($5::float8) END
  ON CONFLICT (work_id) DO UPDATE SET
    holder_id = EXCLUDED.holder_id,
    token = greatest(l.token + 1, EXCLUDED.token),
    expires_at = EXCLUDED.expires_at,
    ttl_ms = EXCLUDED.ttl_ms,
    step_id = EXCLUDED.step_id,
    acquired_at = EXCLUDED.acquired_at,
    renewed_at = NULL,
    released_at = NULL,
    clean_handoff = coalesce(l.ended = 'released', false),
    predecessor_end = coalesce(l.ended, 'expired'),
    ended = NULL,
    release_requested_at = NULL,
    release_requested_by = NULL,
    release_request_reason = NULL,
    wanted_until = NULL,
    last_op = 'acquired',
    version = l.version + 1,
    acquisitions = l.acquisitions + 1,
    change_xid = EXCLUDED.change_xid
  WHERE CASE WHEN NOT ($5::float8 IS NULL OR clock_timestamp() <= to_timestamp($5::float8 / 1000)) THEN "worklease".acquire_late($5::float8)
    WHEN l.held_at IS NOT NULL THEN "worklease".lease_on_hold(l.held_at, l.held_by, l.hold_reason)
    WHEN l.expires_at <= EXCLUDED.acquired_at THEN CASE WHEN l.ended IS NULL AND l.last_op <> 'pruned'
      THEN "worklease".lease_expired(l.work_id, l.holder_id, l.token, l.expires_at, l.state_size) ELSE true END
    ELSE "worklease".lease_held(l.token, l.expires_at, l.holder_id) END
RETURNING l.work_id, l.holder_id, l.token, l.expires_at, l.acquired_at, l.state_size
),
h AS (
  INSERT INTO "worklease".history (work_id, at, kind, holder_id, token, checkpoint_bytes)
  SELECT a.work_id, a.acquired_at, 'acquired', a.holder_id, a.token, a.state_size FROM a
),
hs AS (
  INSERT INTO "worklease".handoff_states (work_id, token, state)
  SELECT a.work_id, a.token, st.state FROM a JOIN "worklease".lease_states st ON st.work_id = a.work_id
  ON CONFLICT (work_id) DO UPDATE SET token = EXCLUDED.token, state = EXCLUDED.state
)
SELECT a.token, a.expires_at FROM a
