/**
 * The chaos run: N holders (one worker thread each) contend for M items while
 * faults are injected at random; every call lands in one history, which the
 * checker reads together with the final store.
 *
 * Faults: server-side connection kills (`pg_terminate_backend`, `CLIENT KILL`),
 * Redis paused (`CLIENT PAUSE`, Redis and Redis Cluster only; it pauses the whole
 * server), holders frozen past their ttl (a blocked event loop, at a random
 * moment or right before a save), and force-releases and release requests through `backend.admin`
 * (a request is one more call under the token the operator saw: see checker.ts).
 * With `privateRedis` the run starts its own master + replica (servers.ts) and
 * adds the data-loss faults: `restart` (the master restarts without
 * persistence: every holder's next call fails with DATASET_LOST, and each
 * holder then reopens, as a restarted process would, on a new dataset) and
 * `failover` (the replica lags for a while, then the master is killed and the
 * replica promoted at the same address).
 *
 * PGlite lives inside one thread, so its holders run as concurrent loops in the
 * runner's own thread: connection kills and pauses do not apply to it, and a
 * freeze blocks all of its holders (and the database) at once.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { parseBackendUrl } from '../backends/url.ts';
import { openBackend } from '../index.ts';
import { ErrorCode, WorkleaseError } from '../lease/errors.ts';
import type { BackendKind, LeaseBackend, OpenOptions } from '../lease/types.ts';
import { type CheckReport, check, formatReport } from './checker.ts';
import { dropNamespace, killConnections, pauseRedis } from './faults.ts';
import {
  type CallEvent,
  DATA_LOSS_FAULTS,
  decodeCounter,
  FAULT_KINDS,
  type FaultKind,
  type FinalState,
  type HistoryEvent,
  now,
  SCHEDULED_ONLY_FAULTS,
} from './history.ts';
import { brokenBackend, outcomeOf, recordingBackend } from './recording.ts';
import { type ReplicatedRedis, startReplicatedRedis } from './servers.ts';
import type { FromThread, ThreadData, ToThread } from './thread.ts';
import { freezeEvent, freezeThread, runWorker, type WorkerControl, type WorkerStats } from './worker.ts';

export interface ChaosOptions {
  /** Backend URL: postgres://, redis://, redis+cluster://…, pglite://memory. Ignored with `privateRedis`. */
  url: string;
  /** Start a private Redis master + replica for the run (and allow the `restart` / `failover` faults). */
  privateRedis?: boolean;
  /** Concurrent holders. Default 8. */
  workers?: number;
  /** Work items they contend for. Default 4. */
  items?: number;
  /** Duration of the fault phase, in seconds. Default 60. */
  seconds?: number;
  /** Lease ttl in milliseconds. Default 1000. */
  ttlMs?: number;
  /** Heartbeat interval in milliseconds. Default ttlMs / 4. */
  intervalMs?: number;
  /** Mean time between faults, in milliseconds. Default 400. */
  faultEveryMs?: number;
  /** Which faults to inject. Default: all that apply to the backend. */
  faults?: readonly FaultKind[];
  /** Run through {@link brokenBackend} (skips fencing): the checker must report violations. */
  broken?: boolean;
  /** Schema / key prefix of the run. Default `chaos_<random>`, dropped at the end. */
  namespace?: string;
  /** Keep the namespace after the run (for inspection). Default false. */
  keep?: boolean;
  /** Progress lines. Default: none. */
  log?: (line: string) => void;
  /**
   * Faults of a topology the runner does not own (postgres-topologies.ts: a primary killed and its
   * standby promoted), run once each at `afterMs` into the fault phase and recorded under `kind`
   * with the detail `inject` returns. The run waits for them before it stops the holders.
   */
  scheduled?: readonly ScheduledFault[];
}

export interface ScheduledFault {
  afterMs: number;
  kind: FaultKind;
  inject: () => Promise<string>;
}

