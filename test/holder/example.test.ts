/**
 * The example of docs/holder.md, verbatim between the markers, so that it
 * type-checks and runs. If you change one, change the other.
 */
import { expect, it } from 'vitest';
import { PG_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';

const schema = uniqueNamespace('example');
const batches: number[] = [];
async function importBatch(offset: number, options: { signal: AbortSignal }): Promise<void> {
  options.signal.throwIfAborted();
  batches.push(offset);
}

async function example(LEASE_URL: string, SCHEMA: string): Promise<void> {
  const { openBackend, withLease } = await import('worklease');
  // --- docs/holder.md example: start ---
  const backend = await openBackend(LEASE_URL, { schema: SCHEMA });
  try {
    // Import shard 17. If this process dies, another replica takes over from the last checkpoint.
    const offset = await withLease(
      backend,
      'shard-17', // the work item
      `importer-${process.pid}`, // this holder
      { ttlMs: 30_000, stepId: 'import' },
      async (holder) => {
        let offset = holder.state === null ? 0 : Number(new TextDecoder().decode(holder.state));
        if (holder.expired) console.warn(`the previous holder died; resuming at ${offset}`);
        while (offset < 1000) {
          holder.signal.throwIfAborted(); // lease lost: stop and write nothing more
          await importBatch(offset, { signal: holder.signal });
          offset += 100;
          await holder.save(new TextEncoder().encode(String(offset)));
        }
        return offset;
      },
    );
    console.log(`shard-17 imported up to ${offset}`);
  } finally {
    await backend.close();
  }
  // --- docs/holder.md example: end ---
}

it('the documented example runs', async () => {
  try {
    await example(PG_URL, schema);
    expect(batches).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900]);
  } finally {
    await dropNamespace({ kind: 'postgres', url: PG_URL }, schema);
  }
});
