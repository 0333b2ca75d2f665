/**
 * The embedded backend: the shared SQL driver over PGlite (Postgres compiled to
 * WASM, in this process). For demos, tests and single-process tools.
 *
 * PGlite is one connection, so calls are serialized through one queue; that
 * also keeps a migration transaction from interleaving with other calls.
 * `callTimeoutMs` does not apply: the database runs in this thread and cannot
 * be unreachable.
 */
import { access, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite, types } from '@electric-sql/pglite';
import { InvalidArgumentError, NotFoundError } from '../../lease/errors.ts';
import type { LeaseBackend, OpenOptions } from '../../lease/types.ts';
import { createBackend, type LeaseDriver, resolveTarget } from '../common.ts';
import type { Row, SqlClient, SqlNotice, SqlQuery, Statement, TextRow } from '../sql/client.ts';
import { openSqlDriver } from '../sql/driver.ts';
import { classifySqlError } from '../sql/errors.ts';
import { checkSchema, migrateSchema } from '../sql/migrations.ts';
import { migrateCommandFor, parseBackendUrl, resolveBackendUrl } from '../url.ts';

/** Where the data lives: `memory` or an absolute directory. */
export function pgliteLocation(url: string): { dataDir: string | null } {
  const { kind, redacted } = parseBackendUrl(url);
  if (kind !== 'pglite') throw new InvalidArgumentError(`not a PGlite URL: ${redacted}`);
  // Query options (`?schema=`) are not part of the location.
  const rest = resolveBackendUrl(url).driverUrl.slice('pglite:'.length);
  if (rest === '//memory' || rest === '//memory/') return { dataDir: null };
  if (!rest.startsWith('///')) {
    throw new InvalidArgumentError(
      `PGlite URL '${redacted}' must be pglite://memory or pglite:///absolute/dir (relative paths are refused: they would depend on the working directory)`,
    );
  }
  let dir: string;
  try {
    dir = decodeURIComponent(rest.slice(2));
  } catch {
    throw new InvalidArgumentError(`PGlite URL '${redacted}' has a malformed percent-encoding`);
  }
  if (!path.isAbsolute(dir) || dir.includes('\0')) {
    throw new InvalidArgumentError(`PGlite URL '${redacted}' must name an absolute directory`);
  }
  return { dataDir: path.normalize(dir) };
}

const keepText = (text: string): string => text;

class PgliteClient implements SqlClient {
  readonly #db: PGlite;
  readonly #url: string;
  #tail: Promise<unknown> = Promise.resolve();
  /**
   * For queryText: every type PGlite would parse maps to the identity (a type it
   * has no parser for already stays text). Its own parsers are the built-in ones
   * plus those it registered for this database's types.
   */
  readonly #textParsers: Record<number, (text: string) => string>;

  constructor(db: PGlite, url: string) {
    this.#db = db;
    this.#url = url;
    this.#textParsers = {};
    for (const oid of [...Object.keys(types.parsers), ...Object.keys(db.parsers)]) {
      this.#textParsers[Number(oid)] = keepText;
    }
  }

