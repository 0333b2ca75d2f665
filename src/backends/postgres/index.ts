/**
 * The PostgreSQL backend: the shared SQL driver over a `pg.Pool`.
 *
 * Pool discipline (as node-postgres recommends): every call checks out one
 * client, runs one statement and gives the client back; a client whose
 * connection failed or timed out is destroyed (`release(err)`) rather than
 * reused, so after the server drops connections the next call either runs on a
 * fresh connection or fails with BACKEND_UNAVAILABLE. `pool.on('error')` is
 * attached so an idle connection dying never crashes the process.
 */
import pg from 'pg';
import { BackendUnavailableError, InvalidArgumentError } from '../../lease/errors.ts';
import type { LeaseBackend, OpenOptions } from '../../lease/types.ts';
import { createBackend, resolveOptions } from '../common.ts';
import type { Row, SqlClient, SqlQuery, Statement } from '../sql/client.ts';
import { SqlLeaseDriver } from '../sql/driver.ts';
import { classifySqlError, isConnectionError } from '../sql/errors.ts';
import { checkSchema, migrateSchema } from '../sql/migrations.ts';
import { parseBackendUrl } from '../url.ts';

/** The `application_name` of a backend's connections; lets operators (and tests) find exactly them. */
export function applicationName(schema: string): string {
  return `worklease:${schema}`;
}

class PgClient implements SqlClient {
  readonly #pool: pg.Pool;
  readonly #timeoutMs: number;
  readonly #url: string;

  constructor(pool: pg.Pool, timeoutMs: number, url: string) {
    this.#pool = pool;
    this.#timeoutMs = timeoutMs;
    this.#url = url;
  }

  async query(statement: Statement, params: readonly unknown[]): Promise<Row[]> {
    const deadline = Date.now() + this.#timeoutMs;
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      throw classifySqlError(err, 'connecting', this.#url);
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      client.release();
      throw new BackendUnavailableError(
        `waiting for a connection to ${this.#url} took over ${this.#timeoutMs} ms`,
      );
    }
    const config: pg.QueryConfig = { text: statement.text, values: params as unknown[] };
    if (statement.name !== undefined) config.name = statement.name;
    const running = client.query(config);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new BackendUnavailableError(`no answer from ${this.#url} within ${this.#timeoutMs} ms`));
      }, remaining);
    });
    try {
      const result = await Promise.race([running, timeout]);
      client.release();
      return result.rows as Row[];
    } catch (err) {
      // A timed-out or broken connection may still carry the old query's reply: never reuse it.
      const broken = err instanceof BackendUnavailableError || isConnectionError(err);
      running.catch(() => {});
      client.release(broken ? (err as Error) : undefined);
      throw classifySqlError(err, 'query', this.#url);
    } finally {
      clearTimeout(timer);
    }
  }

  async transaction<T>(fn: (tx: SqlQuery) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      throw classifySqlError(err, 'connecting', this.#url);
    }
    const tx: SqlQuery = {
      query: async (statement, params) => {
        try {
          const r = await client.query({ text: statement.text, values: params as unknown[] });
          return r.rows as Row[];
        } catch (err) {
          throw classifySqlError(err, 'query', this.#url);
        }
      },
    };
    try {
      await tx.query({ text: 'BEGIN' }, []);
      const result = await fn(tx);
      await tx.query({ text: 'COMMIT' }, []);
      client.release();
      return result;
    } catch (err) {
      // Destroying the connection rolls back whatever was open; cheaper to reason about than a ROLLBACK that may fail too.
      client.release(err instanceof Error ? err : true);
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}

/**
 * Opens a PostgreSQL lease backend. `url` is a `postgres://` or `postgresql://`
 * connection URL (any `pg` connection-string parameter works). The tables live
 * in the schema `options.schema` (default `worklease`), created or upgraded on
 * open unless `options.migrate` is false.
 */
export async function openPostgres(url: string, options: OpenOptions = {}): Promise<LeaseBackend> {
  const { kind, redacted } = parseBackendUrl(url);
  if (kind !== 'postgres') throw new InvalidArgumentError(`not a PostgreSQL URL: ${redacted}`);
  const o = resolveOptions(options);
  const pool = new pg.Pool({
    connectionString: url,
    max: o.poolSize,
    application_name: applicationName(o.schema),
    // The server cancels a statement that runs past the call timeout, so a
    // call abandoned by the client does not keep holding row locks.
    statement_timeout: o.callTimeoutMs,
    connectionTimeoutMillis: o.callTimeoutMs,
    keepAlive: true,
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
  const client = new PgClient(pool, o.callTimeoutMs, redacted);
  try {
    if (o.migrate) await migrateSchema(client, o.schema, redacted);
    else await checkSchema(client, o.schema, redacted);
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  return createBackend(new SqlLeaseDriver('postgres', redacted, client, o.schema), o.maxStateBytes);
}
