/**
 * Request release: an operator asks the worker holding a job to hand it over
 * (say, to drain its node). The worker learns of it from its next heartbeat,
 * saves its progress and releases; the next worker resumes from that
 * checkpoint with a clean handoff. Nothing was taken away mid-write.
 *
 * Run: npx tsx examples/request-release.ts [backend url]   (default pglite://memory)
 */
import { pathToFileURL } from 'node:url';
import { claim, openBackend, withLease } from 'worklease';

export async function main(url = process.argv[2] ?? 'pglite://memory') {
  const backend = await openBackend(url);
  try {
    let asked: { operator: string; reason: string } | null = null;
    let started!: () => void;
    const working = new Promise<void>((resolve) => {
      started = resolve;
    });
    // worker-1 copies rows, one checkpoint per batch, until it is asked to hand over.
    const run = withLease(
      backend,
      'import-2026-12',
      'worker-1',
      { ttlMs: 3_000, intervalMs: 100 },
      async (holder, { releaseRequested }) => {
        let rows = 0;
        while (!releaseRequested.aborted) {
          rows += 100;
          await holder.save(new TextEncoder().encode(JSON.stringify({ rows })));
          if (rows === 300) started();
          await new Promise((r) => setTimeout(r, 20));
        }
        // Asked: the progress is saved, so return; withLease releases cleanly.
        asked = holder.releaseRequested;
        return rows;
      },
    );

    await working;
    const lease = await backend.admin.get('import-2026-12');
    // What the console's "Request release" does: name the token you saw, who you are and why.
    await backend.admin.requestRelease('import-2026-12', {
      expectedToken: lease!.fencingToken,
      operator: 'alice',
      reason: 'draining node 7 for an upgrade',
    });
    const rows = await run;
    console.log(`worker-1 was asked by ${asked!.operator} (${asked!.reason}) and stopped at ${rows} rows`);

    const next = await claim(backend, 'import-2026-12', 'worker-2', { ttlMs: 30_000 });
    const state = new TextDecoder().decode(next.state ?? new Uint8Array());
    console.log(`worker-2 resumes from ${state}; clean handoff: ${!next.expired}`);
    await next.release();
    const audit = await backend.admin.audit({ workId: 'import-2026-12' });
    console.log(`audit: ${audit.map((e) => `${e.action} by ${e.operator}`).join(', ')}`);
    return {
      rows,
      state,
      cleanHandoff: !next.expired,
      asked,
      audit: audit.map((e) => e.action),
    };
  } finally {
    await backend.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
