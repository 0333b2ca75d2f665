/**
 * One group member as its own process, for group.test.ts: joins the group and
 * works on what it is assigned, printing one JSON line per event on stdout.
 * Usage: node --import tsx test/group/member.ts <pg url> <schema> <group> <holder id> <items>
 */
import { joinGroup, type LeaseHolder, openBackend } from '../../src/index.ts';

const [url = '', schema = '', group = '', holderId = '', count = '0'] = process.argv.slice(2);
const print = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ member: holderId, ...event })}\n`);
};
const workIds = Array.from({ length: Number(count) }, (_, i) => `item-${String(i).padStart(3, '0')}`);
const log =
  (level: string) =>
  (obj: Record<string, unknown>, msg: string): void => {
    if (level === 'debug' || level === 'info') return;
    const err = obj.err instanceof Error ? `${obj.err.name}: ${obj.err.message}` : '';
    process.stderr.write(`${holderId} ${level} ${msg} ${err}\n`);
  };
const logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
const backend = await openBackend(url, { schema, poolSize: 3, logger });
const working = new Map<string, { stop: boolean; done: Promise<void> }>();

/** The work: count up, one checkpoint every 500 ms, from the checkpoint it resumed from. */
function work(h: LeaseHolder): void {
  const state = { stop: false, done: Promise.resolve() };
  state.done = (async () => {
    let value = h.state === null ? 0 : Number(new TextDecoder().decode(h.state));
    while (!state.stop && !h.signal.aborted) {
      await new Promise((r) => setTimeout(r, 500));
      if (state.stop || h.signal.aborted) break;
      print({ ev: 'saving', item: h.workId, token: String(h.token), value: value + 1 });
      try {
        await h.save(new TextEncoder().encode(String(value + 1)));
      } catch {
        break;
      }
      value++;
      print({ ev: 'saved', item: h.workId, token: String(h.token), value });
    }
  })();
  working.set(h.workId, state);
}

const member = await joinGroup(backend, {
  group,
  holderId,
  workIds,
  ttlMs: 3000,
  rebalanceMs: 500,
  onAssigned(h) {
    const value = h.state === null ? 0 : Number(new TextDecoder().decode(h.state));
    print({ ev: 'assigned', item: h.workId, token: String(h.token), value, expired: h.expired });
    work(h);
  },
  async onRevoked(workId, reason) {
    const w = working.get(workId);
    working.delete(workId);
    if (w !== undefined) {
      w.stop = true;
      await w.done;
    }
    print({ ev: 'revoked', item: workId, reason });
  },
});
print({ ev: 'joined', members: member.members.length });
process.on('SIGTERM', () => {
  void member.leave().then(() => backend.close().then(() => process.exit(0)));
});
