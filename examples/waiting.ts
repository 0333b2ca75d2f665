/**
 * Waiting acquire: a second worker waits for a report that the first one is
 * building, and takes it over the moment the first one releases it — woken by
 * the backend, not by polling.
 *
 * Run: npx tsx examples/waiting.ts [backend url]   (default pglite://memory)
 */
import { pathToFileURL } from 'node:url';
import { claim, openBackend } from 'worklease';

export async function main(url = process.argv[2] ?? 'pglite://memory') {
  const backend = await openBackend(url);
  try {
    const first = await claim(backend, 'report-2026-12', 'builder-1', { ttlMs: 30_000 });
    await first.save(new TextEncoder().encode('{"pages":40}'));

    const started = performance.now();
    // Waits up to 10 s for the lease to be released, force-released or to run out.
    const waiting = claim(backend, 'report-2026-12', 'builder-2', { ttlMs: 30_000, waitMs: 10_000 });
    setTimeout(() => void first.release(), 300); // builder-1 hands over after 300 ms

    const second = await waiting;
    const waitedMs = Math.round(performance.now() - started);
    const state = new TextDecoder().decode(second.state ?? new Uint8Array());
    console.log(`builder-2 took the report after ${waitedMs} ms, resuming from ${state}`);
    // Not expired: builder-1 released it, so this is a clean handoff.
    console.log(`clean handoff: ${!second.expired}, token ${second.token} > ${first.token}`);
    await second.release();
    return { waitedMs, state, cleanHandoff: !second.expired, tokens: [first.token, second.token] };
  } finally {
    await backend.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
