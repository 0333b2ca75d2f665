/**
 * The Lua scripts of the Redis backend: one script per call.
 *
 * Why a script is atomic: Redis runs a script to completion before it serves
 * any other command, so the read (HGET), the decision and the writes of one
 * call see and leave a consistent lease; no client-side read-modify-write.
 * Every key a script touches carries the same bucket hash tag (see layout.ts),
 * so on Redis Cluster the whole script runs on the one master owning that slot.
 * Keys built inside a script (from KEYS[1], see Keys a script builds below,
 * and `statePrefix .. workId` in prune) are in that same slot by construction.
 *
 * A lease is one packed string in the bucket hash (layout.ts): a script HGETs
 * it, splits it with one `string.match`, and writes it back with one HSET. The
 * change entry is the same string, so emitting it costs one XADD of one field.
 *
 * Time is the server's: `TIME` (allowed in Redis 7 scripts, which replicate
 * their effects, not the script), called once per script.
 * Milliseconds = seconds * 1000 + floor(µs / 1000).
 *
 * Dataset identity: every script compares the bucket's `id` key with the
 * dataset id the backend opened (layout.ts, Dataset identity), so no script
 * writes into a dataset that vanished. Most start with that check
 * ({@link IDENTITY}: the id key is the last key, the dataset id the last
 * argument, the reply `{'LOST', found}` when they differ); acquire makes the
 * same check on an id key it builds ({@link ACQUIRE_IDENTITY}). The calls that
 * carry a lease (renew, checkpoint, release, readCheckpoint) take neither: a
 * refusal of theirs carries the bucket's stored id as its last element and the
 * client compares it ({@link REFUSE}).
 *
 * Keys a script builds: the lease scripts declare the keys they write after
 * their first write, and build from KEYS[1] (`<bucket>:m`, layout.ts) only the
 * keys they read, or write before any other write, on a path most calls do not
 * take (the id key, the expiry index on a shortened lease). Every declared key or argument costs the server about 2k
 * instructions per call, a built one only where it is used (callgrind, private
 * Redis 7.0, the bench's raw script with 2 more keys: +4.1k, with 3 more
 * arguments: +4.5k, building one key: +2.2k). All of a bucket's keys share its
 * hash slot, so a built key lives on the master that runs the script. While a
 * Cluster slot migrates, its keys move one by one, and a built key may already
 * be on the other master when the declared ones are not, so the command that
 * touches it can fail inside the script: every built key is touched before the
 * script's other writes, so such a failure writes nothing (a renew's ZADD to
 * the expiry index of a lease it then does not renew only lowers a lower bound).
 *
 * Replies tell every outcome apart, so a call never needs a second round trip.
 * Success is a plain string (cheaper for Redis to return than an array, see
 * Cost); every other outcome is an array whose first element is a status word
 * (`HELD`, `FENCED`, `EXPIRED`, `NOTFOUND`, `CONFLICT`), as documented on each
 * script. Numbers travel as decimal strings. Tokens are computed on decimal
 * strings ({@link nextToken}), so they stay exact beyond 2^53 (Lua numbers are
 * doubles); versions are exact up to 2^53.
 *
 * Every write bumps the lease's `version`. Every write that changes who holds
 * a work item, ends its lease or asks for it (acquire, release, force-release,
 * request-release, prune) also appends one entry (kind, workId and the packed
 * lease after the write, never checkpoint bytes) to the bucket's change stream
 * (`XADD … MAXLEN ~`), in the same script, so the change feed never misses one
 * of those writes and never shows one that did not happen. An idle reader
 * learns of it without polling: on standalone Redis its watch blocks in XREAD
 * on the streams; on a Cluster the script also SPUBLISHes an empty message on
 * the bucket's shard channel, named as the stream key (channels and keys are
 * apart in Redis, and the name hashes to the bucket's slot) ({@link WAKE}). Renew and checkpoint,
 * the heartbeat-rate writes, append and publish nothing (the feed's contract,
 * `ChangeKind`): XADD + SPUBLISH were 3.4 of a renew's 9.4 µs of server time
 * (INFO commandstats, private Redis 7.0, medians of 5 blocks of 20 000 at 64
 * in flight: 9.4 µs with them, 6.0 without). A later entry of the same item
 * carries the lease as stored then, heartbeats included.
 *
 * Idempotence (what happens if a script ran but its reply was lost, and the
 * call is sent again): acquire → `HELD` (the first one took it) — or, if that
 * lease's ttl already ran out, a second acquisition with the next token;
 * renew/checkpoint → applied again (later expiry, one more version);
 * release → `EXPIRED` (it already ended); forceRelease → `CONFLICT` (token
 * moved on). So a re-send can turn a success into an error or take a second
 * token: the driver writes each call to the server at most once (send.ts,
 * connection.ts) and leaves retries to the caller.
 *
 * Cost: server time per call from INFO commandstats (usec_per_call of
 * EVALSHA) on a private Redis 7.0 on a loaded 2-core machine, pipelined, same
 * run (numbers vary ±25 % between runs): the bench's raw HGET+HSET script
 * 3–5 µs; renew 9–12 µs with this layout against 14–16 µs with layout 1 (a
 * hash per lease: HMGET of 14 fields, HSET of 6). Measured pieces: an empty
 * script ≈ 1 µs, each redis.call ≈ 0.5–1 µs on top of the command's own work,
 * TIME ≈ 1.5, HGET ≈ 1.3, HSET ≈ 1.5, XADD ≈ 2.2 (+0.7 with MAXLEN ~),
 * SPUBLISH without subscribers ≈ 0.5, the string.match split of a lease ≈ 1,
 * rebuilding it ≈ 0.7, returning a 2-element array instead of a string ≈ 0.5.
 * Numbers are turned into strings once, with `string.format('%d')`: Redis would
 * otherwise format numeric arguments with `%.17g`, which cost more.
 *
 * Why the lease calls write no index entry (layout.ts, Indexes): the listing and expiry indexes
 * (`ids`, `exp`) are what list, count and prune read, and every write that adds, ends or prunes a
 * lease appends a change entry carrying the packed lease anyway, so the readers apply those
 * entries to the indexes first ({@link indexCatchUp}). Measured (npm run bench, EVALSHA usec per
 * call from INFO commandstats, medians of 5 interleaved rounds at 64 in flight, same machine and
 * day, load 0.5 and 3.5): a first acquire took 21.1 µs with its two ZADDs and 13.5 without (raw
 * script 3.9 and 4.5), a release 15.0 with its ZADD and 7.7 without. Applying an entry later costs
 * the same two ZADDs, but once per work item and change however many readers there are, in
 * batches of 500 per script, off the calls' round trip, and not at all while nobody reads the
 * indexes. What bounds a first acquire now is its change entry (XADD, required by the feed;
 * + SPUBLISH on a Cluster), the new hash field, the dataset check's GET and the token arithmetic. At 1 in flight the
 * server runs each call from cold caches and every figure about doubles.
 */
