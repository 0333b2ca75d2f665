-- wl_renew
UPDATE "worklease".leases l SET
  renewed_at = statement_timestamp(),
  expires_at = statement_timestamp() + $3::integer * interval '1 millisecond',
  ttl_ms = $3::integer,
  version = l.version + 1
WHERE l.work_id = $1 AND CASE WHEN l.token = $2 AND l.expires_at > statement_timestamp() AND l.ended IS NULL AND l.last_op <> 'pruned' THEN true
    WHEN l.work_id = $1 THEN "worklease".lease_refused(l.token, l.expires_at, l.last_op) ELSE false END
RETURNING l.expires_at, CASE WHEN l.release_requested_at IS NULL THEN NULL ELSE json_build_array(
    floor(extract(epoch FROM l.release_requested_at) * 1000)::int8, l.release_requested_by, l.release_request_reason)::text END AS rq
