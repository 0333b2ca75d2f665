/**
 * The Lua scripts of the Redis backend: one script per call.
 *
 * Why a script is atomic: Redis runs a script to completion before it serves
 * any other command, so the read (HMGET), the decision and the writes of one
 * call see and leave a consistent lease; no client-side read-modify-write.
 * Every key a script touches carries the same bucket hash tag (see layout.ts),
 * so on Redis Cluster the whole script runs on the one master owning that slot.
 * Keys built inside a script (`leasePrefix .. workId` in the per-bucket admin
 * scripts) are in that same slot by construction.
 *
 * Time is the server's: `TIME` (allowed in Redis 7 scripts, which replicate
 * their effects, not the script). Milliseconds = seconds * 1000 + floor(µs / 1000).
 *
 * Replies tell every outcome apart, so a call never needs a second round trip:
 * the first element is a status word (`OK`, `HELD`, `FENCED`, `EXPIRED`,
 * `NOTFOUND`, `CONFLICT`), the rest is that outcome's payload, as documented on
 * each script. Numbers travel as decimal strings; tokens and versions are
 * exact up to 2^53.
 *
 * Every write bumps the lease's `version` and appends one entry (workId, kind
 * and the lease after the write, without state bytes) to the bucket's change
 * stream (`XADD … MAXLEN ~`) in the same script, so the change feed never
 * misses a write and never shows one that did not happen.
 *
 * Idempotence (what happens if a script ran but its reply was lost, and the
 * call is sent again): acquire → `HELD` (the first one took it) — or, if that
 * lease's ttl already ran out, a second acquisition with the next token;
 * renew/checkpoint → applied again (later expiry, one more version);
 * release → `EXPIRED` (it already ended); forceRelease → `CONFLICT` (token
 * moved on). So a re-send can turn a success into an error or take a second
 * token: the driver writes each call to the server at most once (index.ts,
 * connection.ts) and leaves retries to the caller.
 *
 * Cost (measured with INFO commandstats on Redis 7.0, loaded 2-core machine):
 * renew ≈ 23 µs of server time per call, of which HMGET of the 14 lease
 * fields ≈ 3, XADD ≈ 3, HSET ≈ 2, TIME < 0.2, the rest Lua (reply/argument
 * conversion, string building); the bench's raw HGET+HSET script ≈ 4 µs.
 * In isolation, Redis formatting a numeric argument (%.17g) cost more than
 * string.format('%d') in Lua, so numbers are turned into strings once.
 */
import { INFO_FIELDS, STREAM_MAXLEN } from './layout.ts';

const INFO = INFO_FIELDS.map((f) => `'${f}'`).join(', ');
/** `v[1], v[2], …` — a lease's INFO_FIELDS values held in the Lua table `v`, in order. */
const VALUES = INFO_FIELDS.map((_, i) => `v[${i + 1}]`).join(', ');
const FIELD_VALUES = INFO_FIELDS.map((f, i) => `'${f}', v[${i + 1}]`).join(', ');

/**
 * `now` (number) and `nows` (its decimal string). Numbers are turned into strings once, with
 * `string.format('%d')`: Redis would otherwise format every numeric argument with `%.17g` and
 * `table.concat` with `%.14g`, which together cost more than the rest of a renew.
 */
const NOW = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local nows = string.format('%d', now)`;

/**
 * `emit(stream, workId, kind, v)` appends one change carrying the lease as it is after the write:
 * the INFO_FIELDS values (strings) joined by LF into one `lease` field, never the state bytes. One
 * field instead of fourteen pairs keeps XADD cheap on the hot path; LF cannot occur in any value
 * (ids refuse control characters, the rest are numbers and fixed words).
 */
const EMIT = `
local function emit(stream, workId, kind, v)
  redis.call('XADD', stream, 'MAXLEN', '~', ${STREAM_MAXLEN}, '*', 'workId', workId, 'kind', kind,
    'lease', table.concat(v, '\\n'))
