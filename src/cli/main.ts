/**
 * Entry of the `worklease` command: bin/worklease runs it compiled (dist/cli.js)
 * from an install, through tsx from a checkout.
 * Every failure ends here: one line on stderr, a documented exit status, and
 * a stack trace only with --debug or WORKLEASE_DEBUG=1.
 */
import { CommanderError } from 'commander';
import { debugDetails, describeFailure, EXIT } from './errors.ts';
import { buildProgram } from './program.ts';

export async function main(argv: string[]): Promise<number> {
  const debug = argv.includes('--debug') || process.env.WORKLEASE_DEBUG === '1';
  try {
    await buildProgram().parseAsync(argv, { from: 'user' });
    return EXIT.OK;
  } catch (err) {
    // --help and --version end through exitOverride with a success code; they are not failures.
    if (err instanceof CommanderError && err.exitCode === 0) return EXIT.OK;
    // No command given: commander has printed the help to stderr; that is a usage error.
    if (err instanceof CommanderError && err.code === 'commander.help') return EXIT.INVALID_ARGUMENT;
    const failure = describeFailure(err);
    process.stderr.write(`${failure.line}\n`);
    if (debug) process.stderr.write(`${debugDetails(err)}\n`);
    return failure.exitCode;
  }
}

// Errors escaping the command (a driver's late socket error) still end with one line, not a stack.
for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
  process.on(event, (err: unknown) => {
    process.stderr.write(`${describeFailure(err).line}\n`);
    if (process.argv.includes('--debug') || process.env.WORKLEASE_DEBUG === '1') {
      process.stderr.write(`${debugDetails(err)}\n`);
    }
    process.exit(describeFailure(err).exitCode);
  });
}

// A reader that goes away (`worklease ls | head`) is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(EXIT.OK);
});

const code = await main(process.argv.slice(2));
// Exit explicitly: a backend's sockets or timers must not keep a finished command alive.
process.exit(code);
