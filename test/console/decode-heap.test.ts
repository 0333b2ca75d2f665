import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

it('keeps the decoded-checkpoint cache flat over a long life (40 checkpoints, --expose-gc)', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', 'test/console/decode-heap-child.ts'],
    { timeout: 120_000 },
  );
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
    heapAt15: number;
    heapAt40: number;
    cached: number;
  };
  const mib = (n: number) => (n / 1048576).toFixed(1);
  console.log(
    `heap after 15 checkpoints ${mib(r.heapAt15)} MiB, after 40 ${mib(r.heapAt40)} MiB, ${r.cached} kept`,
  );
  expect(r.cached).toBeLessThanOrEqual(8);
  // 25 more checkpoints of 0.2 MiB each (5 MiB of JSON) leave the heap where it was, within 4 MiB.
  expect(r.heapAt40 - r.heapAt15).toBeLessThan(4 * 1024 * 1024);
}, 150_000);