  /** Runs `task` after every task queued before it, whatever their outcome. */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(task, task);
    this.#tail = run.catch(() => {});
    return run;
  }

  /**
   * One statement, after a turn of the event loop. PGlite runs in this thread and
   * its promises settle without any I/O, so a loop of calls (`while (…) await
   * backend.renew(…)`) would otherwise run on microtasks alone and no timer would
   * fire until it ends: heartbeats, call deadlines, test timeouts. setImmediate
   * runs in the loop's check phase, so between two statements the loop passes
   * its timers phase at least once. Cost: about 2 µs a call (100 000 bare turns
   * in 0.2 s), against about 1.1 ms for a renew; 5000 renewals in a loop took
   * 5.0-5.9 s with it and 5.5-6.3 s without, i.e. within the noise.
   */
  async #run(
    statement: Statement,
    params: readonly unknown[],
    asText = false,
    onNotice?: (notice: SqlNotice) => void,
  ): Promise<unknown[]> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      if (asText) {
        const result = await this.#db.query<TextRow>(statement.text, params as unknown[], {
          rowMode: 'array',
          parsers: this.#textParsers,
        });
        return result.rows;
      }
      if (params.length === 0 && statement.name === undefined) {
        // exec (simple protocol) accepts several statements, as migrations need.
        const results = await this.#db.exec(statement.text);
        return results.at(-1)?.rows ?? [];
      }
      const result = await this.#db.query<Row>(
        statement.text,
        params as unknown[],
        onNotice === undefined ? undefined : { onNotice },
      );
      return result.rows;
    } catch (err) {
      throw classifySqlError(err, 'query', this.#url);
    }
  }

  query(
    statement: Statement,
    params: readonly unknown[],
    onNotice?: (notice: SqlNotice) => void,
  ): Promise<Row[]> {
    return this.#serial(() => this.#run(statement, params, false, onNotice) as Promise<Row[]>);
  }

  queryText(statement: Statement, params: readonly unknown[]): Promise<TextRow[]> {
    return this.#serial(() => this.#run(statement, params, true) as Promise<TextRow[]>);
  }

  transaction<T>(fn: (tx: SqlQuery) => Promise<T>): Promise<T> {
    return this.#serial(async () => {
      await this.#run({ text: 'BEGIN' }, []);
      try {
        const result = await fn({
          query: (statement, params) => this.#run(statement, params) as Promise<Row[]>,
        });
        await this.#run({ text: 'COMMIT' }, []);
        return result;
      } catch (err) {
        await this.#run({ text: 'ROLLBACK' }, []).catch(() => {});
        throw err;
      }
    });
  }

  /** PGlite delivers NOTIFY to listeners in this process; the listen is in place before any later call runs. */
  listen(channel: string, onNotify: (payload: string | null) => void): () => void {
    let stopped = false;
    const ready = this.#serial(() =>
      this.#db.listen(channel, (payload) => {
        if (!stopped) onNotify(payload);
      }),
    );
    ready.then(
      () => {
        if (!stopped) onNotify(null);
      },
      () => {},
    );
    return () => {
      stopped = true;
      ready.then((unlisten) => unlisten()).catch(() => {});
    };
  }

  async close(): Promise<void> {
    await this.#serial(() => this.#db.close());
  }
}

/**
 * Opens an embedded PGlite lease backend: `pglite://memory` (gone on close) or
 * `pglite:///absolute/dir` (kept on disk; with `migrate` the directory is created
 * if missing, without it a directory that holds no database is NOT_FOUND and
 * nothing is created: an inspection must not leave a new database behind a typo).
 * One process at a time may open a directory.
 */
export async function openPglite(url: string, options: OpenOptions = {}): Promise<LeaseBackend> {
  const { address, options: o, url: redacted } = resolveTarget(url, options, ['pglite'], 'PGlite');
  const { dataDir } = pgliteLocation(address.driverUrl);
  if (dataDir !== null && o.migrate) await mkdir(dataDir, { recursive: true });
  else if (dataDir !== null && !(await exists(path.join(dataDir, 'PG_VERSION')))) {
    throw new NotFoundError(
      `no PGlite database in ${dataDir}; create it with \`${migrateCommandFor(redacted)}\``,
      { details: { reason: 'unknown-database', dataDir } },
    );
  }
  let db: PGlite;
  try {
    db = dataDir === null ? await PGlite.create() : await PGlite.create(dataDir);
  } catch (err) {
    throw classifySqlError(err, 'opening PGlite', redacted);
  }
  const client = new PgliteClient(db, redacted);
  let driver: LeaseDriver;
  try {
    if (o.migrate) await migrateSchema(client, o.schema, redacted);
    else await checkSchema(client, o.schema, redacted);
    driver = await openSqlDriver('pglite', redacted, client, o.schema);
  } catch (err) {
    await client.close().catch(() => {});
    throw err;
  }
  return createBackend(driver, o.maxStateBytes, o.telemetry);
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
