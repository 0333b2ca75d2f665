/**
 * Leader election: two scheduler replicas campaign for `scheduler`; only the
 * leader writes. The term is the lease's fencing token, and the store the
 * leader writes to refuses a term older than the newest it has seen — so when
 * the old leader stalls and is replaced, its late write is refused.
 *
 * Run: npx tsx examples/election.ts [backend url]   (default pglite://memory)
 */
import { pathToFileURL } from 'node:url';
import { lead, openBackend, type Term } from 'worklease';

/** Any store that can compare a number in the same write (e.g. `UPDATE … WHERE term <= $1`). */
class FencedStore {
  private newestTerm = 0n;
  readonly writes: string[] = [];
  write(term: bigint, value: string): boolean {
    if (term < this.newestTerm) return false; // a deposed leader: refused
    this.newestTerm = term;
    this.writes.push(value);
    return true;
  }
}

export async function main(url = process.argv[2] ?? 'pglite://memory') {
  const backend = await openBackend(url);
  const store = new FencedStore();
  const terms: Record<string, bigint[]> = { a: [], b: [] };
  let elected: (term: Term) => void = () => {};
  const nextElection = () => new Promise<Term>((resolve) => (elected = resolve));
  const candidate = (id: 'a' | 'b') =>
    lead(backend, 'scheduler', `replica-${id}`, {
      ttlMs: 2000,
      onElected(term) {
        terms[id]!.push(term.token);
        console.log(`replica-${id} leads, term ${term.token}`);
        elected(term);
      },
      onDeposed({ token, reason }) {
        console.log(`replica-${id} no longer leads (term ${token}, ${reason})`);
      },
    });
  try {
    let election = nextElection();
    const a = candidate('a');
    const first = await election;
    store.write(first.token, 'plan by the first leader');
    election = nextElection();
    const b = candidate('b');

    // The first leader stalls; an operator force-releases it and the other replica takes over.
    await backend.admin.forceRelease('scheduler', {
      expectedToken: first.token,
      operator: 'ops',
      reason: 'leader stalled',
    });
    const second = await election;
    store.write(second.token, 'plan by the second leader');
    // The stalled leader wakes up and writes with its old term: refused.
    const lateWriteAccepted = store.write(first.token, 'late plan by the deposed leader');
    console.log(`late write by the deposed leader accepted: ${lateWriteAccepted}`);
    await Promise.all([a.stop(), b.stop()]);
    return { first: first.token, second: second.token, lateWriteAccepted, writes: store.writes, terms };
  } finally {
    await backend.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