export interface ChaosResult {
  kind: BackendKind;
  report: CheckReport;
  /** The one line the CLI prints. */
  line: string;
  history: HistoryEvent[];
  finals: FinalState[];
  stats: WorkerStats[];
  /** Faults that could not be injected (the injector's own errors). */
  injectorErrors: string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The faults that make sense on a backend (the data-loss ones only on a private Redis pair). */
export function applicableFaults(kind: BackendKind, privateRedis = false): FaultKind[] {
  if (kind === 'pglite') return ['freeze', 'force-release', 'request-release'];
  if (kind === 'postgres') return ['kill', 'freeze', 'force-release', 'request-release'];
  const drawn = FAULT_KINDS.filter((f) => !SCHEDULED_ONLY_FAULTS.has(f));
  if (kind === 'redis' && privateRedis) return drawn;
  return drawn.filter((f) => !DATA_LOSS_FAULTS.has(f));
}

interface Holders {
  /** Resolves when every holder is ready to start (threads take a while to load). */
  ready(): Promise<void>;
  start(untilMs: number): void;
  freeze(index: number, ms: number, beforeSave: boolean): void;
  stop(): void;
  /** Resolves with every worker's stats once all have finished (or were terminated after `graceMs`). */
  done(graceMs: number): Promise<WorkerStats[]>;
}

function threadHolders(
  count: number,
  data: (index: number) => ThreadData,
  history: HistoryEvent[],
  problems: string[],
): Holders {
  const req = createRequire(import.meta.url);
  // Worker threads do not inherit the loader hooks that run TypeScript; register tsx inside each thread.
  // require.resolve picks the CommonJS build, whose register() cannot load its hooks from a thread; use its ESM twin.
  const tsxApi = pathToFileURL(req.resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
  const entry = new URL('./thread.ts', import.meta.url).href;
  const code = `import(${JSON.stringify(tsxApi)}).then((m) => { (m.register ?? m.default.register)(); return import(${JSON.stringify(entry)}); })`;
  const workers: Worker[] = [];
  const finished: Promise<WorkerStats>[] = [];
  const readies: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const w = new Worker(code, { eval: true, workerData: data(i) });
    workers.push(w);
    let ready: () => void = () => {};
    readies.push(
      new Promise<void>((resolve) => {
        ready = resolve;
      }),
    );
    w.on('exit', () => ready());
    finished.push(
      new Promise((resolve) => {
        let stats: WorkerStats | undefined;
        w.on('message', (msg: FromThread) => {
          if (msg.type === 'events') history.push(...msg.events);
          else if (msg.type === 'ready') ready();
          else if (msg.type === 'done') {
            stats = msg.stats;
            resolve(stats);
          } else problems.push(`worker ${i}: ${msg.message}`);
        });
        w.on('error', (err) => problems.push(`worker ${i}: ${err.stack ?? err.message}`));
        w.on('exit', () =>
          resolve(
            stats ?? {
              leases: 0,
              increments: 0,
              held: 0,
              lost: 0,
              crashes: 0,
              unavailable: 0,
              datasetLost: 0,
              unexpected: ['no stats'],
            },
          ),
        );
      }),
    );
  }
  return {
    ready: async () => {
      await Promise.all(readies);
    },
    start: (untilMs) => {
      for (const w of workers) w.postMessage({ type: 'start', untilMs } satisfies ToThread);
    },
    freeze: (index, ms, beforeSave) =>
      workers[index]?.postMessage({ type: 'freeze', ms, beforeSave } satisfies ToThread),
    stop: () => {
      for (const w of workers) w.postMessage({ type: 'stop' } satisfies ToThread);
    },
    async done(graceMs) {
      // A thread exits on its own once its loop ends and its backend is closed.
      const timer = setTimeout(() => {
        problems.push(`workers still running ${graceMs} ms after stop: terminated`);
        for (const w of workers) void w.terminate();
      }, graceMs);
      const stats = await Promise.all(
        finished.map((p, i) =>
          p.then((s) => {
            void workers[i]?.terminate();
            return s;
          }),
        ),
      );
      clearTimeout(timer);
      return stats;
    },
  };
}

function inProcessHolders(
  count: number,
  backend: LeaseBackend,
  config: (index: number) => ThreadData['config'],
  history: HistoryEvent[],
): Holders {
  const sink = (e: HistoryEvent): void => {
    history.push(e);
  };
  const recorded = recordingBackend(backend, sink);
  const controls: WorkerControl[] = [];
  const runs: Promise<WorkerStats>[] = [];
  return {
    ready: async () => {},
    start(untilMs) {
      for (let i = 0; i < count; i++) {
        const control: WorkerControl = {
          freezeBeforeSaveMs: 0,
          stopped: false,
          onFreeze: (ms) => freezeEvent(sink, ms),
        };
        controls.push(control);
        runs.push(runWorker(recorded, { ...config(i), untilMs }, sink, control));
      }
    },
    freeze(index, ms, beforeSave) {
      const control = controls[index];
      if (control === undefined) return;
      if (beforeSave) control.freezeBeforeSaveMs = ms;
      else {
        freezeEvent(sink, ms);
        freezeThread(ms);
      }
    },
    stop() {
      for (const c of controls) c.stopped = true;
    },
    async done() {
      const stats = await Promise.all(runs);
      await recorded.settled();
      return stats;
    },
  };
}

/** A copy of `list` in random order (Fisher–Yates). */
function shuffled<T>(list: readonly T[]): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function readFinals(admin: () => Promise<LeaseBackend>, items: string[]): Promise<FinalState[]> {
  const finals: FinalState[] = [];
  for (const item of items) {
    for (let attempt = 0; ; attempt++) {
      try {
        const backend = await admin();
        const info = await backend.admin.get(item);
        if (info === null) {
          finals.push({ item, token: null, value: null });
        } else {
          const read = await backend.readCheckpoint({
            workId: item,
            holderId: info.holderId,
            fencingToken: info.fencingToken,
            expiresAt: info.expiresAt,
          });
          finals.push({ item, token: info.fencingToken.toString(), value: decodeCounter(read.state) });
        }
        break;
      } catch (err) {
        if (attempt >= 20) throw err;
        await sleep(100);
      }
    }
  }
  return finals;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const pair: ReplicatedRedis | null = options.privateRedis ? await startReplicatedRedis() : null;
  try {
    return await runOn(pair === null ? options : { ...options, url: pair.url }, pair);
  } finally {
    await pair?.stop();
  }
}

async function runOn(options: ChaosOptions, pair: ReplicatedRedis | null): Promise<ChaosResult> {
  const { kind } = parseBackendUrl(options.url);
  const workers = options.workers ?? 8;
  const itemCount = options.items ?? 4;
  const seconds = options.seconds ?? 60;
  const ttlMs = options.ttlMs ?? 1000;
  const intervalMs = options.intervalMs ?? Math.max(1, Math.floor(ttlMs / 4));
  const faultEveryMs = options.faultEveryMs ?? 400;
  const applicable = applicableFaults(kind, pair !== null);
  const faults = (options.faults ?? applicable).filter((f) => applicable.includes(f));
  const namespace = options.namespace ?? `chaos_${randomBytes(4).toString('hex')}`;
  const log = options.log ?? (() => {});
  if (!Number.isInteger(workers) || workers < 1 || workers > 256)
    throw new RangeError('workers must be 1..256');
  if (!Number.isInteger(itemCount) || itemCount < 1 || itemCount > 10_000)
    throw new RangeError('items must be 1..10000');
  if (!(seconds > 0)) throw new RangeError('seconds must be positive');

  const openOptions: OpenOptions = {
    ...(kind === 'postgres' || kind === 'pglite' ? { schema: namespace } : { keyPrefix: namespace }),
    // Calls that hang (a paused server) fail after this; the holder's deadline decides long before.
    callTimeoutMs: Math.max(1000, ttlMs * 2),
  };
  const items = Array.from({ length: itemCount }, (_, i) => `item-${i}`);
  const history: HistoryEvent[] = [];
  const problems: string[] = [];
  const injectorErrors: string[] = [];
  // Opening here first creates the schema / layout once, before the holders race to do it.
  let admin = await openBackend(options.url, openOptions);
  /** The admin backend, reopened (on whatever dataset is there now) after a restart wiped the data. */
  const adminNow = async (): Promise<LeaseBackend> => {
    if (pair === null) return admin;
    try {
      await admin.admin.changeCursor(); // a script on every bucket: DATASET_LOST if the data is gone
      return admin;
    } catch (err) {
      if (!(err instanceof WorkleaseError && err.code === ErrorCode.DATASET_LOST)) return admin;
    }
    await admin.close().catch(() => {});
    admin = await openBackend(options.url, openOptions);
    return admin;
  };
  let finals: FinalState[] = [];
  let holdersRef: Holders | undefined;
  let stats: WorkerStats[] = [];
  try {
    // The real deadline is set once every holder is loaded and ready.
    const config = (index: number): ThreadData['config'] => ({ index, items, ttlMs, intervalMs, untilMs: 0 });
    holdersRef =
      kind === 'pglite'
        ? inProcessHolders(workers, options.broken ? brokenBackend(admin) : admin, config, history)
        : threadHolders(
            workers,
            (index) => ({
              url: options.url,
              openOptions,
              broken: options.broken ?? false,
              config: config(index),
            }),
            history,
            problems,
          );
    await holdersRef.ready();
    const untilMs = now() + seconds * 1000;
    holdersRef.start(untilMs);
    log(
      `chaos ${kind}: ${workers} workers, ${itemCount} items, ${seconds}s, ttl ${ttlMs} ms, faults ${faults.join(',')}`,
    );

    const scheduled = (options.scheduled ?? []).map(
      (f) =>
        new Promise<void>((resolve) => {
          setTimeout(() => {
            const at = now();
            f.inject()
              .then(
                (detail) => history.push({ type: 'fault', kind: f.kind, at, detail }),
                (err: unknown) =>
                  injectorErrors.push(`${f.kind}: ${err instanceof Error ? err.message : String(err)}`),
              )
              .finally(resolve);
          }, f.afterMs);
        }),
    );
    const bag: FaultKind[] = [];
    if (faults.length === 0) await sleep(untilMs - now());
    while (now() < untilMs && faults.length > 0) {
      await sleep(faultEveryMs * (0.5 + Math.random()));
      if (now() >= untilMs) break;
      // Shuffled rounds rather than independent draws: every kind comes up in every round, even in short runs.
      if (bag.length === 0) bag.push(...[...faults].sort(() => Math.random() - 0.5));
      const fault = bag.pop()!;
      try {
        await inject(fault);
      } catch (err) {
        if (injectorErrors.length < 50)
          injectorErrors.push(`${fault}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    await Promise.all(scheduled);
    holdersRef.stop();
    stats = await holdersRef.done(ttlMs * 4 + 15_000);
    finals = await readFinals(adminNow, items);
  } finally {
    await admin.close().catch(() => {});
    if (!options.keep) await dropNamespace(kind, options.url, namespace).catch(() => {});
  }
  if (problems.length > 0) throw new Error(`chaos workers failed:\n${problems.join('\n')}`);

  const report = check(history, finals);
  const label = options.broken ? `${kind} (broken backend)` : kind;
  return { kind, report, line: formatReport(label, report, seconds), history, finals, stats, injectorErrors };

  async function inject(fault: FaultKind): Promise<void> {
    switch (fault) {
      case 'kill': {
        const n = await killConnections(kind, options.url, namespace, 0.3 + Math.random() * 0.7);
        if (n > 0) history.push({ type: 'fault', kind: 'kill', at: now(), detail: `${n} connections` });
        return;
      }
      case 'pause': {
        const ms = ttlMs * (0.3 + Math.random() * 1.2);
        const at = now();
        const node = await pauseRedis(kind, options.url, ms);
        history.push({ type: 'fault', kind: 'pause', at, detail: `${node} for ${Math.round(ms)} ms` });
        return;
      }
      case 'freeze': {
        // Past the ttl: by the time the holder runs again, the server may have given its lease away.
        const ms = ttlMs * (1.2 + Math.random() * 0.8);
        holdersRef?.freeze(Math.floor(Math.random() * workers), ms, Math.random() < 0.5);
        return;
      }
      case 'restart': {
        const at = now();
        await pair!.master.restart();
        history.push({ type: 'fault', kind: 'restart', at, detail: `master ${pair!.url}, no persistence` });
        return;
      }
      case 'failover': {
        const at = now();
        // The replica lags for a part of a ttl while holders keep writing, then takes over.
        pair!.lag();
        await sleep(ttlMs * (0.2 + Math.random() * 0.6));
        await pair!.failover();
        history.push({
          type: 'fault',
          kind: 'failover',
          at,
          detail: `lagging replica promoted at ${pair!.url}`,
        });
        return;
      }
      case 'force-release': {
        // Items in random order until one force-release lands: after a wipe most items have no
        // lease, and a holder may move its token on between the read and the call.
        for (const item of shuffled(items)) if (await operatorCall('force-release', item)) return;
        return;
      }
      case 'request-release': {
        for (const item of shuffled(items)) if (await operatorCall('request-release', item)) return;
        return;
      }
    }
  }

  /**
   * One operator force-release or release request of `item`'s lease, recorded as a call and, when
   * it landed, as a fault; true when it landed. The call's token is the one a force-release
   * produced, or for a request the one it was made with.
   */
  async function operatorCall(kind: 'force-release' | 'request-release', item: string): Promise<boolean> {
    const admin = await adminNow();
    const info = await admin.admin.get(item);
    if (info === null) return false;
    const started = now();
    const asked = info.fencingToken.toString();
    const event: Omit<CallEvent, 'outcome' | 'end' | 'token'> = {
      type: 'call',
      item,
      holder: 'operator',
      call: kind === 'force-release' ? 'forceRelease' : 'requestRelease',
      start: started,
    };
    const options = { expectedToken: info.fencingToken, operator: 'chaos', reason: 'chaos fault injection' };
    try {
      let token = asked;
      if (kind === 'force-release')
        token = (await admin.admin.forceRelease(item, options)).fencingToken.toString();
      else await admin.admin.requestRelease(item, options);
      history.push({ ...event, token, outcome: 'ok', end: now() });
      history.push({ type: 'fault', kind, at: started, detail: `${item} from ${info.holderId}` });
      return true;
    } catch (err) {
      const token = kind === 'force-release' ? null : asked;
      history.push({ ...event, token, outcome: outcomeOf(err), end: now(), error: String(err) });
      return false;
    }
  }
}
