/** The benches' reading of the server's script time from INFO commandstats. */
import { describe, expect, it } from 'vitest';
import { parseEvalsha } from '../../bench/server-time.ts';

describe('parseEvalsha', () => {
  it("reads the EVALSHA line's calls and usec, not another command's", () => {
    const info = [
      '# Commandstats',
      'cmdstat_eval:calls=7,usec=900,usec_per_call=128.57,rejected_calls=0,failed_calls=0',
      'cmdstat_evalsha:calls=2000,usec=26170,usec_per_call=13.09,rejected_calls=0,failed_calls=1',
      'cmdstat_info:calls=12,usec=400,usec_per_call=33.33,rejected_calls=0,failed_calls=0',
    ].join('\r\n');
    expect(parseEvalsha(info)).toEqual({ calls: 2000, usec: 26170 });
  });

  it('reads zeros before the server ran any EVALSHA', () => {
    expect(parseEvalsha('# Commandstats\r\ncmdstat_ping:calls=1,usec=2,usec_per_call=2.00\r\n')).toEqual({
      calls: 0,
      usec: 0,
    });
  });
});
