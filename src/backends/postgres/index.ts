/**
 * The PostgreSQL backend: the shared SQL driver over a `pg.Pool`, with the lease calls
 * (statements marked `hot`) on connections of their own (hot.ts), opened by `pg` the same way.
 *
 * Pool discipline (as node-postgres recommends): every call checks out one
 * client, runs one statement and gives the client back; a client whose
 * connection failed or timed out is destroyed (`release(err)`) rather than
 * reused, and the idle ones are dropped with it (they most likely broke at the
 * same moment), so after the server drops connections one call fails with
 * BACKEND_UNAVAILABLE and the next runs on a fresh connection. `pool.on('error')` is
 * attached so an idle connection dying never crashes the process.
 */
import pg from 'pg';
import { BackendUnavailableError, InternalError, InvalidArgumentError } from '../../lease/errors.ts';
import type { LeaseBackend, OpenOptions } from '../../lease/types.ts';
import { createBackend, type LeaseDriver, resolveTarget } from '../common.ts';
import { DeadlineWatch, tickFor } from '../deadlines.ts';
import { parsePostgresUrl } from '../postgres-url.ts';
import type { Row, SqlClient, SqlNotice, SqlQuery, Statement, TextRow } from '../sql/client.ts';
import { openSqlDriver } from '../sql/driver.ts';
import { classifySqlError, isConnectionError } from '../sql/errors.ts';
import { checkSchema, migrateSchema } from '../sql/migrations.ts';
import { quoteIdent } from '../sql/statements.ts';
import { behindPooler, Connector } from './connect.ts';
import { HotPool } from './hot.ts';

/** The `application_name` of a backend's connections; lets operators (and tests) find exactly them. */
export function applicationName(schema: string): string {
  return `worklease:${schema}`;
}

/**
 * Type parsers for {@link SqlClient.queryText}: every column stays the server's
 * text. Passed per query, so `pg`'s global parsers (and other users of `pg` in the
 * same process) are untouched.
 */
const TEXT_TYPES: pg.CustomTypesConfig = { getTypeParser: () => (text: string) => text };

/** Time between reconnect attempts of a LISTEN connection. */
const LISTEN_RETRY_MS = 1000;

/** A statement sent by {@link PgClient} and not answered yet. */
interface InFlight {
  readonly deadline: number;
  timedOut: boolean;
  /** Gives the client back (destroys it, with an error); a no-op inside a transaction, which does that itself. */
  readonly release: (err?: Error) => void;
  readonly reject: (err: Error) => void;
}

class PgClient implements SqlClient {
  readonly #pool: pg.Pool;
  readonly #timeoutMs: number;
  readonly #url: string;
  readonly #watch: DeadlineWatch<InFlight>;

  readonly callTimeoutMs: number;

  /**
   * LISTEN, where it works: not behind a transaction pooler (the server connection that ran the
   * LISTEN goes back to the pool; notifications would reach whichever client has it next, or no
   * one). There the driver polls instead (sql/driver.ts, watchEnded).
   */
  readonly listen?: (channel: string, onNotify: (payload: string | null) => void) => () => void;

  /** Every statement goes through the lease calls' connections, unnamed, with its settings (hot.ts). */
  readonly #pooled: boolean;
  readonly #connector: Connector;

