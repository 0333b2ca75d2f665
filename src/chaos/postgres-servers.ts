/**
 * Throw-away PostgreSQL topologies on loopback ports, for the tests and chaos runs that need to own
 * the servers: a private PostgreSQL (initdb into a temporary directory), a streaming standby of it
 * (pg_basebackup -R) that can be promoted, and PgBouncer in front of a server. Each gets a private
 * directory (mkdtemp) that `stop()` removes; only processes started here are ever signalled, by
 * their own process id.
 *
 * PostgreSQL and PgBouncer refuse to run as root: when this process is root, the directory is
 * handed to the `postgres` user and the tools run as that user (`su postgres`).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './servers.ts';

const BIN = '/usr/lib/postgresql/15/bin';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const root = process.getuid?.() === 0;

/** Runs a PostgreSQL tool (as the postgres user when this process is root). */
function tool(command: string): void {
  if (root) execFileSync('su', ['postgres', '-c', command], { stdio: 'ignore', timeout: 120_000 });
  else execFileSync('sh', ['-c', command], { stdio: 'ignore', timeout: 120_000 });
}

/** A directory of our own that the postgres user may write (we made it, so we may hand it over). */
function privateDir(tag: string): string {
  const dir = mkdtempSync(join(tmpdir(), `worklease-${tag}-`));
  if (root) execFileSync('chown', ['postgres', dir]);
  chmodSync(dir, 0o700);
  return dir;
}

/** Waits until something accepts TCP connections on 127.0.0.1:port. */
async function waitListening(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port}`);
    await sleep(50);
  }
}

export interface PrivatePostgres {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly dir: string;
  /** Process ids of the postmaster and its children now (for SIGSTOP / SIGCONT). */
  pids(): number[];
  /** SIGSTOP to the postmaster and every child: sockets stay open, nothing answers. */
  pause(): void;
  resume(): void;
  /** Immediate shutdown (as a crash): nothing more is written. */
  kill(): void;
  /** `pg_ctl promote` (a standby becomes a primary). */
  promote(): Promise<void>;
  /** Stops the server (if running) and removes its directory. */
  stop(): void;
}

export interface PrivatePostgresOptions {
  /** Lines appended to postgresql.auto.conf. */
  settings?: readonly string[];
  /** Start as a streaming standby of this primary (pg_basebackup -R). */
  standbyOf?: PrivatePostgres;
}

/** Starts a private PostgreSQL 15 on a free loopback port. */
export async function startPostgres(options: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
  const dir = privateDir(options.standbyOf === undefined ? 'pg' : 'pg-standby');
  const port = await freePort();
  const data = join(dir, 'data');
  let running = false;
  try {
    if (options.standbyOf === undefined) {
      tool(`${BIN}/initdb -D ${data} -A trust -U postgres`);
    } else {
      tool(
        `${BIN}/pg_basebackup -h 127.0.0.1 -p ${options.standbyOf.port} -U postgres -D ${data} -R -X stream -c fast`,
      );
    }
    const auto = join(data, 'postgresql.auto.conf');
    const lines = [
      `port = ${port}`,
      `listen_addresses = '127.0.0.1'`,
      `unix_socket_directories = '${dir}'`,
      // Replication needs a WAL sender slot or two; the defaults allow 10 already.
      ...(options.settings ?? []),
    ];
    writeFileSync(auto, `${existsSync(auto) ? readFileSync(auto, 'utf8') : ''}\n${lines.join('\n')}\n`);
    if (options.standbyOf === undefined) {
      // Streaming replication from loopback for a standby made later (trust, as the rest).
      writeFileSync(
        join(data, 'pg_hba.conf'),
        `${readFileSync(join(data, 'pg_hba.conf'), 'utf8')}\nhost replication all 127.0.0.1/32 trust\n`,
      );
    }
    tool(`${BIN}/pg_ctl -D ${data} -l ${dir}/log -w -t 60 start`);
    running = true;
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const postmaster = (): number => Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const pids = (): number[] => {
    const main = postmaster();
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(main)], { encoding: 'utf8' })
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter((n) => n > 0);
    return [main, ...children];
  };
  const signal = (sig: NodeJS.Signals): void => {
    for (const pid of pids()) {
      try {
        process.kill(pid, sig);
      } catch {
        // Gone meanwhile.
      }
    }
  };
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dir,
    pids,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    kill() {
      if (!running) return;
      signal('SIGCONT');
      tool(`${BIN}/pg_ctl -D ${data} -m immediate -w stop`);
      running = false;
    },
    async promote() {
      tool(`${BIN}/pg_ctl -D ${data} -w promote`);
    },
    stop() {
      try {
        if (running) {
          signal('SIGCONT');
          tool(`${BIN}/pg_ctl -D ${data} -m immediate -w stop`);
        }
      } finally {
        running = false;
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export type PoolMode = 'session' | 'transaction';

export interface PgBouncer {
  readonly port: number;
  readonly mode: PoolMode;
  /** `url` of the server behind, with the host and port replaced by PgBouncer's. */
  rewrite(url: string): string;
  /**
   * Cuts every client and server connection of `database` (PgBouncer's admin console: KILL, then
   * RESUME): what a pooler restart does to its clients. Returns how many clients were connected.
   */
  cut(database: string): Promise<number>;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** host:port of the server behind. */
  serverPort: number;
  mode: PoolMode;
  /** Server connections per (database, user) pair: PgBouncer's default_pool_size (default 20). */
  poolSize?: number;
  /** More `[pgbouncer]` settings, e.g. `ignore_startup_parameters = …`. */
  settings?: readonly string[];
}

/**
 * Starts Debian's PgBouncer on a free loopback port in front of 127.0.0.1:serverPort with its
 * default settings and `pool_mode`, trust authentication (as the servers here), room for the test
 * suite's clients, and `default_pool_size` when given.
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  const dir = privateDir('pgbouncer');
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${options.serverPort}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      'auth_type = trust',
      `auth_file = ${dir}/users.txt`,
      `pool_mode = ${options.mode}`,
      // The admin console, for cut() (KILL / RESUME).
      'admin_users = postgres',
      'max_client_conn = 1000',
      ...(options.poolSize === undefined ? [] : [`default_pool_size = ${options.poolSize}`]),
      ...(options.settings ?? []),
      `logfile = ${dir}/pgbouncer.log`,
      '',
    ].join('\n'),
  );
  if (root) execFileSync('chown', ['-R', 'postgres', dir]);
  const args = root ? ['-u', 'postgres', ini] : [ini];
  const child: ChildProcess = spawn('pgbouncer', args, { stdio: 'ignore' });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, sig) =>
      reject(new Error(`pgbouncer exited at start (${sig ?? `code ${code}`})`)),
    ),
  );
  exited.catch(() => {});
  try {
    await Promise.race([waitListening(port, 15_000), exited]);
  } catch (err) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    port,
    mode: options.mode,
    rewrite: (url) => url.replace(/@[^/?]+/, `@127.0.0.1:${port}`),
    async cut(database) {
      const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/pgbouncer` });
      admin.on('error', () => {});
      await admin.connect();
      try {
        const { rows } = await admin.query<{ database: string }>('SHOW CLIENTS');
        const n = rows.filter((r) => r.database === database).length;
        await admin.query(`KILL ${database}`);
        await admin.query(`RESUME ${database}`);
        return n;
      } finally {
        await admin.end().catch(() => {});
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([gone, sleep(5000)]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