import { HISTORY_MAXLEN, INFO_FIELDS, STREAM_MAXLEN } from './layout.ts';

/** Lua local names of the packed lease's fields, in INFO_FIELDS order. */
const NAMES = [
  'holder',
  'tok',
  'exp',
  'ttl',
  'step',
  'acq',
  'ren',
  'chk',
  'rel',
  'size',
  'clean',
  'pred',
  'ended',
  'ver',
  'rq',
] as const;
type Name = (typeof NAMES)[number];
if (NAMES.length !== INFO_FIELDS.length + 1) throw new Error('NAMES and INFO_FIELDS disagree');

/**
 * A Lua pattern matching a whole packed lease, one capture per field and a last one, `rq`, for
 * the optional release request (layout.ts): '' or LF at LF operator LF reason (JSON-quoted, so it
 * holds no LF). A tombstone does not match.
 */
const PATTERN = `^${INFO_FIELDS.map(() => '([^\\n]*)').join('\\n')}(.*)$`;

/** Splits the packed lease in `m` into the locals NAMES (all nil when `m` is a tombstone). */
export const UNPACK = `local ${NAMES.join(', ')} = string.match(m, '${PATTERN}')`;

/** The Lua expression of a packed lease: the locals NAMES, some replaced by other expressions. */
export function pack(changed: Partial<Record<Name, string>>): string {
  const fields = NAMES.filter((n) => n !== 'rq').map((n) => changed[n] ?? n);
  return `${fields.join(" .. '\\n' .. ")} .. ${changed.rq ?? 'rq'}`;
}

/**
 * A packed lease split into only what one script reads or replaces: a Lua pattern with a capture
 * per field in `read` and one per run of fields the script copies unchanged, so a renew makes 7
 * strings instead of 15 (each capture is a new Lua string: measured, a renew without change
 * entry took 6.0 µs of server time with the full split and 5 keys, 5.6 with this split and 3 keys,
 * INFO commandstats on a private Redis 7.0 under load 4–7, medians of 5 blocks of 20 000 at 64 in
 * flight; a layout with the hot fields first, parsing 4, measured 5.5, so no layout change). `unpack` declares the read fields as locals NAMES and the
 * runs as `k1`, `k2`, …; `pack(changed)` rebuilds the lease with the replaced fields set (all nil /
 * no match for a tombstone, as {@link UNPACK}). A field in `replaced` must get a value in every
 * `pack` call; a read field keeps its local's value unless changed.
 */
function split(
  read: readonly Name[],
  replaced: readonly Name[],
  /** Other local names for read fields (a script that keeps its own locals of those names). */
  as: Partial<Record<Name, string>> = {},
  /** False when the script never rebuilds the lease: the runs it copies are then not captured. */
  rebuild = true,
): { unpack: string; pack: (changed: Partial<Record<Name, string>>) => string } {
  type Part = { lit: string } | { field: Name } | { set: Name } | { run: string; name: string };
  const parts: Part[] = [];
  let run = '';
  let fields = 0;
  let runs = 0;
  const flush = (): void => {
    // A run of separators alone is a literal in the pattern and in the rebuild, not a capture.
    if (fields > 0) parts.push({ run, name: `k${++runs}` });
    else if (run !== '') parts.push({ lit: run });
    run = '';
    fields = 0;
  };
  NAMES.forEach((n, i) => {
    if (i > 0 && n !== 'rq') run += '\\n';
    const any = n === 'rq' ? '.*' : '[^\\n]*';
    if (read.includes(n) || replaced.includes(n)) {
      flush();
      parts.push(read.includes(n) ? { field: n } : { set: n });
    } else {
      run += any;
      fields++;
    }
  });
  flush();
  const any = (n: Name): string => (n === 'rq' ? '.*' : '[^\\n]*');
  const captures = parts.flatMap((x) =>
    'field' in x ? [as[x.field] ?? x.field] : 'run' in x && rebuild ? [x.name] : [],
  );
  const pattern = parts
    .map((x) =>
      'field' in x
        ? `(${any(x.field)})`
        : 'set' in x
          ? any(x.set)
          : 'run' in x
            ? rebuild
              ? `(${x.run})`
              : x.run
            : x.lit,
    )
    .join('');
  const unpack = `local ${captures.join(', ')} = string.match(m, '^${pattern}$')`;
  const pack = (changed: Partial<Record<Name, string>>): string =>
    parts
      .map((x) => {
        if ('run' in x) return x.name;
        if ('field' in x) return changed[x.field] ?? as[x.field] ?? x.field;
        if ('set' in x) {
          const v = changed[x.set];
          if (v === undefined) throw new Error(`split: no value for the replaced field ${x.set}`);
          return v;
        }
        return `'${x.lit}'`;
      })
      .join(' .. ');
  return { unpack, pack };
}

/**
 * The dataset check most scripts begin with (layout.ts, Dataset identity; {@link REFUSE} for the
 * others): the last key is the bucket's `id` key, the last argument the dataset id the backend
 * opened. Costs one GET (≈ 1.3 µs).
 */
const identity = (idKey: string): string => `
local dataset = redis.call('GET', ${idKey})
if dataset ~= ARGV[#ARGV] then return {'LOST', dataset} end`;
export const IDENTITY = identity('KEYS[#KEYS]');

/** The Lua expression of the bucket key `suffix` (layout.ts), built from KEYS[1] (`<bucket>:m`). */
export const key = (suffix: string): string => `string.sub(KEYS[1], 1, -2) .. ${suffix}`;

/**
 * acquire's {@link IDENTITY}: the same check on the id key built from KEYS[1] (see Keys a script
 * builds, above): the check reads before the script writes, and declaring the key cost as much.
 */
const ACQUIRE_IDENTITY = identity(key("'id'"));

