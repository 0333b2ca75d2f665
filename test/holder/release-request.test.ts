/**
 * Request release in the holder layer, on real backends: the holder learns of an operator's
 * request from the answer of its heartbeat renew or its save (no extra call), tells the work
 * (`onReleaseRequested`, `releaseSignal`, withLease's `releaseRequested` signal), and a
 * cooperating holder saves and releases so the successor resumes with a clean handoff. The
 * request → release latency lands in its histogram.
 */
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { afterAll, describe, expect, it } from 'vitest';
import {
  claim,
  InvalidArgumentError,
  type LeaseBackend,
  type LeaseHolder,
  openBackend,
  type ReleaseRequest,
  withLease,
} from '../../src/index.ts';
import { type BackendTarget, isolated, PG_URL, REDIS_URL, uniqueNamespace } from '../support/backends.ts';
import { dropNamespace } from '../support/faults.ts';
import { spyBackend } from './spy.ts';

const targets: BackendTarget[] = [
  { kind: 'pglite', url: 'pglite://memory' },
  { kind: 'postgres', url: PG_URL },
  { kind: 'redis', url: REDIS_URL },
];

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

async function histogramCount(reader: TestReader, name: string): Promise<number> {
  const { resourceMetrics } = (await reader.collect()) as { resourceMetrics: ResourceMetrics };
  let n = 0;
  for (const scope of resourceMetrics.scopeMetrics)
    for (const metric of scope.metrics)
      if (metric.descriptor.name === name)
        for (const p of metric.dataPoints) n += (p.value as { count: number }).count;
  return n;
}

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const str = (b: Uint8Array | null): string | null => (b === null ? null : new TextDecoder().decode(b));

/** Resolves when `signal` aborts (or at once if it has). */
const aborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });

describe.each(targets)('request release in the holder layer on $kind', (target) => {
  const namespace = uniqueNamespace('rrhold');
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  let backend: LeaseBackend | undefined;
  const open = async (): Promise<LeaseBackend> => {
    backend ??= await openBackend(target.url, { ...isolated(target, namespace), meterProvider });
    return backend;
  };
  let seq = 0;
  const item = (): string => `rr-item-${++seq}`;

  afterAll(async () => {
    await backend?.close().catch(() => {});
    await dropNamespace(target, namespace);
  });

  it('the heartbeat renew learns of the request: onReleaseRequested once, releaseSignal aborted, lease kept', async () => {
    const b = await open();
    const spy = spyBackend(b);
    const w = item();
    const seen: ReleaseRequest[] = [];
    let seenHolder: LeaseHolder | undefined;
    const h = await claim(spy.backend, w, 'worker-1', {
      ttlMs: 3_000,
      onReleaseRequested: (r, holder) => {
        seen.push(r);
        seenHolder = holder;
      },
    });
    expect(h.releaseRequested).toBeNull();
    expect(h.releaseSignal.aborted).toBe(false);
    h.heartbeat({ intervalMs: 50 });
    const asked = await b.admin.requestRelease(w, {
      expectedToken: h.token,
      operator: 'alice',
      reason: 'node drain',
    });
    await aborted(h.releaseSignal);
    const renewsAtNotice = spy.calls.renew ?? 0;
    expect(h.releaseRequested).toEqual(asked.releaseRequest);
    expect(h.releaseSignal.reason).toEqual(asked.releaseRequest);
    // The lease is still this holder's: the lost signal is untouched and renewals go on.
    expect(h.signal.aborted).toBe(false);
    expect(h.lost).toBe(false);
    // Learnt from renew answers alone: the holder made no other kind of call.
    expect(Object.keys(spy.calls).sort()).toEqual(['acquire', 'readCheckpoint', 'renew']);
    await new Promise((r) => setTimeout(r, 200));
    expect(spy.calls.renew).toBeGreaterThan(renewsAtNotice);
    expect(seen).toEqual([asked.releaseRequest]);
    expect(seenHolder).toBe(h);
    await h.release();
  });

  it('a save learns of it too, without a heartbeat', async () => {
    const b = await open();
    const w = item();
    const h = await claim(b, w, 'worker-1', { ttlMs: 30_000 });
    await b.admin.requestRelease(w, { expectedToken: h.token, operator: 'bob', reason: 'deploy' });
    expect(h.releaseRequested).toBeNull();
    await h.save(text('s1'));
    expect(h.releaseRequested).toMatchObject({ operator: 'bob', reason: 'deploy' });
    expect(h.releaseSignal.aborted).toBe(true);
    await h.release();
  });

  it('withLease: the work sees releaseRequested, saves and returns; the successor resumes with a clean handoff', async () => {
    const b = await open();
    const w = item();
    const before = await histogramCount(reader, 'worklease.release_request.latency');
    let claimed!: () => void;
    const started = new Promise<void>((r) => {
      claimed = r;
    });
    const run = withLease(b, w, 'worker-1', { ttlMs: 3_000, intervalMs: 50 }, async (holder, signals) => {
      expect(signals.lost).toBe(holder.signal);
      expect(signals.releaseRequested).toBe(holder.releaseSignal);
      await holder.save(text('step 1'));
      claimed();
      await aborted(signals.releaseRequested);
      await holder.save(text('step 2, handed over'));
      return 'handed over';
    });
    await started;
    const info = (await b.admin.get(w))!;
    await b.admin.requestRelease(w, {
      expectedToken: info.fencingToken,
      operator: 'op',
      reason: 'rebalance',
    });
    expect(await run).toBe('handed over');
    const after = (await b.admin.get(w))!;
    expect(after).toMatchObject({ ended: 'released', releaseRequest: null });
    const next = await claim(b, w, 'worker-2', { ttlMs: 30_000 });
    expect(next.expired).toBe(false);
    expect(str(next.state)).toBe('step 2, handed over');
    await next.release();
    expect(await histogramCount(reader, 'worklease.release_request.latency')).toBe(before + 1);
  });

  it('a release without a request records no request latency; a bad callback is refused before any I/O', async () => {
    const b = await open();
    const before = await histogramCount(reader, 'worklease.release_request.latency');
    const h = await claim(b, item(), 'worker-1', { ttlMs: 30_000 });
    await h.release();
    expect(await histogramCount(reader, 'worklease.release_request.latency')).toBe(before);
    const w = item();
    await expect(claim(b, w, 'worker-1', { onReleaseRequested: 'yes' as never })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(
      withLease(b, w, 'worker-1', { onReleaseRequested: 1 as never }, async () => 1),
    ).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await b.admin.get(w)).toBeNull();
  });
});
