/**
 * The Redis server's time in lease calls, from INFO commandstats: a call is one EVALSHA, or one
 * transaction (MULTI … EXEC: the lease calls connection's readCheckpoint,
 * src/backends/redis/index.ts), whose commands run within EXEC's time. Read around a pass, the
 * difference is that pass's server time (the INFO call itself is neither); other clients' calls on
 * a shared server during the pass count too. Neither line holds the server's reading and queueing
 * of a transaction's commands before EXEC (nor the reading of an EVALSHA's arguments): callgrind
 * counts those (scripts.ts, checkpointStaged; index.ts, readCheckpoint). A transaction that holds
 * an EVALSHA (a checkpoint of 8 KiB or more) would be counted twice, in both lines; no bench pass
 * sends one.
 */
import { Redis } from 'ioredis';

export interface ScriptTime {
  calls: number;
  usec: number;
}

/** One command's line of an INFO commandstats reply; zeros before the server first ran it. */
function line(info: string, command: string): ScriptTime {
  const m = new RegExp(`cmdstat_${command}:calls=(\\d+),usec=(\\d+)`).exec(info);
  return m === null ? { calls: 0, usec: 0 } : { calls: Number(m[1]), usec: Number(m[2]) };
}

/** Lease calls in an INFO commandstats reply: EVALSHAs and EXECs, with the usec of those and of MULTI. */
export function parseCallTime(info: string): ScriptTime {
  const [evalsha, exec, multi] = [line(info, 'evalsha'), line(info, 'exec'), line(info, 'multi')];
  return { calls: evalsha.calls + exec.calls, usec: evalsha.usec + exec.usec + multi.usec };
}

/**
 * A connection of its own to the server's call totals ({@link parseCallTime}): `during(pass)` runs
 * the pass and returns its result with the calls and usec the server counted meanwhile; `close`
 * ends the connection.
 */
export function scriptTimes(url: string): {
  during<T>(pass: () => Promise<T>): Promise<ScriptTime & { result: T }>;
  close(): void;
} {
  const stats = new Redis(url);
  const read = async (): Promise<ScriptTime> => parseCallTime(await stats.info('commandstats'));
  return {
    async during(pass) {
      const t0 = await read();
      const result = await pass();
      const t1 = await read();
      return { calls: t1.calls - t0.calls, usec: t1.usec - t0.usec, result };
    },
    close: () => stats.disconnect(),
  };
}