/**
 * The statement that ends a call carrying a lease (its work id and token) with a refusal: the array
 * `{word, value, found}`, where `found` is the bucket's stored dataset id (false when its id key is
 * gone). The client compares `found` with the dataset it opened and reports DATASET_LOST when they
 * differ (send.ts, runHeld), so these scripts take neither the id key nor the dataset id.
 * Such a call succeeds only where the lease is stored under the caller's token, and a dataset that
 * replaced the one the token came from cannot have it: the bucket came back empty (restart without
 * persistence, flush, failover to an empty replica), or holds leases acquired since, whose tokens
 * are floored by the server clock at their acquisition ({@link nextToken}) and so differ from every
 * token handed out before. So success needs no check, and a refusal gets the same answer as
 * checking first. Measured (callgrind, 2000 renews at 64 in flight, private Redis 7.0): the check
 * on every call cost 4.5k of a renew's 70.3k server instructions; sending neither the id key nor
 * the dataset id, and building the expiry-index key only for a shortened lease, saved another
 * 5.2k of 62.8k.
 */
const REFUSE = (word: string, value: string): string =>
  ` return {'${word}', ${value}, redis.call('GET', ${key("'id'")})} `;

/**
 * The token rule: a new token is max(previous + 1, server time in µs) — see docs/durability.md for
 * why it holds. The +1 keeps tokens strictly increasing per work item whatever the clock does; the
 * clock floor makes a server that lost its latest writes (restarted without persistence, a lagging
 * replica promoted) still hand out tokens above every token it handed out before the loss, as long
 * as its clock is ahead of the lost writes' time (it is unless it lags the lost master by more than
 * the failover took). A token runs ahead of the clock only when one work item gets more than one new
 * token per µs, which a script taking several µs cannot do, so the floor is a real bound.
 * Arithmetic on decimal strings: Lua numbers are doubles, exact only below 2^53, and a token near
 * 2^53 + 1 must not round. `us` stays below 2^53 until the year 2255, but is built as a string as
 * well (NOW). Two such strings without leading zeros compare as numbers by length, then byte order.
 *
 * `nextToken(prev)` is the Lua code that sets the local `tok` to the token after `prev` (a Lua
 * expression: a token string, or false for a work item never seen). When `prev` is below `us`,
 * prev + 1 <= us and the token is `us`, with no arithmetic: the common case, since a token is at
 * most the µs it was taken at. Otherwise it is prev + 1, added on the digits (byte 57 is '9', which
 * carries). Inline code, not Lua functions: a `local function` is a closure made anew on every run
 * of the script. Measured (INFO commandstats, EVALSHA usec per call, shared Redis 7.0, acquire +
 * release cycles, 7 alternating rounds, load 1.5): with the helper functions (these two and the
 * change entry's, {@link emit}) 18.1 µs of server time per cycle at 1 in flight and 15.7 at 64, inline
 * 17.2 and 14.8; cycles per second at 1 in flight, calls taking turns, 10.8k and 11.2k.
 */
const nextToken = (prev: string): string => `
tok = us
if ${prev} and (#${prev} > #us or (#${prev} == #us and ${prev} >= us)) then
  local i = #${prev}
  while i > 0 and string.byte(${prev}, i) == 57 do i = i - 1 end
  if i == 0 then tok = '1' .. string.rep('0', #${prev})
  else tok = string.sub(${prev}, 1, i - 1) .. string.char(string.byte(${prev}, i) + 1) .. string.rep('0', #${prev} - i) end
end`;

/**
 * Ends the line of each wake-up (SPUBLISH) in a script, so that {@link withoutWake} can leave it
 * out. Only a Redis Cluster needs the wake-ups: there a reader cannot block on the streams of
 * several slots in one command, so it listens on the shard channels (feed.ts, ChangeWatch). On
 * standalone Redis the reader blocks in one XREAD on every bucket's stream, which an XADD answers
 * by itself, and the SPUBLISH is work for nobody. Measured (private Redis 7.0, redis-benchmark
 * -P 64, 100 000 first acquires per run, EVALSHA usec per call, 8 interleaved rounds, load 0.6):
 * 7.0 µs with it and 6.5 without, 135.7k/s and 140.1k/s at the median.
 */
const WAKE = ' -- wake';

/** `def` without its wake-up lines ({@link WAKE}): the script standalone Redis runs. */
export function withoutWake(def: ScriptDef): ScriptDef {
  const lines = def.lua.split('\n');
  const kept = lines.filter((line) => !line.endsWith(WAKE));
  if (kept.length === lines.length) throw new Error('withoutWake: the script publishes no wake-up');
  return { numberOfKeys: def.numberOfKeys, lua: kept.join('\n') };
}

/** True for a script with wake-up lines ({@link WAKE}). */
export const wakes = (def: ScriptDef): boolean => def.lua.split('\n').some((line) => line.endsWith(WAKE));

/**
 * The Lua code that appends the change `kind` LF workId (ARGV[1]) LF packed lease (`m`) to the
 * bucket's stream (KEYS[2]) and, on a Redis Cluster ({@link WAKE}), wakes its readers on the shard
 * channel of the same name. A channel of its own would be one more declared key: measured
 * (callgrind, private Redis 7.0, 2000 calls at 64 in flight), a first acquire took 76.2k server
 * instructions with it and 73.7k without, a release 78.1k and 76.3k. Inline for the same reason
 * as {@link nextToken}.
 */
const emit = (kind: string): string => `
redis.call('XADD', KEYS[2], 'MAXLEN', '~', '${STREAM_MAXLEN}', '*', 'c', '${kind}\\n' .. ARGV[1] .. '\\n' .. m)
redis.call('SPUBLISH', KEYS[2], '')${WAKE}`;

/**
 * The server time: `nows` in ms and `us` in µs, as decimal strings, made with string operations
 * only. TIME replies seconds and microseconds as decimal strings; `us` is the seconds followed by
 * the microseconds padded to 6 digits, `nows` the same without its last 3. The lease calls use it
 * as it is and compare expiries as strings ({@link later}): turning TIME's reply into numbers and
 * back cost more than the TIME call itself (server instructions per call, callgrind, private Redis
 * 7.0, 2000 calls of a script doing only this: TIME alone 6.5k, with the number conversions 14.4k,
 * with these 10.4k).
 */
export const NOW_STR = `
local t = redis.call('TIME')
local u = t[2]
if #u < 6 then u = string.rep('0', 6 - #u) .. u end
local us = t[1] .. u
local nows = string.sub(us, 1, -4)`;

/** {@link NOW_STR} and `now`, the same ms as a number, for the scripts off the hot path that compute with it. */
export const NOW = `${NOW_STR}
local now = tonumber(nows)`;

