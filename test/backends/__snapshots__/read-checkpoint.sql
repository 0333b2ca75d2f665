-- wl_read_checkpoint
SELECT l.token, l.expires_at, l.last_op, l.clean_handoff, st.state
FROM "worklease".leases l LEFT JOIN "worklease".lease_states st ON st.work_id = l.work_id AND l.token = $2
WHERE l.work_id = $1
