/**
 * The Lua scripts of a work item's history and holds on Redis (docs/history.md; keys: layout.ts,
 * History and holds). The lease scripts that write history entries (acquire, release,
 * force-release, request-release, prune) are in scripts.ts, whose header says how every script
 * here is built: one script per call, every key in the bucket's slot, the dataset check first.
 *
 * A history entry is one string in the item's `h:` list, newest first (scripts.ts, historyPush).
 */
import { STREAM_MAXLEN } from './layout.ts';
import { historyPush, IDENTITY, NOW, pack, type ScriptDef, UNPACK } from './scripts.ts';

/** The common start of hold and unhold: the lease (NOTFOUND without one) and its hold (or false). */
const HOLD_READ = `${IDENTITY}
local m = redis.call('HGET', KEYS[1], ARGV[1])
if not m then return {'NOTFOUND'} end
${UNPACK}
if not tok then return {'NOTFOUND'} end
local hd = redis.call('HGET', KEYS[2], ARGV[1])`;

/** Bumps the lease's version (no change entry: a hold is not an ownership change) and appends the history and audit entries of `kind` / `action`. */
const HOLD_WRITE = (kind: string, action: string): string => `
${NOW}
m = ${pack({ ver: "string.format('%d', ver + 1)" })}
redis.call('HSET', KEYS[1], ARGV[1], m)
${historyPush('KEYS[3]', ["us .. '-0'", `'${kind}'`, 'nows', 'holder', 'tok', "''", 'ARGV[2]', 'ARGV[3]'])}
redis.call('XADD', KEYS[4], 'MAXLEN', '~', '${STREAM_MAXLEN}', '*', 'workId', ARGV[1], 'operator', ARGV[2],
  'reason', ARGV[3], 'old_holder', holder, 'old_token', tok, 'new_token', tok, 'at', nows, 'action', '${action}')`;

/**
 * hold — KEYS: m, hold, history, aud, id. ARGV: workId, operator, reason, dataset id.
 * - `{'NOTFOUND'}` no lease (never acquired, or pruned).
 * - `{packed lease, at LF operator LF reason}` the lease and its hold after the call. An item
 *   already held is returned as it is (the first hold kept, nothing written); otherwise the hold is
 *   stored, the lease's version bumped, and a `held` history entry and a `hold` audit entry
 *   appended. The lease itself is left alone: its holder renews, checkpoints and releases as before.
 */
export const hold: ScriptDef = {
  numberOfKeys: 5,
  lua: `${HOLD_READ}
if hd then return {m, hd} end
${HOLD_WRITE('held', 'hold')}
hd = nows .. '\\n' .. ARGV[2] .. '\\n' .. ARGV[3]
redis.call('HSET', KEYS[2], ARGV[1], hd)
return {m, hd}`,
};

/**
 * unhold — KEYS and ARGV as {@link hold}. `{'NOTFOUND'}`, or `{packed lease, false}`: the hold
 * removed, version bumped, `unheld` history entry and `unhold` audit entry; an item not held is
 * returned as it is and nothing is written.
 */
export const unhold: ScriptDef = {
  numberOfKeys: 5,
  lua: `${HOLD_READ}
if not hd then return {m, false} end
${HOLD_WRITE('unheld', 'unhold')}
redis.call('HDEL', KEYS[2], ARGV[1])
return {m, false}`,
};

/**
 * handoffRead — KEYS: m, handoff, id. ARGV: workId, offset, length, dataset id.
 * - nil when the work item has no lease or no checkpoint was handed over with it.
 * - `{token, size, bytes}` the page [offset, offset + length) of the checkpoint at the handoff of
 *   the current (or last) lease, whose token this is: acquire rewrites (or deletes) the key.
 */
export const handoffRead: ScriptDef = {
  numberOfKeys: 3,
  lua: `${IDENTITY}
local m = redis.call('HGET', KEYS[1], ARGV[1])
if not m then return false end
local tok = string.match(m, '^[^\\n]*\\n([^\\n]*)\\n')
if not tok then return false end
local size = redis.call('STRLEN', KEYS[2])
if size == 0 and redis.call('EXISTS', KEYS[2]) == 0 then return false end
return {tok, size, redis.call('GETRANGE', KEYS[2], ARGV[2], ARGV[2] + ARGV[3] - 1)}`,
};

/**
 * historyPrune (one bucket) — KEYS: m, id. ARGV: HSCAN cursor ('0' to start), count, olderThanMs,
 * keepPerItem, the bucket's key base (`<prefix>:{<prefix>:b<n>}:`), dataset id.
 * Every work item that ever had a history has a field in the bucket hash (a pruned one keeps its
 * tombstone), so walking the hash finds every history list: each is cut to its newest
 * `keepPerItem` entries, then its oldest entries are popped while they were written more than
 * `olderThanMs` ago (an entry's id starts with the server µs it was written at; an `expired`
 * entry's `at` may be older). An emptied list is gone (Redis deletes empty lists).
 * Returns `{next cursor, entries removed}`; cursor '0' means done.
 */
export const historyPrune: ScriptDef = {
  numberOfKeys: 2,
  lua: `${IDENTITY}
${NOW}
local cutoff = now - ARGV[3]
local r = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', ARGV[2])
local kv = r[2]
local n = 0
for i = 1, #kv, 2 do
  local h = ARGV[5] .. 'h:' .. kv[i]
  local len = redis.call('LLEN', h)
  if len > 0 then
    redis.call('LTRIM', h, 0, ARGV[4] - 1)
    local left = redis.call('LLEN', h)
    while left > 0 do
      local e = redis.call('LINDEX', h, -1)
      local us = string.match(e, '^(%d+)')
      if not us or tonumber(string.sub(us, 1, -4)) >= cutoff then break end
      redis.call('RPOP', h)
      left = left - 1
    end
    n = n + len - left
  end
end
return {r[1], n}`,
};
