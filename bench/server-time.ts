/**
 * The Redis server's time in scripts, from INFO commandstats: the EVALSHA line's calls and usec.
 * Read around a pass, the difference is that pass's server time (the INFO call itself is not an
 * EVALSHA); EVALSHAs of other clients of a shared server during the pass count too.
 */
import { Redis } from 'ioredis';

export interface ScriptTime {
  calls: number;
  usec: number;
}

/** The EVALSHA line of an INFO commandstats reply; zeros before the server's first EVALSHA. */
export function parseEvalsha(info: string): ScriptTime {
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info);
  return m === null ? { calls: 0, usec: 0 } : { calls: Number(m[1]), usec: Number(m[2]) };
}

/**
 * A connection of its own to the server's EVALSHA totals: `during(pass)` runs the pass and returns
 * its result with the EVALSHA calls and usec the server counted meanwhile; `close` ends the connection.
 */
export function scriptTimes(url: string): {
  during<T>(pass: () => Promise<T>): Promise<ScriptTime & { result: T }>;
  close(): void;
} {
  const stats = new Redis(url);
  const read = async (): Promise<ScriptTime> => parseEvalsha(await stats.info('commandstats'));
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