end`;

/**
 * Token check and liveness check shared by renew, checkpoint and release. ARGV[2] is the record's
 * token. Leaves the lease's INFO_FIELDS in `v` (missing ones as '') with the version already bumped,
 * and the stored expiry in `old` (number).
 */
const GUARD = `${EMIT}
local v = redis.call('HMGET', KEYS[1], ${INFO})
if v[2] ~= ARGV[2] then return {'FENCED', v[2]} end
${NOW}
local old = tonumber(v[3])
if old <= now then return {'EXPIRED', v[3]} end
for i = 1, ${INFO_FIELDS.length} do if not v[i] then v[i] = '' end end
v[14] = string.format('%d', v[14] + 1)`;

/**
 * The expiry index `exp` holds a lower bound of each lease's expires_at: exact after acquire,
 * release and force-release, and left alone when renew/checkpoint push the expiry later (the
 * common case), which saves a ZADD per heartbeat. It is lowered when a renew shortens the lease.
 * prune re-checks the hash and raises stale scores.
 */
const EXTEND = `
local expires = now + ARGV[3]
v[3] = string.format('%d', expires)
v[4] = ARGV[3]
if expires < old then redis.call('ZADD', KEYS[2], v[3], ARGV[1]) end`;

export interface ScriptDef {
  numberOfKeys: number;
  lua: string;
}

/**
 * acquire — KEYS: lease, tok, ids, exp, chg. ARGV: workId, holderId, ttlMs, stepId ('' = none).
 * - `{'HELD', holder, token, expires_at}` when a live lease exists (expires_at > now), also the caller's own.
 * - `{'OK', token, expires_at}` otherwise: token = tok[workId] + 1 (the counter survives pruning), the
 *   checkpoint state is kept, and how the predecessor ended is recorded (`pred_end`: none — new or pruned,
 *   released, force-released, expired) with `clean` = 1 for none/released.
 */
export const acquire: ScriptDef = {
  numberOfKeys: 5,
  lua: `${EMIT}
local v = redis.call('HMGET', KEYS[1], 'holder', 'token', 'expires_at', 'ended', 'version', 'state_size')
${NOW}
if v[2] and tonumber(v[3]) > now then
  return {'HELD', v[1], v[2], v[3]}
end
local pred = 'none'
if v[2] then
  if v[4] == 'released' or v[4] == 'force-released' then pred = v[4] else pred = 'expired' end
else
  redis.call('ZADD', KEYS[3], '0', ARGV[1])
end
local clean = '0'
if pred == 'none' or pred == 'released' then clean = '1' end
local token = string.format('%d', redis.call('HINCRBY', KEYS[2], ARGV[1], 1))
local expires = string.format('%d', now + ARGV[3])
v = {ARGV[2], token, expires, ARGV[3], ARGV[4], nows, '', '', '', v[6] or '', clean, pred, '',
  string.format('%d', (tonumber(v[5]) or 0) + 1)}
redis.call('HSET', KEYS[1], ${FIELD_VALUES}, 'last_op', 'acquired')
redis.call('ZADD', KEYS[4], expires, ARGV[1])
emit(KEYS[5], ARGV[1], 'acquired', v)
return {'OK', token, expires}`,
};

/**
 * renew — KEYS: lease, exp, chg. ARGV: workId, token, ttlMs.
 * - `{'FENCED', storedToken|nil}` token differs or no lease hash (never acquired, or pruned).
 * - `{'EXPIRED', expires_at}` token matches but the lease ran out or was released.
 * - `{'OK', expires_at}` the new expiry, now + ttl.
 */
export const renew: ScriptDef = {
  numberOfKeys: 3,
  lua: `${GUARD}
${EXTEND}
v[7] = nows
redis.call('HSET', KEYS[1], 'expires_at', v[3], 'ttl_ms', v[4], 'renewed_at', nows, 'version', v[14],
  'last_op', 'renewed')
emit(KEYS[3], ARGV[1], 'renewed', v)
return {'OK', v[3]}`,
};

/**
 * checkpoint — KEYS: lease, exp, chg. ARGV: workId, token, ttlMs, state bytes.
 * Outcomes as {@link renew}; on `OK` the state and the new expiry are stored in the same step.
 */
export const checkpoint: ScriptDef = {
  numberOfKeys: 3,
  lua: `${GUARD}