/**
 * The Lua code that puts a history entry (docs/history.md; layout.ts, History and holds) at the
 * head of the list `listKey` (newest first), and with `trim` cuts the list to its newest
 * {@link HISTORY_MAXLEN} entries. An entry is one string, its parts joined by LF: id (`<server µs>-<n>`,
 * n telling apart the entries one script writes), kind, at (ms), holder, token, checkpoint bytes
 * ('' for none), then for an operator's action the operator and the reason (last: it may hold LFs).
 * A list, not a stream: a new stream preallocates its first node (`stream-node-max-bytes`, 4 KiB),
 * so a one-entry history took 4 752 bytes of server memory as a stream and 232 as a list
 * (MEMORY USAGE, Redis 7.0), and first acquires ran at a third of the raw script's rate.
 */
export const historyPush = (listKey: string, parts: readonly string[], trim = true): string => {
  const push = `redis.call('LPUSH', ${listKey}, ${parts.join(" .. '\\n' .. ")})`;
  // LPUSH replies the new length, so the cut costs nothing until the list is full.
  return trim
    ? `if ${push} > ${HISTORY_MAXLEN} then redis.call('LTRIM', ${listKey}, 0, ${HISTORY_MAXLEN - 1}) end`
    : push;
};

/**
 * The Lua condition "`a` is later than `b`" for two times in ms as decimal strings without leading
 * zeros (as the scripts write them): the longer is larger, else byte order. Saves a `tonumber`
 * (2.2k server instructions, measured as above) per comparison.
 */
export const later = (a: string, b: string): string => `(#${a} > #${b} or (#${a} == #${b} and ${a} > ${b}))`;

/**
 * Dataset, token and liveness checks shared by renew, checkpoint and release. KEYS[1] is the bucket
 * hash, ARGV[1] the work id, ARGV[2] the record's token (compared as strings, so exact at any size).
 * `unpack` (of {@link split}) must read tok, exp and ver. Leaves the read fields in their locals,
 * the server time in `nows` and `us` ({@link NOW_STR}) and the bumped version in `ver`.
 */
function guard(unpack: string, beforeRefusal = ''): string {
  return `
local m = redis.call('HGET', KEYS[1], ARGV[1])
if not m then${beforeRefusal}${REFUSE('FENCED', 'false')}end
${unpack}
if tok ~= ARGV[2] then${beforeRefusal}${REFUSE('FENCED', 'tok or false')}end
${NOW_STR}
if not ${later('exp', 'nows')} then${beforeRefusal}${REFUSE('EXPIRED', 'exp')}end
ver = string.format('%d', ver + 1)`;
}

/** Renew and checkpoint read token, expiry, version and the release request, and set the rest. */
const HEARTBEAT = split(['tok', 'exp', 'ver', 'rq'], ['ttl', 'ren', 'chk', 'size']);
const RENEW = split(['tok', 'exp', 'ver', 'rq'], ['ttl', 'ren']);
const RELEASE = split(['holder', 'tok', 'exp', 'ver', 'size'], ['rel', 'ended', 'rq']);

/**
 * The expiry index `exp` holds a lower bound of each lease's expires_at, once caught up with the
 * change stream ({@link indexCatchUp}): the expiry a change entry carries (acquire, release,
 * force-release) only ever lowers a score (`ZADD LT`), and the index is left alone when
 * renew/checkpoint push the expiry later (the common case), which saves a ZADD per call. A renew
 * that shortens the lease writes no change entry, so it lowers the score itself. prune re-checks
 * the lease and raises stale scores.
 */
const EXTEND = `
local old = exp
exp = string.format('%d', nows + ARGV[3])
if ${later('old', 'exp')} then redis.call('ZADD', ${key("'exp'")}, exp, ARGV[1]) end`;

export interface ScriptDef {
  numberOfKeys: number;
  lua: string;
}

/**
 * Every script below but acquire, renew, checkpoint, release and readCheckpoint also takes the
 * bucket's `id` key as its last key and the dataset id as its last argument, and may reply
 * `{'LOST', found}` ({@link IDENTITY}); the lists name the others. acquire takes the dataset id as
 * its last argument and may reply `LOST` too ({@link ACQUIRE_IDENTITY}); the refusals of the other
 * four end with the stored dataset id ({@link REFUSE}).
 *
 * acquire — KEYS: m, chg, history (builds id, hold, state, handoff). ARGV: workId,
 *   holderId, ttlMs, stepId (left out when there is none: one argument less), deadline (ms in the
 *   server's clock, '' for none), dataset id.
 * - `{'LATE', now}` when the server's clock is past the deadline: the caller's give-up moment (its
 *   call timeout, in the server's clock from the offset the client measured: server-clock.ts), so
 *   a script that reaches a stalled server after its caller gave up grants no lease that nobody
 *   holds. Nothing is written. Checked before anything else but the dataset (the script runs
 *   atomically, so nothing can delay it past this check); one comparison of strings.
 * - `{'HELD', holder, token, expires_at}` when a live lease exists (expires_at > now), also the caller's own.
 * - `'<token> <expires_at>'` otherwise: token = max(the stored (or tombstoned) token + 1, server µs)
 *   ({@link nextToken}), so tokens continue after a prune; the checkpoint state is kept; how the predecessor ended is recorded
 *   (`pred_end`: none — new or pruned, released, force-released, expired) with `clean` = 1 for
 *   none/released.
 * - `{'ONHOLD', at LF operator LF reason}` when an operator put the work item on hold
 *   (docs/history.md; the bucket's `hold` hash, history-scripts.ts, hold), whether or not a lease is live:
 *   checked right after the deadline; nothing is written.
 * History (docs/history.md; written here, never by renew or checkpoint): an `acquired` entry in the
 * item's history stream, after an `expired` one (dated when the lease ran out) when the previous
 * lease ran out unreleased; and the checkpoint at this handoff copied to the item's `ho:` key
 * (deleted when there is none). The built keys are written first (see Keys a script builds).
 */
/** What acquire reads of a previous lease (7 captures instead of 15; {@link split}). */
const ACQUIRE_READ = split(
  ['holder', 'tok', 'exp', 'chk', 'size', 'ended', 'ver'],
  [],
  { tok: 't', chk: 'ck', size: 'sz', ver: 'v' },
  false,
).unpack;

