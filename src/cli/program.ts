/**
 * The `worklease` command line: argument parsing (commander), help with
 * examples, and the mapping of every failure to one stderr line and an exit
 * status (see errors.ts).
 */

import { Command, Option } from 'commander';
import { URL_OPTIONS } from '../backends/url.ts';
import { packageVersion } from '../version.ts';
import { auditCommand, parseTimeBound } from './commands/audit.ts';
import { groupsCommand } from './commands/groups.ts';
import { addHistoryCommands } from './commands/history.ts';
import { lsCommand } from './commands/ls.ts';
import { migrateCommand } from './commands/migrate.ts';
import { parseDuration, pruneCommand } from './commands/prune.ts';
import { recoverCommand } from './commands/recover.ts';
import { releaseCommand } from './commands/release.ts';
import { requestReleaseCommand } from './commands/request-release.ts';
import { demoCommand, serveCommand } from './commands/serve.ts';
import { showCommand } from './commands/show.ts';
import { watchCommand } from './commands/watch.ts';
import {
  collect,
  type GlobalOptions,
  parseFraction,
  parseNonNegativeInt,
  parsePort,
  parsePositiveInt,
  parseToken,
} from './context.ts';
import { EXIT_HELP } from './errors.ts';

const URL_HELP = `Backend URLs: postgres://user@host:5432/db, redis://host:6379[/db], rediss://…,
redis+sentinel://host:port[,host:port…]/masterName (a master named by Sentinel, followed across
failovers), redis+cluster://host:port[,host:port…] (Redis Cluster), pglite://memory,
pglite:///absolute/dir.
The URL argument may be left out when WORKLEASE_URL is set.
URL query options (the same in the library, the CLI and the console; any other is refused):
${Object.entries(URL_OPTIONS)
  .map(([name, o]) => `  ${name.padEnd(18)}${o.kinds.join('/')}: ${o.about}`)
  .join('\n')}
--schema, --key-prefix and --timeout are ?schema=, ?keyPrefix= and ?callTimeoutMs=;
giving one both ways with different values is refused.`;

