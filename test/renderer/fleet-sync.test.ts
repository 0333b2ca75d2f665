import { QueryClient } from '@tanstack/react-query';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ConsoleClient } from '../../renderer/api/client.ts';
import { keys } from '../../renderer/api/queries.ts';
import { FLUSH_MS, FleetSync } from '../../renderer/api/sync.ts';
import { type FleetData, fromSnapshot, type LeasesEvent } from '../../renderer/features/fleet/model.ts';
import type { ConsoleEvent } from '../../src/console/api.ts';
import { leaseRow } from '../support/lease-row.ts';

/**
 * How pushed lease events reach the fleet's query data, on fake timers (performance.now included).
 * Type-checked with the renderer's sources (tsconfig.renderer.json: the DOM's types), as sync.ts is.
 */
describe('the fleet sync batches', () => {
  let push: (event: ConsoleEvent) => void;
  let queryClient: QueryClient;
  let stop: () => void;
  let seq: number;

  beforeEach(() => {
    vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    queryClient = new QueryClient();
    queryClient.setQueryData(
      keys.fleet('c'),
      fromSnapshot({ connectionId: 'c', rows: [], seq: 0, serverTime: 0 }),
    );
    const client = {
      subscribe(listener: (event: ConsoleEvent) => void) {
        push = listener;
        return () => {};
      },
      onTransportState: () => () => {},
    } as unknown as ConsoleClient;
    stop = new FleetSync(client, queryClient).start();
    seq = 0;
  });
  afterEach(() => {
    stop();
    queryClient.clear();
    vi.useRealTimers();
  });

  const lease = (workId: string) => {
    const event: LeasesEvent = {
      type: 'leases',
      connectionId: 'c',
      seq: ++seq,
      upserts: [leaseRow(0, { workId })],
      removed: [],
      serverTime: Date.now(),
    };
    push(event);
  };
  const shown = () => [...(queryClient.getQueryData<FleetData>(keys.fleet('c'))?.rows.keys() ?? [])];
  /** Runs the timers set so far, not those they set. */
  const settle = () => vi.runOnlyPendingTimersAsync();

  it('applies a lone event in the next task, not after the batch interval', async () => {
    lease('a');
    expect(shown()).toEqual([]);
    await settle();
    expect(Date.now()).toBeLessThan(FLUSH_MS);
    expect(shown()).toEqual(['a']);
  });

  it(`holds events that follow a batch until ${FLUSH_MS} ms after it, then applies them together`, async () => {
    lease('a');
    await settle();
    const first = Date.now();
    await vi.advanceTimersByTimeAsync(10);
    lease('b');
    lease('c');
    await vi.advanceTimersByTimeAsync(first + FLUSH_MS - 1 - Date.now());
    expect(shown()).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(1);
    expect(shown().sort()).toEqual(['a', 'b', 'c']);
  });

  it('after a quiet spell, the next event is applied at once again', async () => {
    lease('a');
    await settle();
    await vi.advanceTimersByTimeAsync(3 * FLUSH_MS);
    const at = Date.now();
    lease('b');
    await settle();
    expect(Date.now() - at).toBeLessThan(FLUSH_MS);
    expect(shown().sort()).toEqual(['a', 'b']);
  });
});
