/**
 * Worker-thread entry of the chaos harness: one thread per worker so that
 * freezing one (a blocked event loop) leaves the others free to take its
 * leases over, as with separate processes. Events are posted to the runner in
 * small batches; `freeze` messages block this thread's event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openBackend } from '../index.ts';
import type { OpenOptions } from '../lease/types.ts';
import type { HistoryEvent } from './history.ts';
import { brokenBackend, recordingBackend } from './recording.ts';
import { freezeEvent, freezeThread, runWorker, type WorkerConfig, type WorkerControl } from './worker.ts';

export interface ThreadData {
  url: string;
  openOptions: OpenOptions;
  broken: boolean;
  config: WorkerConfig;
}

export type ToThread =
  | { type: 'start'; untilMs: number }
  | { type: 'freeze'; ms: number; beforeSave: boolean }
  | { type: 'stop' };
export type FromThread =
  | { type: 'ready' }
  | { type: 'events'; events: HistoryEvent[] }
  | { type: 'done'; stats: import('./worker.ts').WorkerStats }
  | { type: 'failed'; message: string };

const port = parentPort;
if (port === null) throw new Error('thread.ts runs as a worker thread');
const data = workerData as ThreadData;
const control: WorkerControl = {
  freezeBeforeSaveMs: 0,
  stopped: false,
  onFreeze: (ms) => freezeEvent((e) => batch.push(e), ms),
};
let batch: HistoryEvent[] = [];
const flush = (): void => {
  if (batch.length === 0) return;
  port.postMessage({ type: 'events', events: batch } satisfies FromThread);
  batch = [];
};
let start: (untilMs: number) => void = () => {};
const started = new Promise<number>((resolve) => {
  start = resolve;
});
port.on('message', (msg: ToThread) => {
  if (msg.type === 'start') start(msg.untilMs);
  else if (msg.type === 'stop') control.stopped = true;
  else if (msg.beforeSave) control.freezeBeforeSaveMs = msg.ms;
  else {
    freezeEvent((e) => batch.push(e), msg.ms);
    freezeThread(msg.ms);
  }
});

async function main(): Promise<void> {
  let inner = await openBackend(data.url, data.openOptions);
  const wrap = (b: typeof inner) =>
    recordingBackend(data.broken ? brokenBackend(b) : b, (e) => batch.push(e));
  let recorded = wrap(inner);
  control.reopen = async () => {
    const next = await openBackend(data.url, data.openOptions);
    await recorded.settled();
    await inner.close().catch(() => {});
    inner = next;
    recorded = wrap(next);
    return recorded;
  };
  const flusher = setInterval(flush, 100);
  try {
    port!.postMessage({ type: 'ready' } satisfies FromThread);
    const untilMs = await started;
    const stats = await runWorker(recorded, { ...data.config, untilMs }, (e) => batch.push(e), control);
    await recorded.settled();
    flush();
    port!.postMessage({ type: 'done', stats } satisfies FromThread);
    // The message listener would keep this thread alive for ever.
    port!.unref();
  } finally {
    clearInterval(flusher);
    await inner.close().catch(() => {});
  }
}

main().catch((err: unknown) => {
  flush();
  port.postMessage({
    type: 'failed',
    message: err instanceof Error ? (err.stack ?? err.message) : String(err),
  });
  port.unref();
});
