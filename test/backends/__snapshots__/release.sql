-- wl_release
WITH r AS (
UPDATE "worklease".leases l SET
  
    expires_at = statement_timestamp() - interval '1 millisecond',
    released_at = statement_timestamp(),
    ended = 'released',
    release_requested_at = NULL,
    release_requested_by = NULL,
    release_request_reason = NULL,
    last_op = 'released',
    version = l.version + 1,
    releases = l.releases + 1,
    change_xid = pg_current_xact_id()
WHERE l.work_id = $1 AND CASE WHEN l.token = $2 AND l.expires_at > statement_timestamp() AND l.ended IS NULL AND l.last_op <> 'pruned' THEN true
    WHEN l.work_id = $1 THEN "worklease".lease_refused(l.token, l.expires_at, l.last_op) ELSE false END
RETURNING l.work_id, l.holder_id, l.token, l.released_at, l.state_size, l.expires_at, CASE WHEN l.wanted_until > now() THEN pg_notify('wl_ended_worklease', l.work_id) END AS notified
),
h AS (
  INSERT INTO "worklease".history (work_id, at, kind, holder_id, token, checkpoint_bytes)
  SELECT r.work_id, r.released_at, 'released', r.holder_id, r.token, r.state_size FROM r
)
SELECT r.expires_at, r.notified FROM r
