/**
 * Command-line arguments of the benchmark scripts: `--help` prints the script's header
 * comment (which documents what it measures and its options, so the help cannot drift from
 * it), and an unknown option or a bad number exits 2 with one line saying which, instead of a
 * stack trace.
 */
import { readFileSync } from 'node:fs';
import { type ParseArgsConfig, parseArgs } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** The text of the first block comment of `file`, without its comment markers. */
export function headerOf(file: string): string {
  const source = readFileSync(file, 'utf8');
  const m = /\/\*\*([\s\S]*?)\*\//.exec(source);
  if (m === null) return '';
  return m[1]!
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim();
}

function fail(file: string, message: string): never {
  // The "Usage:" paragraph: its line and the indented ones that continue it.
  const lines = headerOf(file).split('\n');
  const at = lines.findIndex((l) => l.startsWith('Usage:'));
  const rest = at < 0 ? [] : lines.slice(at + 1);
  const end = rest.findIndex((l) => !/^\s+\S/.test(l));
  const usage = at < 0 ? '' : [lines[at], ...rest.slice(0, end < 0 ? rest.length : end)].join('\n');
  process.stderr.write(`${message}\n${usage === '' ? '' : `${usage}\n`}(--help for more)\n`);
  process.exit(2);
}

const HELP = { help: { type: 'boolean', short: 'h', default: false } } as const;

/** parseArgs with `--help` and friendly errors. `file` is the script's `import.meta.filename`. */
export function benchArgs<const O extends Options>(file: string, options: O) {
  const config = { options: { ...options, ...HELP } };
  let parsed: ReturnType<typeof parseArgs<typeof config>>;
  try {
    parsed = parseArgs(config);
  } catch (err) {
    fail(file, (err as Error).message);
  }
  if ((parsed.values as { help?: boolean }).help === true) {
    process.stdout.write(`${headerOf(file)}\n`);
    process.exit(0);
  }
  return parsed.values;
}

/** `value` as an integer of at least `min`, or exit 2 naming the option. */
export function intArg(file: string, name: string, value: unknown, min = 1): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    fail(file, `--${name} must be an integer >= ${min}, got ${String(value)}`);
  return n;
}

/** A number above `min` (fractions allowed), or exit 2 naming the option and what it got. */
export function numberArg(file: string, name: string, value: unknown, min = 0): number {
  const n = Number(value);
  if (typeof value !== 'string' || value.trim() === '' || !Number.isFinite(n) || n <= min)
    fail(file, `--${name} must be a number above ${min}, got ${String(value)}`);
  return n;
}

/**
 * `value` split at commas, each one of `allowed` (at least one), or exit 2 naming the option, what
 * it got and what it takes.
 */
export function listArg<const T extends string>(
  file: string,
  name: string,
  value: unknown,
  allowed: readonly T[],
): T[] {
  const items = String(value)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const bad = items.filter((s) => !(allowed as readonly string[]).includes(s));
  if (items.length === 0 || bad.length > 0)
    fail(
      file,
      `--${name} takes a comma-separated list of ${allowed.join(', ')}; got ${bad.length > 0 ? bad.join(', ') : 'none'}`,
    );
  return items as T[];
}
