/**
 * `npm run chaos -- --backend <url> --workers N --items M --seconds S`
 *
 * Runs the chaos harness in a fresh namespace (random schema / key prefix,
 * dropped afterwards) and prints one line: calls, faults, violations. Exits 1
 * when there are violations (listing the first ones on stderr), 2 on bad usage.
 */
import { parseArgs } from 'node:util';
import { redactUrl } from '../backends/url.ts';
import { FAULT_KINDS, type FaultKind } from './history.ts';
import { runChaos } from './runner.ts';

const USAGE = `usage: npm run chaos -- (--backend <url> | --private-redis | --private-sentinel) [--workers 8] [--items 4] [--seconds 60]
                      [--ttl-ms 1000] [--fault-every-ms 400] [--faults kill,pause,freeze,force-release,request-release,restart,failover]
                      [--broken] [--keep] [--in-process] [--verbose]

  --backend        postgres://…, redis://…, redis+cluster://h1:p1,h2:p2,…,
                   redis+sentinel://s1:p1,s2:p2,…/masterName, pglite://memory
  --private-redis  start a private Redis master + replica on loopback ports for the run, and add the
                   data-loss faults: restart (without persistence) and failover (to a lagging replica)
  --private-sentinel  start a private master + replica + three sentinels (redis+sentinel://) on loopback
                   ports; failover kills the master (SIGKILL) and the sentinels promote the replica
  --in-process     run the holders in one thread through one backend object (not one per worker thread)
  --broken   run through a backend wrapper that skips fencing (the checker must then report violations)
  --keep     keep the run's schema / key prefix for inspection

CLIENT PAUSE (fault 'pause') pauses a whole Redis server: use a dedicated one.`;

function int(name: string, value: string | undefined, dflt: number): number {
  if (value === undefined) return dflt;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got '${value}'`);
  return n;
}

async function main(): Promise<number> {
  let args: ReturnType<typeof parse>;
  function parse() {
    return parseArgs({
      options: {
        backend: { type: 'string' },
        'private-redis': { type: 'boolean' },
        'private-sentinel': { type: 'boolean' },
        'in-process': { type: 'boolean' },
        workers: { type: 'string' },
        items: { type: 'string' },
        seconds: { type: 'string' },
        'ttl-ms': { type: 'string' },
        'fault-every-ms': { type: 'string' },
        faults: { type: 'string' },
        broken: { type: 'boolean' },
        keep: { type: 'boolean' },
        verbose: { type: 'boolean' },
        help: { type: 'boolean' },
      },
      strict: true,
    });
  }
  let options: Parameters<typeof runChaos>[0];
  try {
    args = parse();
    if (args.values.help) {
      console.log(USAGE);
      return 0;
    }
    const privateRedis = args.values['private-redis'] ?? false;
    const privateSentinel = args.values['private-sentinel'] ?? false;
    const url = privateRedis
      ? 'redis://private'
      : privateSentinel
        ? 'redis+sentinel://private/m'
        : args.values.backend;
    if (url === undefined) throw new Error('--backend (or --private-redis, --private-sentinel) is required');
    if ([privateRedis, privateSentinel, args.values.backend !== undefined].filter(Boolean).length > 1)
      throw new Error('--backend, --private-redis and --private-sentinel exclude each other');
    let faults: FaultKind[] | undefined;
    if (args.values.faults !== undefined) {
      faults = args.values.faults.split(',').map((f) => {
        if (!(FAULT_KINDS as readonly string[]).includes(f)) throw new Error(`unknown fault '${f}'`);
        return f as FaultKind;
      });
    }
    options = {
      url,
      workers: int('workers', args.values.workers, 8),
      items: int('items', args.values.items, 4),
      seconds: int('seconds', args.values.seconds, 60),
      ttlMs: int('ttl-ms', args.values['ttl-ms'], 1000),
      faultEveryMs: int('fault-every-ms', args.values['fault-every-ms'], 400),
      broken: args.values.broken ?? false,
      keep: args.values.keep ?? false,
      privateRedis,
      privateSentinel,
      inProcess: args.values['in-process'] ?? false,
    };
    if (faults !== undefined) options.faults = faults;
    if (args.values.verbose) options.log = (line) => console.error(line);
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
    return 2;
  }

  const result = await runChaos(options);
  if (args.values.verbose) {
    console.error(`backend ${redactUrl(options.url)}`);
    for (const [i, s] of result.stats.entries()) console.error(`worker ${i}: ${JSON.stringify(s)}`);
    for (const e of result.injectorErrors.slice(0, 10)) console.error(`injector: ${e}`);
  }
  console.log(result.line);
  for (const v of result.report.violations.slice(0, 20))
    console.error(`violation ${v.kind} on ${v.item}: ${v.message}`);
  return result.report.violations.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(3);
  },
);