${EXTEND}
v[8] = nows
v[10] = string.format('%d', #ARGV[4])
redis.call('HSET', KEYS[1], 'state', ARGV[4], 'state_size', v[10], 'checkpointed_at', nows,
  'expires_at', v[3], 'ttl_ms', v[4], 'version', v[14], 'last_op', 'checkpointed')
emit(KEYS[3], ARGV[1], 'checkpointed', v)
return {'OK', v[3]}`,
};

/**
 * release — KEYS: lease, exp, chg. ARGV: workId, token.
 * Outcomes as {@link renew} (a holder whose lease ran out cannot claim a clean handoff); on `OK`
 * expires_at = now - 1 ms and `ended` = released, so the next acquire succeeds at once and is clean.
 */
export const release: ScriptDef = {
  numberOfKeys: 3,
  lua: `${GUARD}
v[3] = string.format('%d', now - 1)
v[9] = nows
v[13] = 'released'
redis.call('HSET', KEYS[1], 'expires_at', v[3], 'released_at', nows, 'ended', 'released',
  'version', v[14], 'last_op', 'released')
redis.call('ZADD', KEYS[2], v[3], ARGV[1])
emit(KEYS[3], ARGV[1], 'released', v)
return {'OK', v[3]}`,
};

/**
 * forceRelease — KEYS: lease, tok, exp, chg, aud. ARGV: workId, expectedToken, operator, reason.
 * - `{'NOTFOUND'}` no lease hash.
 * - `{'CONFLICT', token, ended}` the stored token is not the one the operator saw, or the lease was
 *   already released / force-released (an expired, unreleased lease can be force-released).
 * - `{'OK', …INFO_FIELDS}` the lease after the change: token bumped (and the counter with it, so the old
 *   holder is fenced), expires_at = now - 1 ms, ended = force-released (the successor's handoff is not
 *   clean); one audit entry and one change entry are appended.
 */
export const forceRelease: ScriptDef = {
  numberOfKeys: 5,
  lua: `${EMIT}
local v = redis.call('HMGET', KEYS[1], ${INFO})
if not v[2] then return {'NOTFOUND'} end
if v[2] ~= ARGV[2] or v[13] == 'released' or v[13] == 'force-released' then
  return {'CONFLICT', v[2], v[13]}
end
${NOW}
for i = 1, ${INFO_FIELDS.length} do if not v[i] then v[i] = '' end end
local oldToken = v[2]
v[2] = string.format('%d', redis.call('HINCRBY', KEYS[2], ARGV[1], 1))
v[3] = string.format('%d', now - 1)
v[9] = nows
v[13] = 'force-released'
v[14] = string.format('%d', v[14] + 1)
redis.call('HSET', KEYS[1], 'token', v[2], 'expires_at', v[3], 'released_at', nows,
  'ended', 'force-released', 'version', v[14], 'last_op', 'force-released')
redis.call('ZADD', KEYS[3], v[3], ARGV[1])
redis.call('XADD', KEYS[5], 'MAXLEN', '~', ${STREAM_MAXLEN}, '*', 'workId', ARGV[1], 'operator', ARGV[3],
  'reason', ARGV[4], 'old_holder', v[1], 'old_token', oldToken, 'new_token', v[2], 'at', nows)
emit(KEYS[4], ARGV[1], 'force-released', v)
return {'OK', ${VALUES}}`,
};

/**
 * readState — KEYS: lease. ARGV: offset, length.
 * - nil when there is no lease hash.
 * - `{token, size|nil, bytes}` the page [offset, offset + length) of the stored checkpoint.
 * Redis has no partial read of a hash field, so the script slices on the server: at most `length`
 * bytes cross the network however large the checkpoint is.
 */
export const readState: ScriptDef = {
  numberOfKeys: 1,
  lua: `
local f = redis.call('HMGET', KEYS[1], 'token', 'state')
if not f[1] then return false end
if not f[2] then return {f[1], false, ''} end
return {f[1], #f[2], string.sub(f[2], ARGV[1] + 1, ARGV[1] + ARGV[2])}`,
};

/**
 * prune (one bucket) — KEYS: exp, ids, chg. ARGV: olderThanMs, limit, leasePrefix.
 * Deletes at most `limit` lease hashes whose expires_at <= now - olderThanMs (released, force-released
 * and run-out leases all have expires_at in the past; live ones are never touched) and their index
 * entries; the token counter stays so a later acquire continues the sequence. Emits a `pruned`
 * change (token = the last token, version = last version + 1) per deleted lease.
 * `exp` scores are lower bounds (see EXTEND): a candidate whose hash says it expires later gets its
 * true score and is skipped, so every candidate leaves the range and the loop ends.
 * Returns how many lease hashes it deleted.
 */
export const prune: ScriptDef = {
  numberOfKeys: 3,
  lua: `
${NOW}
local cutoff = now - ARGV[1]
local limit = tonumber(ARGV[2])
local n = 0
while n < limit do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff, 'LIMIT', 0, limit - n)
  if #ids == 0 then break end
  for i = 1, #ids do
    local id = ids[i]
    local key = ARGV[3] .. id
    local f = redis.call('HMGET', key, 'token', 'version', 'expires_at')
    if f[1] and tonumber(f[3]) > cutoff then
      redis.call('ZADD', KEYS[1], f[3], id)
    else
      redis.call('DEL', key)
      redis.call('ZREM', KEYS[1], id)
      redis.call('ZREM', KEYS[2], id)
      if f[1] then
        n = n + 1
        redis.call('XADD', KEYS[3], 'MAXLEN', '~', ${STREAM_MAXLEN}, '*', 'workId', id, 'kind', 'pruned',
          'token', f[1], 'version', string.format('%d', (tonumber(f[2]) or 0) + 1))
      end
    end
  end
end
return n`,
};

/**
 * listScan (one bucket) — KEYS: ids. ARGV: leasePrefix, min, max (ZRANGEBYLEX bounds), want,
 * holderId ('' = any), scanCap.
 * Walks the bucket's work ids in byte order from `min`, returning up to `want` leases (INFO_FIELDS,
 * never the state) whose holder matches, and looking at no more than `scanCap` ids so a sparse filter
 * cannot block the server for long.
 * Returns `{done, lastScanned|nil, {{workId, {INFO}}, …}}`; done = 1 when the bucket is exhausted.
 */
export const listScan: ScriptDef = {
  numberOfKeys: 1,
  lua: `
local want, cap = tonumber(ARGV[4]), tonumber(ARGV[6])
local out, n, scanned, done = {}, 0, 0, 0
local min, last = ARGV[2], false
while n < want and scanned < cap do
  local chunk = math.min(cap - scanned, math.max(want - n, 64))
  local ids = redis.call('ZRANGEBYLEX', KEYS[1], min, ARGV[3], 'LIMIT', 0, chunk)
  for i = 1, #ids do
    local id = ids[i]
    scanned = scanned + 1
    last = id
    local f = redis.call('HMGET', ARGV[1] .. id, ${INFO})
    if f[2] and (ARGV[5] == '' or f[1] == ARGV[5]) then
      n = n + 1
      out[n] = {id, f}
      if n >= want then break end
    end
  end
  if #ids < chunk and n < want then
    done = 1
    break
  end
  min = '(' .. last
end
return {done, last, out}`,
};

/**
 * The position of a change cursor in one bucket's stream is the last stream id read plus its
 * ordinal: how many entries the stream had received up to and including it (`entries-added`
 * counts every entry ever added, Redis 7). Trimming only removes the oldest entries and nothing
 * else deletes entries, so `entries-added - length` entries are gone, and they are exactly the
 * ordinals 1..that number: a reader at ordinal k missed something iff more than k were removed.
 */
const STREAM_INFO = `
local len, added, last = 0, 0, '0-0'
if redis.call('EXISTS', KEYS[1]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    local k = info[i]
    if k == 'length' then len = info[i + 1]
    elseif k == 'entries-added' then added = info[i + 1]
    elseif k == 'last-generated-id' then last = info[i + 1] end
  end
end`;

/**
 * changesRead (one bucket) — KEYS: chg. ARGV: cursor id (exclusive), count, cursor ordinal.
 * - `{1, {}}` gap: entries after the cursor were trimmed away (MAXLEN ~), or the stream was deleted
 *   and started over (fewer entries added than the cursor's ordinal).
 * - `{0, {{streamId, {field, value, …}}, …}}` up to `count` entries after the cursor, oldest first;
 *   each holds `workId`, `kind` and `lease` (the lease after that write, see `emit`), or for
 *   `pruned` `token` and `version` instead of `lease`. They have ordinals k+1, k+2, ….
 */
export const changesRead: ScriptDef = {
  numberOfKeys: 1,
  lua: `${STREAM_INFO}
local k = tonumber(ARGV[3])
if added - len > k or added < k then return {1, {}} end
if added == k then return {0, {}} end
return {0, redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])}`,
};

/**
 * streamHead — KEYS: a stream. Returns `{last generated id, entries added}` ('0-0', 0 when it does
 * not exist): where a change cursor starts. XREVRANGE would go back in time once trimming emptied
 * the stream.
 */
export const streamHead: ScriptDef = {
  numberOfKeys: 1,
  lua: `${STREAM_INFO}
return {last, added}`,
};

/**
 * migrate — KEYS: meta. ARGV: layout version, bucket count.
 * Creates the meta hash if missing (two processes opening at once both see the first one's values),
 * and returns `{layout, buckets}` as stored, which the caller checks.
 */
export const migrate: ScriptDef = {
  numberOfKeys: 1,
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then
  ${NOW}
  redis.call('HSET', KEYS[1], 'layout', ARGV[1], 'buckets', ARGV[2], 'created_at', now)
end
return redis.call('HMGET', KEYS[1], 'layout', 'buckets')`,
};