export const acquire: ScriptDef = {
  numberOfKeys: 3,
  lua: `${ACQUIRE_IDENTITY}
${NOW_STR}
local dl = ARGV[#ARGV - 1]
if dl ~= '' and ${later('nows', 'dl')} then return {'LATE', nows} end
local hd = redis.call('HGET', ${key("'hold'")}, ARGV[1])
if hd then return {'ONHOLD', hd} end
local m = redis.call('HGET', KEYS[1], ARGV[1])
local tok, prev, ver, chk, size, pred, clean = false, false, '1', '', '', 'none', '1'
local ranOut, lastHolder = false, false
if m then
  ${ACQUIRE_READ}
  if not t then
    prev = m
  else
    if ${later('exp', 'nows')} then return {'HELD', holder, t, exp} end
    prev = t
    ver = string.format('%d', v + 1)
    chk = ck
    size = sz
    if ended == 'released' then pred = ended
    else
      clean = '0'
      if ended == 'force-released' then pred = ended else pred, ranOut, lastHolder = 'expired', exp, holder end
    end
  end
end
if size ~= '' then redis.call('COPY', ${key("'s:' .. ARGV[1]")}, ${key("'ho:' .. ARGV[1]")}, 'REPLACE')
elseif t then redis.call('DEL', ${key("'ho:' .. ARGV[1]")}) end
if ranOut then
  ${historyPush('KEYS[3]', ["us .. '-0'", "'expired'", 'ranOut', 'lastHolder', 'prev', 'size'], false)}
end
${nextToken('prev')}
local exp = string.format('%d', nows + ARGV[3])
local step = ''
if #ARGV == 6 then step = ARGV[4] end
m = ARGV[2] .. '\\n' .. tok .. '\\n' .. exp .. '\\n' .. ARGV[3] .. '\\n' .. step .. '\\n' .. nows .. '\\n\\n' .. chk .. '\\n\\n' ..
  size .. '\\n' .. clean .. '\\n' .. pred .. '\\n\\n' .. ver
${historyPush('KEYS[3]', ["us .. '-1'", "'acquired'", 'nows', 'ARGV[2]', 'tok', 'size'])}
redis.call('HSET', KEYS[1], ARGV[1], m)${emit('acquired')}
return tok .. ' ' .. exp`,
};

/**
 * renew — KEYS: m (builds exp when the lease gets shorter). ARGV: workId, token, ttlMs. Writes no
 * change entry (see the header).
 * - `{'FENCED', storedToken|nil, dataset|nil}` token differs or no lease (never acquired, or pruned).
 * - `{'EXPIRED', expires_at, dataset|nil}` token matches but the lease ran out or was released.
 * - `'<expires_at>'` the new expiry, now + ttl; followed by the lease's release request
 *   (LF at LF operator LF quoted reason) when an operator asked for one ({@link requestRelease}).
 *   The answer the holder already gets carries it: no extra call, and no extra Redis command in
 *   the script (the request is part of the packed lease the script reads and writes anyway).
 *   Why in the packed lease and not a hash of its own: a separate HGET per renew would cost
 *   ≈ 1.3 µs + 0.5 for the call (Cost, below), over 10 % of a renew, for something almost never
 *   set. Measured (INFO commandstats usec_per_call of EVALSHA, private Redis 7 on this 2-core
 *   machine under load 11, 15 interleaved blocks of 1000 pipelined renews, best block): 9.15 µs
 *   with layout 3 before the change, 9.07 µs with layout 4 and no request (the one more capture
 *   and concatenation is below the noise), 9.65 µs with a pending request of a 37-character reason
 *   (the longer string is split, rebuilt, stored and streamed on every renew until released).
 */
export const renew: ScriptDef = {
  numberOfKeys: 1,
  lua: `${guard(RENEW.unpack)}
${EXTEND}
m = ${RENEW.pack({ ttl: 'ARGV[3]', ren: 'nows' })}
redis.call('HSET', KEYS[1], ARGV[1], m)
return exp .. rq`,
};

/**
 * checkpoint — KEYS: m, state (builds exp as renew). ARGV: workId, token, ttlMs, state bytes.
 * Outcomes as {@link renew}; on success the state and the new expiry are stored in the same step.
 * Writes no change entry (see the header); the next entry of the item carries the new size.
 */
export const checkpoint: ScriptDef = {
  numberOfKeys: 2,
  lua: `${guard(HEARTBEAT.unpack)}
${EXTEND}
redis.call('SET', KEYS[2], ARGV[4])
m = ${HEARTBEAT.pack({ ttl: 'ARGV[3]', ren: 'nows', chk: 'nows', size: "string.format('%d', #ARGV[4])" })}
redis.call('HSET', KEYS[1], ARGV[1], m)
return exp .. rq`,
};

/**
 * checkpointStaged — checkpoint for a large state, whose bytes never enter Lua. KEYS: m, state,
 * staging. ARGV: workId, token, ttlMs, the state's size in bytes (decimal). The client sends it in
 * one transaction, `MULTI`, `SET <staging> <state>`, this script, `EXEC` (send.ts,
 * Sender.runHeldStaged), so no other command runs between the SET and the script, and a connection
 * lost before EXEC leaves nothing written (the server drops the queued commands). Outcomes as
 * {@link checkpoint}. On success the staging key becomes the state key (RENAME: the bytes are not
 * copied); on a refusal it is deleted, so neither outcome leaves it behind.
 *
 * Why: every string Redis hands to a script is interned by its Lua, which hashes every byte of it
 * (Redis hashes the whole string, where Lua 5.1 samples at most 32 bytes, against hash-flooding), so
 * a state passed as an argument costs the server about 11 instructions per byte before the script
 * runs, and the server runs nothing else meanwhile. Measured (private Redis 7.0, callgrind, server
 * instructions per checkpoint, 1 920 checkpoints each, pipelined 16 at a time): a 3-byte state
 * 69.8k, 1 KiB 82.4k; through this transaction 82.0k at 1 KiB, 83.5k at 4 KiB (the plain script:
 * 117.7k), 108.3k at 16 KiB (plain 289.1k). At 1 in flight, where each of the transaction's four
 * commands costs its own share of the server's per-command work, server time per checkpoint (INFO
 * commandstats: EVALSHA, or MULTI + EXEC; shared Redis 7.0, 400 checkpoints per size, three runs
 * of each build taking turns, medians): 4 KiB 17.8 us plain / 21.9 us here, 8 KiB 20.7 / 21.3,
 * 16 KiB 30.0 / 23.3, 32 KiB 57.7 / 23.6, 64 KiB 91.7 / 26.9, 1 MiB 1 258 / 34.0 (40 each; wall
 * time per call 1 637 / 452 us). Hence {@link STAGED_MIN_BYTES}: below it the plain script.
 */
