/** The benches' reading of the server's script time from INFO commandstats. */

import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { parseCallTime, scriptTimes } from '../../bench/server-time.ts';
import { REDIS_URL } from '../support/backends.ts';

describe('parseCallTime', () => {
  it('counts EVALSHAs and EXECs as calls, with the usec of EVALSHA, EXEC and MULTI, and no other line', () => {
    const info = [
      '# Commandstats',
      'cmdstat_eval:calls=7,usec=900,usec_per_call=128.57,rejected_calls=0,failed_calls=0',
      'cmdstat_evalsha:calls=2000,usec=26170,usec_per_call=13.09,rejected_calls=0,failed_calls=1',
      'cmdstat_multi:calls=300,usec=30,usec_per_call=0.10,rejected_calls=0,failed_calls=0',
      'cmdstat_exec:calls=300,usec=900,usec_per_call=3.00,rejected_calls=0,failed_calls=0',
      'cmdstat_get:calls=600,usec=240,usec_per_call=0.40,rejected_calls=0,failed_calls=0',
    ].join('\r\n');
    expect(parseCallTime(info)).toEqual({ calls: 2300, usec: 27100 });
  });

  it('reads zeros before the server ran any of them', () => {
    expect(parseCallTime('# Commandstats\r\ncmdstat_ping:calls=1,usec=2,usec_per_call=2.00\r\n')).toEqual({
      calls: 0,
      usec: 0,
    });
  });
});

describe('scriptTimes', () => {
  it("counts the pass's EVALSHAs and EXECs on the real server and hands back the pass's result", async () => {
    const stats = scriptTimes(REDIS_URL);
    const client = new Redis(REDIS_URL);
    try {
      const sha = String(await client.script('LOAD', 'return 1'));
      const before = parseCallTime(await client.info('commandstats'));
      const t = await stats.during(async () => {
        for (let i = 0; i < 5; i++) await client.evalsha(sha, 0);
        // A transaction is one call (its EXEC).
        await client.multi().get('server-time-test').exec();
        return 'done';
      });
      const after = parseCallTime(await client.info('commandstats'));
      expect(t.result).toBe('done');
      // The pass's own six at least; other clients of the shared server may add theirs. A
      // difference, not the server's totals: within what the server counted around the call.
      expect(t.calls).toBeGreaterThanOrEqual(6);
      expect(t.calls).toBeLessThanOrEqual(after.calls - before.calls);
      expect(t.usec).toBeLessThanOrEqual(after.usec - before.usec);
    } finally {
      stats.close();
      client.disconnect();
    }
  });
});
