/**
 * The seam between the shared SQL lease driver and a concrete Postgres client.
 * `pg` (a pool of real server connections) and PGlite (one in-process WASM
 * connection) both implement it, so both run byte-for-byte the same SQL.
 */

/** One result row, keyed by column name. Values are whatever the client parsed (see rows.ts). */
export type Row = Record<string, unknown>;

/**
 * One result row as the server's text output, in select-list order (NULL stays
 * null). No client-side type parsing happens: the driver decodes the columns it
 * asked for itself (see rows.ts).
 */
export type TextRow = readonly (string | null)[];

/** A statement: its text and, for hot calls, a name under which a client may keep it prepared. */
export interface Statement {
  /** Name of a server-side prepared statement, unique per statement text within one backend. */
  readonly name?: string;
  readonly text: string;
  /**
   * A holder's lease call (acquire, checkpoint, renew, release, readCheckpoint; always named): a
   * client may send it on connections of its own (postgres/hot.ts).
   */
  readonly hot?: true;
}

/** A NOTICE the server sent while a statement ran (`pg` and PGlite both parse SQLSTATE and DETAIL). */
export interface SqlNotice {
  readonly code?: string | undefined;
  readonly detail?: string | undefined;
}

export interface SqlQuery {
  /**
   * Runs one statement as its own transaction (autocommit). Errors come back already classified.
   * `onNotice` hears the NOTICEs this statement sends, before the call resolves.
   */
  query(
    statement: Statement,
    params: readonly unknown[],
    onNotice?: (notice: SqlNotice) => void,
  ): Promise<Row[]>;
}

export interface SqlClient extends SqlQuery {
  /**
   * How long a call may wait for the server, ms, when the client enforces it (PostgreSQL); absent
   * where calls cannot time out (PGlite, in this thread). The driver sends an acquire's deadline
   * in the server's clock from it (statements/acquire.ts).
   */
  readonly callTimeoutMs?: number;
  /**
   * Like {@link SqlQuery.query}, but rows come back as {@link TextRow}s. For the
   * big reads of the console (list, changes: up to 10 000 rows a call), where the
   * client's generic type parsers dominated the cost: `pg` parses every
   * timestamptz text with a regex into a Date, and builds one keyed object a row.
   */
  queryText(statement: Statement, params: readonly unknown[]): Promise<TextRow[]>;
  /**
   * Runs `fn` inside one transaction on one connection (BEGIN … COMMIT, ROLLBACK on error).
   * Used by the migration runner only; lease calls are single statements.
   */
  transaction<T>(fn: (tx: SqlQuery) => Promise<T>): Promise<T>;
  /**
   * Optional: LISTENs on `channel` on a connection of its own and calls `onNotify` with each
   * payload, and with null after the listen (re)connects (notifications sent meanwhile are lost).
   * Returns a function that stops listening.
   */
  listen?(channel: string, onNotify: (payload: string | null) => void): () => void;
  close(): Promise<void>;
}
