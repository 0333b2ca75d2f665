/**
 * Observability: a span per lease call with its outcome, the call-duration
 * histogram by call and outcome, the holder metrics (leases held, heartbeat
 * lag, losses by reason) and the logger hook, against a real backend with the
 * OpenTelemetry SDK configured through the open options.
 */
import { trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  claim,
  InvalidArgumentError,
  type LeaseBackend,
  LeaseHeldError,
  openBackend,
} from '../../src/index.ts';
import { Telemetry, telemetryReady } from '../../src/lease/telemetry.ts';

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

interface Point {
  attributes: Record<string, unknown>;
  value: unknown;
}

async function points(reader: TestReader, name: string): Promise<Point[]> {
  const { resourceMetrics } = (await reader.collect()) as { resourceMetrics: ResourceMetrics };
  const out: Point[] = [];
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      for (const p of metric.dataPoints) out.push({ attributes: p.attributes, value: p.value });
    }
  }
  return out;
}

describe('telemetry on pglite', () => {
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const logs: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const log =
    (level: string) =>
    (obj: Record<string, unknown>, msg: string): void => {
      logs.push({ level, obj, msg });
    };
  const logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
  let backend: LeaseBackend;

  beforeAll(async () => {
    backend = await openBackend('pglite://memory', { meterProvider, tracerProvider, logger });
  });
  afterAll(async () => {
    await backend?.close();
  });

  it('records a span and a duration per call, with the outcome code', async () => {
    const lease = await backend.acquire('t-1', 'a', 10_000);
    await expect(backend.acquire('t-1', 'b', 10_000)).rejects.toBeInstanceOf(LeaseHeldError);
    await backend.renew(lease, 10_000);
    await backend.release(lease);
    const finished = spans.getFinishedSpans().map((s) => ({
      name: s.name,
      outcome: s.attributes['worklease.outcome'],
      workId: s.attributes['worklease.work_id'],
      status: s.status.code,
    }));
    expect(finished).toEqual([
      { name: 'worklease.acquire', outcome: 'ok', workId: 't-1', status: 0 },
      { name: 'worklease.acquire', outcome: 'LEASE_HELD', workId: 't-1', status: 2 },
      { name: 'worklease.renew', outcome: 'ok', workId: 't-1', status: 0 },
      { name: 'worklease.release', outcome: 'ok', workId: 't-1', status: 0 },
    ]);
    const durations = await points(reader, 'worklease.call.duration');
    const count = (call: string, outcome: string): number =>
      durations
        .filter(
          (p) => p.attributes['worklease.call'] === call && p.attributes['worklease.outcome'] === outcome,
        )
        .reduce((n, p) => n + (p.value as { count: number }).count, 0);
    expect(count('acquire', 'ok')).toBe(1);
    expect(count('acquire', 'LEASE_HELD')).toBe(1);
    expect(count('renew', 'ok')).toBe(1);
    expect(count('release', 'ok')).toBe(1);
    // The work id is a span attribute only: as a metric label it would make one series per item.
    expect(durations.every((p) => !('worklease.work_id' in p.attributes))).toBe(true);
  });

  it('holder metrics: leases held, heartbeat lag, losses by reason; the loss is logged', async () => {
    const held = async (): Promise<number> =>
      (await points(reader, 'worklease.holder.leases')).reduce((n, p) => n + Number(p.value), 0);
    const h = await claim(backend, 't-2', 'a', { ttlMs: 600 });
    expect(await held()).toBe(1);
    h.heartbeat({ intervalMs: 100 });
    await new Promise((r) => setTimeout(r, 450));
    const lag = await points(reader, 'worklease.heartbeat.lag');
    expect((lag[0]?.value as { count: number } | undefined)?.count ?? 0).toBeGreaterThanOrEqual(2);
    await backend.admin.forceRelease('t-2', { expectedToken: h.token, operator: 'op', reason: 'test' });
    await new Promise<void>((resolve) => h.signal.addEventListener('abort', () => resolve()));
    expect(await held()).toBe(0);
    const lost = await points(reader, 'worklease.holder.lost');
    expect(lost.map((p) => [p.attributes['worklease.reason'], p.value])).toEqual([['fenced', 1]]);
    const warning = logs.find((l) => l.level === 'warn');
    expect(warning?.obj).toMatchObject({ workId: 't-2', reason: 'fenced' });
    // A release is not a loss.
    const h2 = await claim(backend, 't-3', 'a', { ttlMs: 5000 });
    await h2.release();
    expect(await held()).toBe(0);
    expect((await points(reader, 'worklease.holder.lost')).length).toBe(1);
  });

  it('refuses a logger or provider that is not one, before any I/O', async () => {
    for (const bad of [
      { logger: {} },
      { logger: { info() {}, warn() {}, error() {} } },
      { meterProvider: {} },
      { tracerProvider: 42 },
    ]) {
      await expect(openBackend('pglite://memory', bad as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    }
  });

  it('works without any provider (the global no-op)', async () => {
    const plain = await openBackend('pglite://memory');
    try {
      const lease = await plain.acquire('x', 'a', 1000);
      await plain.release(lease);
    } finally {
      await plain.close();
    }
  });
});

describe('telemetry with the global providers and no SDK', () => {
  it('adds nothing to a call (its own promise comes back), and traces from the moment an SDK registers', async () => {
    await telemetryReady;
    const t = new Telemetry('pglite');
    const done = Promise.resolve('value');
    // Nothing would be recorded: no span, no clock read, no promise of its own.
    expect(t.call('renew', 'w-1', () => done)).toBe(done);

    const spans = new InMemorySpanExporter();
    const sdk = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    expect(trace.setGlobalTracerProvider(sdk)).toBe(true);
    try {
      const traced = t.call('renew', 'w-1', () => done);
      expect(traced).not.toBe(done);
      await expect(traced).resolves.toBe('value');
      expect(spans.getFinishedSpans().map((s) => [s.name, s.attributes['worklease.outcome']])).toEqual([
        ['worklease.renew', 'ok'],
      ]);
    } finally {
      trace.disable();
    }
  });

  it('still logs a failed call when only a logger is given', async () => {
    await telemetryReady;
    const logged: string[] = [];
    const quiet = () => {};
    const t = new Telemetry('pglite', {
      logger: { debug: (_o, msg) => logged.push(msg), info: quiet, warn: quiet, error: quiet },
    });
    await expect(t.call('renew', 'w-1', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(logged).toEqual(['worklease renew failed']);
  });
});
