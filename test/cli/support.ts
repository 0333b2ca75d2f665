/**
 * Runs the real `bin/worklease` as a child process, as a user would.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/worklease', import.meta.url));

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs one command to completion (killed after `timeoutMs`). Never rejects on a non-zero exit. */
export function run(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): Promise<RunResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, WORKLEASE_URL: '', WORKLEASE_DEBUG: '', ...env }, timeout: timeoutMs },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
        resolve({ code, stdout, stderr, ms: Date.now() - started });
      },
    );
  });
}

export interface Running {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout/stderr text matching `pattern`; rejects after `timeoutMs`. */
  waitFor(pattern: RegExp, stream?: 'stdout' | 'stderr', timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends SIGINT (SIGKILL after 5 s) and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts a long-running command (watch, serve, demo). */
export function start(args: string[], env: NodeJS.ProcessEnv = {}): Running {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, WORKLEASE_URL: '', WORKLEASE_DEBUG: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const buffers = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d: Buffer) => {
    buffers.stdout += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    buffers.stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => buffers.stdout,
    stderr: () => buffers.stderr,
    async waitFor(pattern, stream = 'stdout', timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = buffers[stream].match(pattern);
        if (m) return m;
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(
            `no ${pattern} on ${stream} (exit ${child.exitCode})\nstdout: ${buffers.stdout}\nstderr: ${buffers.stderr}`,
          );
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGINT');
      // Clean-stop tests check the exit status, not the speed: a demo fleet with groups took over
      // 5 s to leave its leases at load 15.
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
