-- wl_checkpoint
WITH upd AS (
  UPDATE "worklease".leases l SET
    state_size = octet_length($3::bytea),
    checkpointed_at = statement_timestamp(),
    renewed_at = statement_timestamp(),
    expires_at = statement_timestamp() + $4::integer * interval '1 millisecond',
    ttl_ms = $4::integer,
    version = l.version + 1
  WHERE l.work_id = $1 AND CASE WHEN l.token = $2 AND l.expires_at > statement_timestamp() AND l.ended IS NULL AND l.last_op <> 'pruned' THEN true
    WHEN l.work_id = $1 THEN "worklease".lease_refused(l.token, l.expires_at, l.last_op) ELSE false END
  RETURNING l.work_id, l.expires_at, CASE WHEN l.release_requested_at IS NULL THEN NULL ELSE json_build_array(
    floor(extract(epoch FROM l.release_requested_at) * 1000)::int8, l.release_requested_by, l.release_request_reason)::text END AS rq
)
INSERT INTO "worklease".lease_states AS st (work_id, state) SELECT upd.work_id, $3::bytea FROM upd
ON CONFLICT (work_id) DO UPDATE SET state = EXCLUDED.state
RETURNING (SELECT upd.expires_at FROM upd), (SELECT upd.rq FROM upd)
