/**
 * View subscriptions (src/console/common/view.ts) as the page uses them: a {@link ViewWatch} is one
 * window of one connection's fleet under a filter and a sort, kept current by the server's `view`
 * events.
 *
 * - Scrolling moves the window: the same watch id is sent again with the new offset; every
 *   window that arrives for it is good data for its own offset, so a fast scroll on a slow server
 *   still shows rows (a fresh id per scroll step would drop every answer that came late).
 * - A new filter or sort is a new question: a fresh watch id, the old one unwatched. Answers to
 *   the old question that were still in flight are dropped by their id — nothing typed earlier
 *   ever lands on the screen after what was typed later.
 */
import type { ErrorDataWire, ViewQuery, ViewResult } from '../../src/console/common/index.ts';
import type { ConsoleClient } from './client.ts';

export interface WatchState {
  /** The latest window for the current question; null until its first arrives. */
  view: ViewResult | null;
  error: ErrorDataWire | null;
}

type Listener = (state: WatchState) => void;

let counter = 0;
function newWatchId(): string {
  counter = (counter + 1) % 1_000_000;
  const rand = Math.floor(Math.random() * 0xffffffff)
    .toString(36)
    .padStart(7, '0');
  return `w${rand}${counter.toString(36)}`;
}

/** The query's question: everything but where the window is. */
export function questionOf(q: ViewQuery): string {
  return JSON.stringify([q.connectionId, q.filter ?? {}, q.sort ?? null]);
}

function windowOf(q: ViewQuery): string {
  return JSON.stringify([q.offset ?? null, q.cursor ?? null, q.limit ?? null]);
}

export class ViewWatch {
  private watchId: string | null = null;
  private question = '';
  private window = '';
  private state: WatchState = { view: null, error: null };
  private closed = false;

  constructor(
    private readonly hub: WatchHub,
    private readonly listener: Listener,
  ) {}

  /** Asks for this window (a no-op when it is the one asked last). */
  set(query: ViewQuery): void {
    if (this.closed) return;
    const question = questionOf(query);
    const window = windowOf(query);
    if (this.watchId !== null && question === this.question && window === this.window) return;
    if (this.watchId === null || question !== this.question) {
      if (this.watchId !== null) this.hub.drop(this.watchId);
      this.watchId = newWatchId();
      this.question = question;
      // A new question: nothing known yet (the caller keeps showing what it had, marked as pending).
      this.state = { view: null, error: null };
      this.hub.register(this.watchId, this);
    }
    this.window = window;
    this.hub.client.watch(this.watchId, query);
  }

  get current(): WatchState {
    return this.state;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.watchId !== null) this.hub.drop(this.watchId);
    this.watchId = null;
  }

  /** @internal the server dropped this watch: the next `set` asks afresh. */
  failed(error: ErrorDataWire): void {
    this.watchId = null;
    this.deliver({ view: this.state.view, error });
  }

  /** @internal called by the hub for events of this watch's id. */
  deliver(next: WatchState): void {
    if (this.closed) return;
    this.state = next;
    this.listener(next);
  }
}

/** Routes `view` and `view.error` events to their watch by id. One per page. */
export class WatchHub {
  private readonly byId = new Map<string, ViewWatch>();

  constructor(readonly client: ConsoleClient) {}

  start(): () => void {
    return this.client.subscribe((event) => {
      if (event.type === 'view') {
        this.byId.get(event.watchId)?.deliver({ view: event.view, error: null });
      } else if (event.type === 'view.error' && event.watchId !== null) {
        const w = this.byId.get(event.watchId);
        // The server dropped it: forget the id (asking again takes a fresh one).
        if (w !== undefined) {
          this.byId.delete(event.watchId);
          w.failed(event.error);
        }
      }
    });
  }

  open(listener: Listener): ViewWatch {
    return new ViewWatch(this, listener);
  }

  /** How many subscriptions are open (tests; the server allows a few per socket). */
  get size(): number {
    return this.byId.size;
  }

  register(watchId: string, watch: ViewWatch): void {
    this.byId.set(watchId, watch);
  }

  drop(watchId: string): void {
    if (this.byId.delete(watchId)) this.client.unwatch(watchId);
  }
}
