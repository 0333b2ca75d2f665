/**
 * Runs long computations (a pass over 100 000 leases, a sort) in slices of a
 * few milliseconds, each its own task, so input, scrolling and painting get
 * the main thread between slices and no task comes near the 50 ms that makes
 * a page feel stuck. A job is a generator that yields often (every thousand
 * rows or so); the runner decides when a slice has used its budget.
 */

/** Time one slice may use, ms. Well under 50 ms even on a loaded machine, where a slice overruns by a yield's worth. */
export const SLICE_MS = 8;

interface PostTaskScheduler {
  postTask(
    callback: () => void,
    options?: { priority?: 'user-blocking' | 'user-visible' | 'background' },
  ): Promise<void>;
}

const scheduler = (globalThis as { scheduler?: PostTaskScheduler }).scheduler;

/** Queues `fn` as a new task (not a microtask): the browser may render and handle input first. */
export function nextTask(fn: () => void): void {
  if (scheduler !== undefined) {
    scheduler.postTask(fn, { priority: 'user-visible' }).catch((err: unknown) => console.error(err));
    return;
  }
  // Chromium (and so Electron) has postTask; elsewhere a nested setTimeout(0) waits ~4 ms, which only slows the job.
  setTimeout(fn, 0);
}

/**
 * Steps `job` in slices of about {@link SLICE_MS} until it returns, then calls
 * `done` with its result. The first slice runs in a later task. Returns a
 * cancel function (after it, `done` is never called).
 */
export function runSliced<T>(job: Generator<void, T>, done: (result: T) => void): () => void {
  let cancelled = false;
  const step = () => {
    if (cancelled) return;
    const start = performance.now();
    for (;;) {
      const r = job.next();
      if (r.done) {
        done(r.value);
        return;
      }
      if (performance.now() - start >= SLICE_MS) break;
    }
    nextTask(step);
  };
  nextTask(step);
  return () => {
    cancelled = true;
  };
}

/** Runs a job to completion at once (tests, small inputs). */
export function drain<T>(job: Generator<void, T>): T {
  for (;;) {
    const r = job.next();
    if (r.done) return r.value;
  }
}

/** Rows between yields in a pass; runs of this size are sorted in one step. */
const RUN = 2048;
/** Elements merged between yields. */
const MERGE_STEP = 8192;

/**
 * A stable sort of the indices 0..n-1 by `compare`, as a sliceable job: runs
 * of {@link RUN} are sorted natively, then merged pairwise. Ties keep index
 * order whatever the direction of `compare`.
 */
export function* sortIndices(
  n: number,
  compare: (i: number, j: number) => number,
): Generator<void, Uint32Array> {
  const cmp = (i: number, j: number) => compare(i, j) || i - j;
  let a = new Uint32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  for (let s = 0; s < n; s += RUN) {
    a.subarray(s, Math.min(n, s + RUN)).sort(cmp);
    yield;
  }
  let b = new Uint32Array(n);
  for (let width = RUN; width < n; width *= 2) {
    let out = 0;
    let budget = MERGE_STEP;
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(n, lo + width);
      const hi = Math.min(n, lo + 2 * width);
      let i = lo;
      let j = mid;
      while (i < mid && j < hi) {
        const x = a[i] as number;
        const y = a[j] as number;
        if (cmp(x, y) <= 0) {
          b[out++] = x;
          i++;
        } else {
          b[out++] = y;
          j++;
        }
        if (--budget === 0) {
          budget = MERGE_STEP;
          yield;
        }
      }
      while (i < mid) b[out++] = a[i++] as number;
      while (j < hi) b[out++] = a[j++] as number;
    }
    const t = a;
    a = b;
    b = t;
    yield;
  }
  return a;
}
