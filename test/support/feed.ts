/**
 * A change cursor from which the feed delivers nothing now, for tests that then check that some
 * write adds no entry. The feed delivers at least once: on PostgreSQL a cursor is its snapshot's
 * xmin, and while another session's older transaction is open (other test files run beside
 * every test) a fresh cursor still delivers changes committed after that transaction began.
 * Polls fresh cursors until one delivers nothing for the items `of` picks (every item by default).
 */
import type { LeaseAdmin } from '../../src/index.ts';

export async function quietCursor(
  admin: LeaseAdmin,
  of: (workId: string) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const cursor = await admin.changeCursor();
    const batch = await admin.changes({ cursor, limit: 1000 });
    if (!batch.changes.some((c) => of(c.workId))) return cursor;
    if (Date.now() > deadline)
      throw new Error(`every new change cursor still delivered changes for ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
