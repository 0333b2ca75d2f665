/**
 * Run by decode-heap.test.ts under --expose-gc: decodes 40 different checkpoints through one
 * DecodedCheckpoints (what a console server keeps for its whole life), with tree pages, searches
 * and exports, and prints the heap after a full collection at 15 and at 40, and the cache size.
 */
import { DecodedCheckpoints } from '../../src/console/decode/store.ts';
import { openBackend } from '../../src/index.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');
const backend = await openBackend('pglite://memory', { maxStateBytes: 4 * 1024 * 1024 });
const store = new DecodedCheckpoints();
const owner = {};
const heap = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};
const out: Record<string, number> = {};
for (let i = 0; i < 40; i++) {
  const workId = `item-${i}`;
  const r = await backend.acquire(workId, 'w', 60_000);
  const doc = { i, rows: Array.from({ length: 6_000 }, (_, j) => ({ j, s: `row-${i}-${j}` })) };
  await backend.checkpoint(r, new TextEncoder().encode(JSON.stringify(doc)), 60_000);
  await backend.release(r);
  const base = { connectionId: 'c', workId, path: [] as string[], offset: 0, limit: 200 };
  const t = await store.tree(owner, backend.admin, base);
  await store.tree(owner, backend.admin, { ...base, id: t!.id, path: ['rows'], offset: 3000 });
  await store.search(owner, backend.admin, {
    workId,
    id: t!.id,
    query: `row-${i}-5999`,
    limit: 10,
    connectionId: 'c',
  });
  await store.export(owner, backend.admin, {
    workId,
    id: t!.id,
    format: 'json',
    path: ['rows'],
    offset: 0,
    connectionId: 'c',
  });
  if (i === 14) out.heapAt15 = heap();
}
out.heapAt40 = heap();
out.cached = store.size;
await backend.close();
console.log(JSON.stringify(out));