export const checkpointStaged: ScriptDef = {
  numberOfKeys: 3,
  lua: `${guard(HEARTBEAT.unpack, " redis.call('DEL', KEYS[3])")}
${EXTEND}
redis.call('RENAME', KEYS[3], KEYS[2])
m = ${HEARTBEAT.pack({ ttl: 'ARGV[3]', ren: 'nows', chk: 'nows', size: 'ARGV[4]' })}
redis.call('HSET', KEYS[1], ARGV[1], m)
return exp .. rq`,
};

/**
 * The state size from which checkpoint sends {@link checkpointStaged}: where the two cost the same
 * at 1 in flight (measured above; pipelined, the transaction costs less from about 1 KiB).
 */
export const STAGED_MIN_BYTES = 8192;

/**
 * release — KEYS: m, chg, history. ARGV: workId, token.
 * Outcomes as {@link renew} (a holder whose lease ran out cannot claim a clean handoff); on success
 * expires_at = now - 1 ms and `ended` = released, so the next acquire succeeds at once and is clean;
 * a `released` entry goes into the item's history stream.
 */
export const release: ScriptDef = {
  numberOfKeys: 3,
  lua: `${guard(RELEASE.unpack)}
exp = string.format('%d', nows - 1)
m = ${RELEASE.pack({ rel: 'nows', ended: "'released'", rq: "''" })}
${historyPush('KEYS[3]', ["us .. '-0'", "'released'", 'nows', 'holder', 'ARGV[2]', 'size'])}
redis.call('HSET', KEYS[1], ARGV[1], m)${emit('released')}
return exp`,
};

/**
 * forceRelease — KEYS: m, chg, aud, history. ARGV: workId, expectedToken, operator, reason,
 *   batchId ('' for none; stored on the audit entry as `batch` only when given).
 * - `{'NOTFOUND'}` no lease (never acquired, or pruned).
 * - `{'CONFLICT', token, ended, holder}` the stored token is not the one the operator saw, or the
 *   lease was already released / force-released (an expired, unreleased lease can be
 *   force-released); `ended` is '' for a lease not ended.
 * - `'<packed lease>'` the lease after the change: token bumped by the token rule ({@link nextToken}) so
 *   the old holder is fenced,
 *   expires_at = now - 1 ms, ended = force-released (the successor's handoff is not clean); one
 *   audit entry and one change entry are appended.
 */
export const forceRelease: ScriptDef = {
  numberOfKeys: 5,
  lua: `${IDENTITY}
local m = redis.call('HGET', KEYS[1], ARGV[1])
if not m then return {'NOTFOUND'} end
${UNPACK}
if not tok then return {'NOTFOUND'} end
if tok ~= ARGV[2] or ended == 'released' or ended == 'force-released' then
  return {'CONFLICT', tok, ended, holder}
end
${NOW}
local oldTok = tok${nextToken('oldTok')}
exp = string.format('%d', now - 1)
m = ${pack({ rel: 'nows', ended: "'force-released'", ver: "string.format('%d', ver + 1)", rq: "''" })}
redis.call('HSET', KEYS[1], ARGV[1], m)
if ARGV[5] ~= nil and ARGV[5] ~= '' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', '${STREAM_MAXLEN}', '*', 'workId', ARGV[1], 'operator', ARGV[3],
    'reason', ARGV[4], 'old_holder', holder, 'old_token', oldTok, 'new_token', tok, 'at', nows, 'batch', ARGV[5])
else
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', '${STREAM_MAXLEN}', '*', 'workId', ARGV[1], 'operator', ARGV[3],
    'reason', ARGV[4], 'old_holder', holder, 'old_token', oldTok, 'new_token', tok, 'at', nows)
end
${historyPush('KEYS[4]', ["us .. '-0'", "'force-released'", 'nows', 'holder', 'oldTok', 'size', 'ARGV[3]', 'ARGV[4]'])}${emit('force-released')}
return m`,
};

/**
 * requestRelease — KEYS: m, chg, aud, history. ARGV: workId, expectedToken, operator, reason, reason
 * JSON-quoted (for the packed lease, which holds no LF).
 * - `{'NOTFOUND'}` no lease (never acquired, or pruned).
 * - `{'CONFLICT', token, why, holder}` why = `token` (the stored token is not the expected one),
 *   `released` / `force-released` (the lease ended) or `expired` (it ran out by the server clock).
 * - `'<packed lease>'` the lease after the call. A lease that carries a request already is returned
 *   as it is (idempotent: the first request, its `at` included, is kept; nothing is written);
 *   otherwise `rq` is set, the version bumped, and one audit entry (action `request-release`,
 *   new_token = old_token) and one change entry (`release-requested`) are appended.
 */
export const requestRelease: ScriptDef = {
  numberOfKeys: 5,
  lua: `${IDENTITY}
local m = redis.call('HGET', KEYS[1], ARGV[1])
if not m then return {'NOTFOUND'} end
${UNPACK}
if not tok then return {'NOTFOUND'} end
if tok ~= ARGV[2] then return {'CONFLICT', tok, 'token', holder} end
if ended == 'released' or ended == 'force-released' then return {'CONFLICT', tok, ended, holder} end
${NOW}
if tonumber(exp) <= now then return {'CONFLICT', tok, 'expired', holder} end
if rq ~= '' then return m end
m = ${pack({ ver: "string.format('%d', ver + 1)", rq: "'\\n' .. nows .. '\\n' .. ARGV[3] .. '\\n' .. ARGV[5]" })}
redis.call('HSET', KEYS[1], ARGV[1], m)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', '${STREAM_MAXLEN}', '*', 'workId', ARGV[1], 'operator', ARGV[3],
  'reason', ARGV[4], 'old_holder', holder, 'old_token', tok, 'new_token', tok, 'at', nows,
  'action', 'request-release')
${historyPush('KEYS[4]', ["us .. '-0'", "'release-requested'", 'nows', 'holder', 'tok', "''", 'ARGV[3]', 'ARGV[4]'])}${emit('release-requested')}
return m`,
};

/** Captures the token (field 2) and field `n` (> 2) of a packed lease. */
function tokenAnd(n: number): string {
  return `^[^\\n]*\\n([^\\n]*)\\n${'[^\\n]*\\n'.repeat(n - 3)}([^\\n]*)\\n`;
}

