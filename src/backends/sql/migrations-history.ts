/**
 * Migration 13: a work item's history, the checkpoint at its last handoff, and holds
 * (docs/history.md). In a file of its own so that migrations.ts stays readable; the runner
 * (migrations.ts) lists it with the others.
 */
import type { Migration } from './migrations.ts';

export const HISTORY_MIGRATIONS: readonly Migration[] = [
  {
    version: 13,
    name: '013_history_hold',
    sql: (s) => `
-- The ownership changes of each work item (admin.history), insert-only: acquire, release,
-- force-release, request-release, hold and unhold each insert one row in the statement that makes
-- the change; an expiry is recorded by the acquire that takes the lease over (or the prune that
-- removes it), in lease_expired below. renew and checkpoint write nothing here. Only prune deletes
-- (retention by age and by count per item). The leases table gets no index and no indexed column
-- for it, so renew and checkpoint stay HOT updates. The BRIN index serves the retention by age at
-- almost no cost to the inserts (rows arrive in time order).
CREATE DOMAIN ${s}.history_kind AS text CHECK (VALUE IN
  ('acquired', 'released', 'expired', 'force-released', 'release-requested', 'held', 'unheld'));
CREATE TABLE ${s}.history (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  work_id          text COLLATE "C" NOT NULL,
  at               timestamptz NOT NULL,
  kind             ${s}.history_kind NOT NULL,
  holder_id        text NOT NULL,
  token            bigint NOT NULL,
  operator         text,
  reason           text,
  checkpoint_bytes integer
);
CREATE INDEX history_work_idx ON ${s}.history (work_id, id);
CREATE INDEX history_at_idx ON ${s}.history USING brin (at);

-- The checkpoint as it was when the current (or last) lease of a work item was acquired, for the
-- console's diff against the current one: written by acquire when a checkpoint exists (the copy
-- is the cost; renew and checkpoint do not touch it), deleted by prune with the item.
CREATE TABLE ${s}.handoff_states (
  work_id text COLLATE "C" PRIMARY KEY,
  token   bigint NOT NULL,
  state   bytea NOT NULL
);

-- A hold (admin.hold): while held_at is set, acquire raises WL004 (lease_on_hold) with the hold
-- as JSON in DETAIL and writes nothing. No index: acquire reads the columns of the row it locks.
ALTER TABLE ${s}.leases
  ADD COLUMN held_at timestamptz,
  ADD COLUMN held_by text,
  ADD COLUMN hold_reason text;

CREATE FUNCTION ${s}.lease_on_hold(at timestamptz, by text, why text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING
    ERRCODE = 'WL004',
    MESSAGE = 'worklease: acquire refused: the work item is on hold (an operator''s admin.hold; nothing was written)',
    DETAIL = json_build_object(
      'at', (extract(epoch FROM date_trunc('milliseconds', at)) * 1000)::int8,
      'operator', by,
      'reason', why)::text;
END
$$;

-- Called by acquire's ON CONFLICT WHERE when it takes over a lease that ran out without an end
-- (released, force-released or pruned rows were ended already): records the expiry with the
-- holder and token of the row version it locked, and answers true. Runs only on that path.
CREATE FUNCTION ${s}.lease_expired(wid text, holder text, tok bigint, exp timestamptz, size integer)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${s}.history (work_id, at, kind, holder_id, token, checkpoint_bytes)
  VALUES (wid, exp, 'expired', holder, tok, size);
  RETURN true;
END
$$;
`,
  },
];