function examples(lines: string[]): string {
  return `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;
}

function globalsOf(cmd: Command): GlobalOptions {
  return cmd.optsWithGlobals<GlobalOptions>();
}

function addThresholds(cmd: Command): Command {
  return cmd
    .option(
      '--stuck-after <ms>',
      'a live lease whose checkpoint has not moved for this long is stuck (default 60000)',
      parsePositiveInt,
    )
    .option(
      '--expiring-fraction <f>',
      'a live lease with less than this fraction of its ttl left is expiring (default 0.25)',
      parseFraction,
    );
}

/** Builds the program. Output and exits are left to the caller (`main`). */
export function buildProgram(): Command {
  const program = new Command('worklease')
    .description('Inspect and operate worklease fleets: leases, checkpoints, force-release, live console.')
    .version(packageVersion(), '-V, --version')
    .option('--schema <name>', 'Postgres/PGlite schema, as ?schema= (default worklease)')
    .option('--key-prefix <prefix>', 'Redis key prefix, as ?keyPrefix= (default worklease)')
    .option(
      '--timeout <ms>',
      'how long one backend call may wait before failing as unreachable, as ?callTimeoutMs= (default 10000)',
      parsePositiveInt,
    )
    .option('--debug', 'print stack traces of errors (also WORKLEASE_DEBUG=1)')
    // Every subcommand's --help lists these too: each command honours all of them.
    .configureHelp({ showGlobalOptions: true })
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .addHelpText('after', `\n${URL_HELP}\n\n${EXIT_HELP}\n`);

  program
    .command('migrate')
    .description('create or upgrade the worklease schema on a backend')
    .argument('[url]', 'backend URL (default $WORKLEASE_URL)')
    .option('--check', 'change nothing: exit 0 if the schema is up to date, 6 if a migration is needed')
    .addHelpText(
      'after',
      examples([
        'worklease migrate postgres://postgres@127.0.0.1:5432/app',
        'worklease migrate postgres://postgres@127.0.0.1:5432/app --schema billing --check',
        'worklease migrate redis://127.0.0.1:6379 --key-prefix jobs',
      ]),
    )
    .action((url: string | undefined, opts, cmd: Command) => migrateCommand(url, opts, globalsOf(cmd)));

  addThresholds(
    program
      .command('ls')
      .description('list leases with their derived status (by the backend clock)')
      .argument('[url]', 'backend URL (default $WORKLEASE_URL)')
      .option(
        '--status <list>',
        'only these statuses, comma-separated or repeated: live, expiring, expired, released, stuck, force-released',
        collect,
      )
      .option('--holder <holderId>', 'only leases whose current or last holder is this one')
      .option('--prefix <workIdPrefix>', 'only work ids starting with this')
      .option(
        '--limit <n>',
        'print the first n by work id, read page by page on the server, and "n of total"',
        parsePositiveInt,
      )
      .option('--json', 'print a JSON array (tokens as strings, times as ISO 8601)')
      .option('--urls', "add each lease's console URL (needs --console-url or $WORKLEASE_CONSOLE_URL)")
      .option(
        '--console-url <url>',
        'the console people open, e.g. http://127.0.0.1:7420/ (also $WORKLEASE_CONSOLE_URL)',
      ),
  )
    .addHelpText(
      'after',
      examples([
        'worklease ls postgres://postgres@127.0.0.1/app',
        'worklease ls $URL --status stuck,expired --stuck-after 120000',
        'worklease ls $URL --holder worker-7 --prefix billing/ --json | jq .',
        'worklease ls postgres://postgres@127.0.0.1/app --schema billing --limit 20',
      ]),
    )
    .action((url: string | undefined, opts, cmd: Command) => lsCommand(url, opts, globalsOf(cmd)));

  addThresholds(
    program
      .command('show')
      .description('show one lease: every field and its decoded checkpoint (JSON, text, or hex for binary)')
      .usage('[options] [url] <workId>')
      .argument('<url-or-workId>', 'backend URL, or the work id when WORKLEASE_URL is set')
      .argument('[workId]', 'work id')
      .option('--offset <bytes>', 'checkpoint page start (default 0)', parseNonNegativeInt)
      .option('--length <bytes>', 'checkpoint page size, at most 1048576 (default 65536)', parsePositiveInt)
      .option('--raw', 'write the whole checkpoint as raw bytes to stdout (for piping)')
      .option('--json', 'print JSON (lease fields, and the page as base64 plus its decoding)')
      .option(
        '--console-url <url>',
        "print the lease's console URL: the console people open (also $WORKLEASE_CONSOLE_URL)",
      ),
  )
    .addHelpText(
      'after',
      examples([
        'worklease show postgres://postgres@127.0.0.1/app billing/job-17',
        'worklease show $URL blob-3 --offset 65536',
        'worklease show $URL blob-3 --raw > blob-3.bin',
      ]),
    )
    .action((first: string, second: string | undefined, opts, cmd: Command) =>
      showCommand(first, second, opts, globalsOf(cmd)),
    );

  program
    .command('release')
    .description(
      'force-release a lease: bumps its fencing token so the current holder is fenced out, and audits it',
    )
    .usage('[options] [url] <workId> --force --expected-token <n> --reason <text>')
    .argument('<url-or-workId>', 'backend URL, or the work id when WORKLEASE_URL is set')
    .argument('[workId]', 'work id')
    .option('--force', 'required: confirms you mean to fence out the current holder')
    .requiredOption(
      '--expected-token <n>',
      'the fencing token you saw (from ls/show); refused with CONFLICT if it changed',
      parseToken,
    )
    .requiredOption('--reason <text>', 'why (recorded in the audit log)')
    .option('--operator <name>', 'who (recorded in the audit log; default the OS user)')
    .option('--json', 'print the released lease as JSON')
    .addHelpText(
      'after',
      examples([
        'worklease show $URL billing/job-17          # note its fencing token, e.g. 41',
        'worklease release $URL billing/job-17 --force --expected-token 41 --reason "stuck since 09:12, INC-2231"',
      ]),
    )
    .action((first: string, second: string | undefined, opts, cmd: Command) =>
      releaseCommand(first, second, opts, globalsOf(cmd)),
    );

  program
    .command('recover')
    .description(
      'Redis: bring back the buckets a Cluster master lost when it came back empty (their items fail DATASET_LOST until then); audited',
    )
    .usage('[options] [url] --force --reason <text>  |  [url] --dry-run')
    .argument('[url]', 'backend URL (default $WORKLEASE_URL)')
    .option('--dry-run', 'change nothing: print which buckets (and whether the meta key) are lost')
    .option('--force', 'required without --dry-run: the lost items start over without leases or checkpoints')
    .option('--reason <text>', 'why (recorded in the audit log of each recovered bucket)')
    .option('--operator <name>', 'who (recorded in the audit log; default the OS user)')
    .option('--json', 'print what was lost and recovered as JSON')
    .addHelpText(
      'after',
      examples([
        'worklease recover redis+cluster://10.0.0.1:7000,10.0.0.2:7000 --key-prefix jobs --dry-run',
        'worklease recover redis+cluster://10.0.0.1:7000,10.0.0.2:7000 --key-prefix jobs --force --reason "node 2 came back empty, INC-2231"',
      ]),
    )
    .action((url: string | undefined, opts, cmd: Command) => recoverCommand(url, opts, globalsOf(cmd)));

  program
    .command('groups')
    .description('the consumer groups of joinGroup: members, what each holds, whether balanced')
    .argument('[url]', 'backend URL (default $WORKLEASE_URL)')
    .option('--group <name>', 'only this group')
    .option('--json', 'print a JSON array (times as ISO 8601)')
    .addHelpText(
      'after',
      examples(['worklease groups $URL', 'worklease groups $URL --group ingest --json | jq .']),
    )
    .action((url: string | undefined, opts, cmd: Command) => groupsCommand(url, opts, globalsOf(cmd)));

  program
    .command('request-release')
    .description(
      'ask the holder of a lease to hand it over: it saves and releases at its next renew or checkpoint (clean handoff); audited',
    )
    .usage('[options] [url] <workId> --token <n> --reason <text>')
    .argument('<url-or-workId>', 'backend URL, or the work id when WORKLEASE_URL is set')
    .argument('[workId]', 'work id')
    .option(
      '--token <n>',
      'the fencing token you saw (from ls/show); refused with CONFLICT if it changed',
      parseToken,
    )
    .option('--expected-token <n>', 'the same as --token (the name release uses)', parseToken)
    .requiredOption('--reason <text>', 'why (recorded in the audit log and shown to the holder)')
    .option('--operator <name>', 'who (recorded in the audit log; default the OS user)')
    .option('--json', 'print the lease, with its request, as JSON')
    .addHelpText(
      'after',
      examples([
        'worklease show $URL billing/job-17          # note its fencing token, e.g. 41',
        'worklease request-release $URL billing/job-17 --token 41 --reason "draining node 7"',
        'worklease show $URL billing/job-17          # the request and its age, until the holder hands over',
      ]),
    )
    .action((first: string, second: string | undefined, opts, cmd: Command) =>
      requestReleaseCommand(first, second, opts, globalsOf(cmd)),
    );

  addHistoryCommands(program, globalsOf);

  program
    .command('audit')
    .description('the audit log of admin actions (force-releases, release requests), newest first')
    .argument('[url]', 'backend URL (default $WORKLEASE_URL)')
    .option('--work-id <workId>', 'only entries about this work item')
    .option('--operator <name>', 'only entries by this operator')
    .option(
      '--since <time>',
      'only entries at or after: ISO 8601 time, or a duration ago (90m, 2h, 7d)',
      parseTimeBound,
    )
    .option('--until <time>', 'only entries at or before: ISO 8601 time, or a duration ago', parseTimeBound)
    .option('--limit <n>', 'print at most this many entries, 1..1000 (default 100)', parsePositiveInt)
    .option('--json', 'print a JSON array (tokens as strings, times as ISO 8601)')
    .addHelpText(
      'after',
      examples([
        'worklease audit postgres://postgres@127.0.0.1/app --schema billing',
        'worklease audit $URL --work-id billing/job-17',
        'worklease audit $URL --operator alice --since 24h --json | jq .',
      ]),
    )
    .action((url: string | undefined, opts, cmd: Command) => auditCommand(url, opts, globalsOf(cmd)));

  program
    .command('prune')
    .description(
      'remove work items whose lease ended long ago, with their checkpoints (a dry run unless --force; held items are kept), and apply the history retention; fencing tokens are kept',
    )
    .argument('[url]', 'backend URL (default $WORKLEASE_URL)')
    .requiredOption(
      '--older-than <duration>',
      'ended more than this long ago: 7d, 12h, 30m, 90s, 500ms',
      parseDuration,
    )
    .option('--force', 'really prune (without it: print what would be pruned and change nothing)')
    .option(
      '--history-older-than <duration>',
      "with --force: also delete work items' history entries older than this (default 30d)",
      parseDuration,
    )
    .option(
      '--history-keep <n>',
      'with --force: keep at most this many history entries per work item (default 1000)',
      parsePositiveInt,
    )
    .option('--prefix <workIdPrefix>', 'dry run only: show only work ids starting with this')
    .option('--json', 'print JSON: the candidates, and how many were pruned')
    .addHelpText(
      'after',
      examples([
        'worklease prune postgres://postgres@127.0.0.1/app --schema billing --older-than 7d',
        'worklease prune $URL --older-than 7d --force',
      ]),
    )
    .action((url: string | undefined, opts, cmd: Command) => pruneCommand(url, opts, globalsOf(cmd)));

  program
    .command('watch')
    .description(
      'print ownership changes as they happen (renews and checkpoints are not in the change feed): time, work id, kind, holder, token',
    )
    .argument('[url]', 'backend URL (default $WORKLEASE_URL)')
    .option(
      '--kind <list>',
      'only these kinds: acquired, released, force-released, release-requested, pruned',
      collect,
    )
    .option('--holder <holderId>', 'only changes by this holder')
    .option('--prefix <workIdPrefix>', 'only work ids starting with this')
    .option('--max-interval <ms>', 'longest pause between polls when idle (default 1000)', parsePositiveInt)
    .option('--json', 'print one JSON object per line')
    .addHelpText(
      'after',
      examples([
        'worklease watch redis://127.0.0.1:6379',
        'worklease watch $URL --kind acquired,released,force-released',
        'worklease watch $URL --json | jq -c "select(.kind == \\"force-released\\")"',
      ]),
    )
    .action((url: string | undefined, opts, cmd: Command) => watchCommand(url, opts, globalsOf(cmd)));

  program
    .command('serve')
    .description(
      'serve the web console for one or more backends (bound to 127.0.0.1 with a token; SIGHUP re-reads --config users and proxy)',
    )
    .option('--connect <url>', 'a backend to show (repeatable; default $WORKLEASE_URL)', collect)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <port>', 'port, 0..65535 (0 picks a free one)', parsePort, 7420)
    .option('--token-file <file>', 'file holding the shared access token (also $WORKLEASE_TOKEN)')
    .option('--token <token>', 'shared access token (visible in ps: prefer --token-file)')
    .option('--config <file>', 'JSON config: connections, users (token hashes, roles), trusted proxy')
    .option('--public-url <url>', 'the URL people open, when not the bind address (Host and Origin checks)')
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM; with --tls-key)')
    .option('--tls-key <file>', 'private key of --tls-cert (PEM)')
    .option('--insecure-http', 'allow plain HTTP on a non-loopback address (tokens travel in clear)')
    .option('--allow-connection-edits', 'let admins add, edit, test and remove connections from the page')
    .option('--pglite-dir <dir>', 'with --allow-connection-edits: the only directory for pglite:/// URLs')
    .option(
      '--connection-hosts <host:port,…>',
      'with --allow-connection-edits: hosts added connections may reach besides the configured ones (repeatable)',
      collect,
    )
    .option(
      '--proxy-secret-file <file>',
      "file holding the trusted proxy's shared secret (also $WORKLEASE_PROXY_SECRET)",
    )
    .option(
      '--session-idle <ms>',
      'a browser session unused this long ends (default 3600000: 1 h)',
      parsePositiveInt,
    )
    .option(
      '--session-lifetime <ms>',
      'a browser session ends this long after sign-in (default 43200000: 12 h)',
      parsePositiveInt,
    )
    .option(
      '--max-clients <n>',
      'most live event streams (browser tabs) at once (default 200)',
      parsePositiveInt,
    )
    .option(
      '--max-clients-per-user <n>',
      'most live event streams of one person (default 32)',
      parsePositiveInt,
    )
    .option(
      '--max-clients-per-address <n>',
      'most live event streams from one source address (default 100)',
      parsePositiveInt,
    )
    .option('--read-only', 'refuse force-release on every connection')
    .addOption(new Option('--environment <label>', 'label shown beside the connections').default(''))
    .option('--metrics', 'serve Prometheus text at /metrics, behind the same sign-in as the console')
    .option(
      '--metrics-bind <[host:]port>',
      'serve /metrics WITHOUT sign-in on a listener of its own (host default 127.0.0.1)',
    )
    .addHelpText(
      'after',
      examples([
        'worklease serve --connect postgres://postgres@127.0.0.1/app',
        'worklease serve --connect $PROD_URL --connect $STAGING_URL --read-only --port 0',
        'WORKLEASE_TOKEN=$(openssl rand -hex 32) worklease serve --connect $URL',
        'worklease serve --config /etc/worklease/console.json --public-url https://console.example.com',
        'worklease serve --connect $URL --metrics-bind 127.0.0.1:9464',
        'worklease serve --config console.json --allow-connection-edits --connection-hosts db2.internal:5432',
      ]),
    )
    .action((opts, cmd: Command) => serveCommand(opts, globalsOf(cmd)));

  program
    .command('demo')
    .description('run a simulated fleet of workers (some stuck, dying, flapping) and serve the console on it')
    .option('--backend <url>', 'backend to run the fleet on (migrated first)', 'pglite://memory')
    .option('--workers <n>', 'simulated workers, 1..200', parsePositiveInt, 8)
    .option('--items <n>', 'most work items created, 1..10000', parsePositiveInt, 40)
    .option('--ttl <ms>', 'lease ttl of every claim', parsePositiveInt, 10_000)
    .option('--tick <ms>', 'time between two steps of one worker', parsePositiveInt, 1000)
    .option('--stuck-after <ms>', 'console threshold for stuck leases', parsePositiveInt, 20_000)
    .option(
      '--group-members <n>',
      'members of a demo consumer group sharing 9 partitions, 0..20 (0: no group)',
      parseNonNegativeInt,
      3,
    )
    .option('--no-serve', 'run the fleet only, without the console')
    .option('--host <host>', 'console address to bind', '127.0.0.1')
    .option('--port <port>', 'console port, 0..65535 (0 picks a free one)', parsePort, 7420)
    .option('--token-file <file>', 'file holding the console access token (also $WORKLEASE_TOKEN)')
    .option('--token <token>', 'console access token (visible in ps: prefer --token-file)')
    .addHelpText(
      'after',
      examples([
        'worklease demo',
        'worklease demo --backend postgres://postgres@127.0.0.1/test --schema demo --workers 12',
        'worklease demo --backend redis://127.0.0.1:6379 --key-prefix demo --no-serve',
      ]),
    )
    .action((opts, cmd: Command) => demoCommand(opts, globalsOf(cmd)));

  // Settings given to `program` above are copied to each subcommand when it is created.
  for (const cmd of program.commands) cmd.showHelpAfterError(false);
  return program;
}