/**
 * readCheckpoint — KEYS: m (builds the state key: a read). ARGV: workId, token.
 * - `{'FENCED', storedToken|nil, dataset|nil}` token differs or no lease.
 * - `{clean ('0'|'1'), bytes|nil}` the checkpoint (nil when none was ever saved) and whether this
 *   lease began cleanly, read together.
 * The lease calls connection reads the same three keys in one transaction instead and checks them
 * on the client, so the bytes do not pass through Lua (index.ts, readCheckpoint; the cost:
 * {@link checkpointStaged}); a Cluster, durability and a connection not up yet send this script.
 */
export const readCheckpoint: ScriptDef = {
  numberOfKeys: 1,
  lua: `
local m = redis.call('HGET', KEYS[1], ARGV[1])
if not m then${REFUSE('FENCED', 'false')}end
local tok, clean = string.match(m, '${tokenAnd(11)}')
if tok ~= ARGV[2] then${REFUSE('FENCED', 'tok or false')}end
return {clean, redis.call('GET', ${key("'s:' .. ARGV[1]")})}`,
};

/**
 * readState — KEYS: m, state. ARGV: workId, offset, length.
 * - nil when there is no lease (never acquired, or pruned).
 * - `{token, size|nil, bytes}` the page [offset, offset + length) of the stored checkpoint; size nil
 *   when none was ever saved. GETRANGE reads only the page, however large the checkpoint is.
 */
export const readState: ScriptDef = {
  numberOfKeys: 3,
  lua: `${IDENTITY}
local m = redis.call('HGET', KEYS[1], ARGV[1])
if not m then return false end
local tok, size = string.match(m, '${tokenAnd(10)}')
if not tok then return false end
if size == '' then return {tok, false, ''} end
return {tok, tonumber(size), redis.call('GETRANGE', KEYS[2], ARGV[2], ARGV[2] + ARGV[3] - 1)}`,
};

/**
 * prune (one bucket) — KEYS: exp, ids, chg, m, hold. ARGV: olderThanMs, limit, statePrefix.
 * A held work item (history-scripts.ts, hold) is never removed: it stays in the expiry index and
 * the next ZRANGEBYSCORE starts after the ones skipped so far. A lease that ran out unreleased
 * gets its `expired` history entry (docs/history.md), dated when it ran out; the handoff
 * checkpoint (`ho:`) goes with the checkpoint, the history stream (`h:`) stays (prune's history
 * retention, history-scripts.ts).
 * Removes at most `limit` leases whose expires_at <= now - olderThanMs (released, force-released
 * and run-out leases all have expires_at in the past; live ones are never touched) with their
 * checkpoints (and a staging key {@link checkpointStaged} left, `<bucket>:t:<workId>`, built from
 * statePrefix `<bucket>:s:`) and index entries. The lease's field keeps its last token as a tombstone so a later
 * acquire continues the sequence. Emits a `pruned` change (kind LF workId LF token LF version, the
 * version = last version + 1) per removed lease.
 * `exp` scores are lower bounds (see EXTEND): a candidate whose lease says it expires later gets its
 * true score and is skipped, so every candidate leaves the range and the loop ends.
 * Returns how many leases it removed.
 */
