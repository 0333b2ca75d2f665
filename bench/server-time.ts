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

/** A connection of its own that reads the server's EVALSHA totals; `close` ends it. */
export function scriptTimes(url: string): { read(): Promise<ScriptTime>; close(): void } {
  const stats = new Redis(url);
  return {
    read: async () => parseEvalsha(await stats.info('commandstats')),
    close: () => stats.disconnect(),
  };
}