  /**
   * A LISTEN connection of its own (a pooled one would be handed to other calls): one per
   * listen call, reconnected every LISTEN_RETRY_MS while it is down. Only waiting acquires use it.
   */
  #listen(channel: string, onNotify: (payload: string | null) => void): () => void {
    let stopped = false;
    let current: pg.Client | null = null;
    let retry: NodeJS.Timeout | undefined;
    const again = (): void => {
      if (stopped || retry !== undefined) return;
      retry = setTimeout(() => {
        retry = undefined;
        void connect();
      }, LISTEN_RETRY_MS);
      retry.unref();
    };
    const connect = async (): Promise<void> => {
      const c = new this.#Client({ ...this.#listenConfig });
      current = c;
      c.on('error', () => {});
      c.on('end', () => {
        if (current === c) current = null;
        again();
      });
      c.on('notification', (m) => {
        if (!stopped && m.channel === channel) onNotify(m.payload ?? null);
      });
      try {
        await c.connect();
        await c.query(`LISTEN ${quoteIdent(channel)}`);
      } catch {
        c.end().catch(() => {});
        return;
      }
      if (stopped) c.end().catch(() => {});
      else onNotify(null);
    };
    void connect();
    return () => {
      stopped = true;
      clearTimeout(retry);
      current?.end().catch(() => {});
      current = null;
    };
  }

  readonly #listenConfig: pg.ClientConfig;
  readonly #Client: typeof pg.Client;

  /** The pool's connections that sit idle now (from its connect/acquire/release/remove events). */
  readonly #idle = new Set<pg.PoolClient>();

  /** The lease calls' own connections (hot.ts); every other statement goes through the pool. */
  readonly #hot: HotPool;

  constructor(
    pool: pg.Pool,
    timeoutMs: number,
    url: string,
    config: pg.ClientConfig,
    connector: Connector,
    hotSize: number,
    /** Behind a transaction pooler: the settings every call carries (hot.ts, prelude); null otherwise. */
    prelude: string | null,
  ) {
    this.#listenConfig = config;
    this.#connector = connector;
    this.#Client = connector.clientClass();
    this.#pool = pool;
    this.callTimeoutMs = timeoutMs;
    this.#pooled = prelude !== null;
    if (!this.#pooled) this.listen = this.#listen.bind(this);
    const Client = this.#Client;
    this.#hot = new HotPool(
      () => new Client(config),
      hotSize,
      timeoutMs,
      url,
      (err) => this.#dropPooled(err),
      this.#pooled
        ? () => Promise.reject(this.#unsendable())
        : (statement, params, onNotice) =>
            this.#checkedOut(statement, params, false, onNotice) as Promise<Row[]>,
      () => connector.server,
      { named: !this.#pooled, prelude },
    );
    this.#timeoutMs = timeoutMs;
    this.#url = url;
    this.#watch = new DeadlineWatch<InFlight>(tickFor(timeoutMs), (call) => this.#expire(call));
    pool.on('acquire', (c) => this.#idle.delete(c));
    pool.on('release', (err, c) => {
      if (err === undefined || err === null) this.#idle.add(c);
      else this.#idle.delete(c);
    });
    pool.on('remove', (c) => this.#idle.delete(c));
  }

  /**
   * A call's connection broke: the idle ones most likely broke with it (a server restart, a
   * failover, pg_terminate_backend end them all at once), but each learns of it only when its own
   * socket reports, and a call that takes one first fails too. So they are all dropped now, through
   * the pool's own path for an idle connection's error, and the next calls open fresh connections.
   * Measured: after pg_terminate_backend of 4 pooled connections, the next renew but one still
   * failed in 2 of 27 conformance runs; one fresh connection costs a few ms.
   */
  #dropIdle(cause: Error): void {
    // Both kinds: a broken pool connection closes the idle lease calls connections, and one of
    // those breaking closes the pool's idle ones (the HotPool's onBroken).
    this.#hot.dropIdle();
    this.#dropPooled(cause);
  }

  /** The pool's part of {@link #dropIdle}; also: the next connection looks for the primary again. */
  #dropPooled(cause: Error): void {
    this.#connector.stale();
    for (const c of [...this.#idle]) {
      this.#idle.delete(c);
      c.emit('error', new Error(`dropped: another connection to the same server broke (${cause.message})`));
    }
  }

  async #connect(): Promise<pg.PoolClient> {
    try {
      return await this.#pool.connect();
    } catch (err) {
      throw classifySqlError(err, 'connecting', this.#url);
    }
  }

  /**
   * One statement of a transaction on its client, bounded by the call timeout through the same
   * {@link DeadlineWatch} as every call. The transaction destroys the client on any error
   * ({@link transaction}), so a timed-out statement's late reply is never read.
   */
  #inTransaction(client: pg.PoolClient, statement: Statement, params: readonly unknown[]): Promise<Row[]> {
    const config: pg.QueryConfig = { text: statement.text, values: params as unknown[] };
    if (statement.name !== undefined) config.name = statement.name;
    return new Promise((resolve, reject) => {
      const call: InFlight = {
        deadline: Date.now() + this.#timeoutMs,
        timedOut: false,
        release: () => {},
        reject,
      };
      this.#watch.add(call);
      client.query(config, (err: Error | null, result: pg.QueryResult) => {
        if (call.timedOut) return;
        this.#watch.delete(call);
        if (err !== null && err !== undefined) reject(classifySqlError(err, 'query', this.#url));
        else resolve(result.rows as Row[]);
      });
    });
  }

  query(
    statement: Statement,
    params: readonly unknown[],
    onNotice?: (notice: SqlNotice) => void,
  ): Promise<Row[]> {
    if (this.#pooled || statement.hot === true) {
      const sent = this.#hot.query(statement, params, onNotice);
      if (sent !== null) return sent;
      if (this.#pooled) return Promise.reject(this.#unsendable());
    }
    return this.#checkedOut(statement, params, false, onNotice) as Promise<Row[]>;
  }

  queryText(statement: Statement, params: readonly unknown[]): Promise<TextRow[]> {
    if (this.#pooled) {
      const sent = this.#hot.query(statement, params, undefined, true) as Promise<unknown[]> | null;
      return (sent ?? Promise.reject(this.#unsendable())) as Promise<TextRow[]>;
    }
    return this.#checkedOut(statement, params, true) as Promise<TextRow[]>;
  }

  /**
   * Behind a transaction pooler a statement must carry its settings in its own round trip, which
   * only hot.ts can send: one it cannot (a parameter of a kind only `pg` encodes) is refused rather
   * than sent without them.
   */
  #unsendable(): Error {
    return new InternalError(
      `a statement for ${this.#url} cannot be sent with its settings behind a transaction pooler`,
    );
  }

  /**
   * One statement on a client checked out for it alone, bounded by the call timeout (the wait for
   * a connection included). Written with the callback forms of `pg.Pool.connect` and
   * `pg.Client.query` and one promise of its own: the promise form (connect, query, a timeout
   * promise and Promise.race, in async functions) cost 63 us of client CPU per renew at 16 in
   * flight against 51 us for the same statement sent with `pool.query` (7 rounds, load 6.8).
   * The deadline is kept by the shared {@link DeadlineWatch} (deadlines.ts), not a timer per call:
   * with cold caches, as at 1 in flight, a setTimeout + clearTimeout took 18.0–18.8 us against
   * 8.3–10.1 for the watch's Set add + delete (a renew there takes ~450 us; end to end, the saving
   * is below what 3 alternating runs of 2 000 renews can tell apart).
   * On a timeout or a connection error the client is destroyed (`release(err)`), not reused:
   * it may still carry the abandoned statement's reply.
   */
  #checkedOut(
    statement: Statement,
    params: readonly unknown[],
    asText: boolean,
    onNotice?: (notice: SqlNotice) => void,
  ): Promise<unknown[]> {
    const config: pg.QueryConfig & { rowMode?: 'array' } = {
      text: statement.text,
      values: params as unknown[],
    };
    if (statement.name !== undefined) config.name = statement.name;
    if (asText) {
      config.rowMode = 'array';
      config.types = TEXT_TYPES;
    }
    const deadline = Date.now() + this.#timeoutMs;
    return new Promise((resolve, reject) => {
      this.#pool.connect((connectErr, client, release) => {
        if (connectErr !== undefined && connectErr !== null) {
          reject(classifySqlError(connectErr, 'connecting', this.#url));
          return;
        }
        if (deadline - Date.now() <= 0) {
          release();
          reject(
            new BackendUnavailableError(
              `waiting for a connection to ${this.#url} took over ${this.#timeoutMs} ms`,
            ),
          );
          return;
        }
        // The client is this statement's alone until call.release(), which also stops the listening:
        // every notice it hears meanwhile is this statement's.
        if (onNotice !== undefined) client!.on('notice', onNotice);
        const call: InFlight = {
          deadline,
          timedOut: false,
          release:
            onNotice === undefined
              ? release
              : (err) => {
                  client!.removeListener('notice', onNotice);
                  release(err);
                },
          reject,
        };
        this.#watch.add(call);
        client!.query(config, (err: Error | null, result: pg.QueryResult) => {
          if (call.timedOut) return;
          this.#watch.delete(call);
          if (err !== null && err !== undefined) {
            const broken = isConnectionError(err);
            call.release(broken ? err : undefined);
            if (broken) this.#dropIdle(err);
            reject(classifySqlError(err, 'query', this.#url));
          } else {
            call.release();
            resolve(result.rows);
          }
        });
      });
    });
  }

  /** A statement ran past its deadline: its connection is destroyed and the call fails. */
  #expire(call: InFlight): void {
    call.timedOut = true;
    const err = new BackendUnavailableError(`no answer from ${this.#url} within ${this.#timeoutMs} ms`);
    call.release(err);
    call.reject(err);
  }

  async transaction<T>(fn: (tx: SqlQuery) => Promise<T>): Promise<T> {
    const client = await this.#connect();
    const tx: SqlQuery = { query: (statement, params) => this.#inTransaction(client, statement, params) };
    try {
      await tx.query({ text: 'BEGIN' }, []);
      const result = await fn(tx);
      await tx.query({ text: 'COMMIT' }, []);
      client.release();
      return result;
    } catch (err) {
      // Destroying the connection rolls back whatever was open; simpler than a ROLLBACK that may fail too.
      client.release(err instanceof Error ? err : true);
      throw err;
    }
  }

  async close(): Promise<void> {
    this.#hot.close();
    await this.#pool.end();
  }
}

/**
 * Opens a PostgreSQL lease backend. `url` is a `postgres://` or `postgresql://`
 * connection URL with the query options of url.ts (`?schema=`, `?sslmode=`, …).
 * The tables live in the schema `schema` (URL or options; default `worklease`),
 * created or upgraded on open unless `options.migrate` is false.
 */
export async function openPostgres(url: string, options: OpenOptions = {}): Promise<LeaseBackend> {
  const { address, options: o, url: redacted } = resolveTarget(url, options, ['postgres'], 'PostgreSQL');
  const target = parsePostgresUrl(address.driverUrl, address.redactedDriverUrl);
  // Only what PgBouncer accepts goes in the start-up packet (it refuses statement_timeout and
  // options, with its default settings): the settings follow once connected (connect.ts).
  const config: pg.ClientConfig = {
    connectionString: target.hostUrl(0),
    application_name: applicationName(o.schema),
    connectionTimeoutMillis: o.callTimeoutMs,
    keepAlive: true,
  };
  let pooler = target.pooler;
  if (pooler === 'auto' || pooler === 'none') {
    const found = await detectPooler(target, redacted, config);
    if (found && pooler === 'none') {
      throw new InvalidArgumentError(
        `${redacted} says ?pooler=none, but the server answers through a connection pooler (its process id is not the one the connection was given): use ?pooler=transaction or ?pooler=session`,
      );
    }
    if (found) {
      o.telemetry.logger?.warn(
        { url: redacted, pooler: 'transaction' },
        `worklease: ${redacted} is reached through a connection pooler: lease calls send unnamed statements with their settings, and waiting acquires poll every 250 ms instead of LISTEN (as behind a transaction pooler); add ?pooler=session if it pools by session, ?pooler=transaction to say so and skip this check`,
      );
    }
    pooler = found ? 'transaction' : 'none';
  } else if (pooler === 'transaction') {
    o.telemetry.logger?.info(
      { url: redacted, pooler },
      `worklease: ${redacted} is behind a transaction pooler: waiting acquires poll every 250 ms instead of LISTEN`,
    );
  }
  const ms = o.callTimeoutMs;
  const sync = o.durability.synchronousCommit;
  // The server cancels a statement that runs past the call timeout, so a call abandoned by the
  // client does not keep holding row locks; synchronous_commit is the durability option
  // (docs/durability.md). Every hot statement is a primary-key lookup, so the generic plan is
  // always the right one: left to 'auto', Postgres keeps re-planning the CTE-shaped named
  // statements (custom plans), which measured at about half the throughput (64 in flight: renew
  // at 0.48x a raw upsert with custom plans, 0.92x generic). Unnamed statements are planned once
  // anyway, so behind a transaction pooler only the first two go with each call.
  const sessionSql =
    pooler === 'transaction'
      ? null
      : `SET statement_timeout = ${ms}; SET plan_cache_mode = force_generic_plan${sync === null ? '' : `; SET synchronous_commit = ${sync}`}`;
  const prelude =
    pooler === 'transaction'
      ? `SELECT set_config('statement_timeout', '${ms}', true)${sync === null ? '' : `, set_config('synchronous_commit', '${sync}', true)`}`
      : null;
  const connector = new Connector({ url: target, redacted, config, sessionSql });
  const pool = new pg.Pool({
    ...config,
    Client: connector.clientClass(),
    max: o.poolSize,
    idleTimeoutMillis: 30_000,
  });
  // Idle connections that die (server restart, pg_terminate_backend) are
  // removed by the pool; the next call gets a fresh one. Without a listener
  // the error would crash the process.
  pool.on('error', () => {});
  // A checked-out client can also emit 'error' between statements.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  const client = new PgClient(pool, o.callTimeoutMs, redacted, config, connector, o.poolSize, prelude);
  let driver: LeaseDriver;
  try {
    if (o.migrate) await migrateSchema(client, o.schema, redacted);
    else await checkSchema(client, o.schema, redacted);
    driver = await openSqlDriver('postgres', redacted, client, o.schema);
  } catch (err) {
    await client.close().catch(() => {});
    throw err;
  }
  return createBackend(driver, o.maxStateBytes, o.telemetry);
}

/**
 * One connection, without any setting, to tell whether a pooler sits in between (connect.ts,
 * behindPooler). Through the connector, so it goes to the host the URL's list and
 * target_session_attrs pick, and a server that speaks garbage fails it instead of the process.
 */
async function detectPooler(
  target: ReturnType<typeof parsePostgresUrl>,
  redacted: string,
  config: pg.ClientConfig,
): Promise<boolean> {
  const Client = new Connector({ url: target, redacted, config, sessionSql: null }).clientClass();
  const client = new Client(config);
  client.on('error', () => {});
  try {
    await client.connect();
    return await behindPooler(client);
  } catch (err) {
    throw classifySqlError(err, 'connecting', redacted);
  } finally {
    client.end().catch(() => {});
  }
}