export const prune: ScriptDef = {
  numberOfKeys: 6,
  lua: `${IDENTITY}
${NOW}
local cutoff = now - ARGV[1]
local limit = tonumber(ARGV[2])
local base = string.sub(ARGV[3], 1, -3)
local staging = base .. 't:'
local n = 0
local skipped = 0
while n < limit do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff, 'LIMIT', skipped, limit - n)
  if #ids == 0 then break end
  for i = 1, #ids do
    local id = ids[i]
    local m = redis.call('HGET', KEYS[4], id) or ''
    ${UNPACK}
    if tok and tonumber(exp) > cutoff then
      redis.call('ZADD', KEYS[1], exp, id)
    elseif tok and redis.call('HEXISTS', KEYS[5], id) == 1 then
      skipped = skipped + 1
    else
      redis.call('ZREM', KEYS[1], id)
      redis.call('ZREM', KEYS[2], id)
      if tok then
        n = n + 1
        redis.call('HSET', KEYS[4], id, tok)
        redis.call('DEL', ARGV[3] .. id, staging .. id, base .. 'ho:' .. id)
        if ended == '' then
          ${historyPush("base .. 'h:' .. id", ["us .. '-0'", "'expired'", 'exp', 'holder', 'tok', 'size'])}
        end
        redis.call('XADD', KEYS[3], 'MAXLEN', '~', '${STREAM_MAXLEN}', '*', 'c',
          'pruned\\n' .. id .. '\\n' .. tok .. '\\n' .. string.format('%d', ver + 1))
      end
    end
  end
end
if n > 0 then redis.call('SPUBLISH', KEYS[3], '') end${WAKE}
return n`,
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
 * After {@link STREAM_INFO}: the Lua function `lost(id, k)`, true when a reader at stream id `id`
 * and ordinal `k` cannot go on from there. Either entries after it were trimmed away (more than k
 * removed), or the stream is not the one the reader read: it was deleted and started over, or a
 * replica that had not received the latest entries was promoted and wrote new ones. A stream that
 * started over has fewer entries added than k, or at least as many but no entry at `id`, which must
 * be there while its ordinal is above the trimmed ones (one XRANGE lookup, O(log n)).
 */
const LOST = `
local function lost(id, k)
  if added - len > k or added < k then return true end
  return k > added - len and #redis.call('XRANGE', KEYS[1], id, id) == 0
end`;

/**
 * changesRead (one bucket) — KEYS: chg. ARGV: cursor id (exclusive), count, cursor ordinal.
 * - `{1, {}}` gap: entries after the cursor were trimmed away (MAXLEN ~), or the stream is not the
 *   one the cursor was read from ({@link LOST}).
 * - `{0, {{streamId, {'c', change}}, …}}` up to `count` entries after the cursor, oldest first
 *   (see emit and prune for `change`). They have ordinals k+1, k+2, ….
 */
export const changesRead: ScriptDef = {
  numberOfKeys: 2,
  lua: `${IDENTITY}${STREAM_INFO}${LOST}
local k = tonumber(ARGV[3])
if lost(ARGV[1], k) then return {1, {}} end
if added == k then return {0, {}} end
return {0, redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])}`,
};

/**
 * streamHead — KEYS: a stream. Returns `{last generated id, entries added}` ('0-0', 0 when it does
 * not exist): where a change cursor starts. XREVRANGE would go back in time once trimming emptied
 * the stream.
 */
export const streamHead: ScriptDef = {
  numberOfKeys: 2,
  lua: `${IDENTITY}${STREAM_INFO}
return {last, added}`,
};

/**
 * The Lua function `index(w, m)`: puts work id `w` with packed lease `m` into the listing index
 * (KEYS[2], `ids`) and the expiry index (KEYS[3], `exp`), or takes it out of both when `m` is a
 * tombstone (no expiry field). `ZADD LT` only lowers an expiry-index score, so an entry older than
 * the score already there (a renew that shortened the lease ZADDed since) keeps the score a lower
 * bound (EXTEND); prune re-checks every candidate and raises stale scores.
 */
const INDEX = `
local function index(w, m)
  local e = string.match(m, '^[^\\n]*\\n[^\\n]*\\n([^\\n]*)')
  if e then
    redis.call('ZADD', KEYS[2], 'NX', '0', w)
    redis.call('ZADD', KEYS[3], 'LT', e, w)
  else
    redis.call('ZREM', KEYS[2], w)
    redis.call('ZREM', KEYS[3], w)
  end
end`;

/**
 * indexCatchUp (one bucket) — KEYS: chg, ids, exp, ix. ARGV: most entries to apply.
 * Applies the change entries after the position in `ix` (`<stream id> <ordinal>`, as a change
 * cursor: STREAM_INFO) to the listing and expiry indexes ({@link INDEX}; a `pruned` entry removes
 * the work id) and moves `ix` past them. The lease calls write no index entry but the shortened
 * renew's lower score (layout.ts, Indexes): every lease that gets or loses an index entry, or
 * ends, has a change entry saying so.
 * - `'OK'` the indexes hold every change entry the stream had when the script ran;
 * - `'MORE'` more than the most entries are waiting: call again;
 * - `'REBUILD'` `ix` is missing (a new or upgraded prefix), or entries after it were trimmed away
 *   (MAXLEN ~), or the stream started over ({@link LOST}): rebuild the indexes from the bucket hash
 *   ({@link indexRebuild}).
 */
export const indexCatchUp: ScriptDef = {
  numberOfKeys: 5,
  lua: `${IDENTITY}${STREAM_INFO}${LOST}${INDEX}
local at = redis.call('GET', KEYS[4])
if not at then return 'REBUILD' end
local id, k = string.match(at, '^([^ ]+) (%d+)$')
if not id then return 'REBUILD' end
k = tonumber(k)
if lost(id, k) then return 'REBUILD' end
if added == k then return 'OK' end
local es = redis.call('XRANGE', KEYS[1], '(' .. id, '+', 'COUNT', ARGV[1])
if #es == 0 then return 'REBUILD' end
for i = 1, #es do
  local kind, w, rest = string.match(es[i][2][2], '^([^\\n]*)\\n([^\\n]*)\\n(.*)$')
  if kind == 'pruned' then rest = '' end
  index(w, rest)
end
k = k + #es
redis.call('SET', KEYS[4], es[#es][1] .. ' ' .. string.format('%d', k))
if k < added then return 'MORE' end
return 'OK'`,
};

/**
 * indexRebuild (one bucket) — KEYS: chg, ids, exp, ix, m. ARGV: HSCAN cursor ('0' to start), count,
 * start position ('' on the first call).
 * Indexes up to `count` fields of the bucket hash ({@link INDEX}). The first call deletes `ix` and
 * takes the stream's head as the start position; the call whose HSCAN completes stores it in `ix`
 * (unless another rebuild stored its own first), so {@link indexCatchUp} then applies every change
 * made since the rebuild began: HSCAN returns every field that exists for the whole scan, and one
 * added or changed meanwhile has a change entry after the start position. Returns
 * `{next cursor, start position}`; cursor '0' means done.
 */
export const indexRebuild: ScriptDef = {
  numberOfKeys: 6,
  lua: `${IDENTITY}${INDEX}
local start = ARGV[3]
if ARGV[1] == '0' then${STREAM_INFO}
  start = last .. ' ' .. string.format('%d', added)
  redis.call('DEL', KEYS[4])
end
local r = redis.call('HSCAN', KEYS[5], ARGV[1], 'COUNT', ARGV[2])
local kv = r[2]
for i = 1, #kv, 2 do index(kv[i], kv[i + 1]) end
if r[1] == '0' then redis.call('SET', KEYS[4], start, 'NX') end
return {r[1], start}`,
};

/**
 * migrate — KEYS: meta. ARGV: layout version, bucket count, a new random dataset id, the layout it
 * upgrades by adding dataset ids (2), then the layouts it upgrades by their number alone (3 and 4;
 * layout.ts).
 * No identity check: this is what creates the identity.
 * - no meta hash: creates it (layout, buckets, dataset, created_at; not yet `ready`);
 * - a meta hash of layout 2 without a dataset id: adds the id (the layout stays until
 *   the buckets have their `id` keys and {@link markReady} runs);
 * - a meta hash of layout 3 or 4: says the current layout (its packed leases read unchanged, and
 *   its indexes are rebuilt when first read: indexCatchUp finds no `ix`);
 * - anything else is left alone.
 * Two processes opening at once both get the first one's values. Returns
 * `{layout, buckets, dataset, ready}` as stored, which the caller checks.
 */
export const migrate: ScriptDef = {
  numberOfKeys: 1,
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then
  ${NOW}
  redis.call('HSET', KEYS[1], 'layout', ARGV[1], 'buckets', ARGV[2], 'dataset', ARGV[3], 'created_at', now)
elseif redis.call('HGET', KEYS[1], 'layout') == ARGV[4] then
  redis.call('HSETNX', KEYS[1], 'dataset', ARGV[3])
else
  local layout = redis.call('HGET', KEYS[1], 'layout')
  for i = 5, #ARGV do
    if layout == ARGV[i] then redis.call('HSET', KEYS[1], 'layout', ARGV[1]) end
  end
end
return redis.call('HMGET', KEYS[1], 'layout', 'buckets', 'dataset', 'ready')`,
};

/**
 * markReady — KEYS: meta. ARGV: layout version, dataset id. After every bucket's `id` key holds the
 * dataset id: sets layout and `ready` = 1 if the meta hash still holds that dataset. Returns 1, or 0
 * when it does not (the meta key was lost or replaced meanwhile).
 */
export const markReady: ScriptDef = {
  numberOfKeys: 1,
  lua: `
if redis.call('HGET', KEYS[1], 'dataset') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'layout', ARGV[1], 'ready', '1')
return 1`,
};
