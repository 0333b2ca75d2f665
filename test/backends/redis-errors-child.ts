/**
 * Run by redis-errors.test.ts in a child process, so that the test sees everything the library
 * writes to stderr (a Node deprecation warning such as DEP0123 included): opens each backend URL
 * given as an argument, expects the open to fail, and prints each failure's code, reason and
 * message as JSON lines on stdout.
 */
import { openBackend, WorkleaseError } from '../../src/index.ts';

for (const url of process.argv.slice(2)) {
  try {
    const backend = await openBackend(url, { keyPrefix: 'errors_child', callTimeoutMs: 2000 });
    await backend.close();
    process.stdout.write(`${JSON.stringify({ url, opened: true })}\n`);
  } catch (err) {
    const e = err as WorkleaseError;
    const reason = err instanceof WorkleaseError ? e.details?.reason : undefined;
    process.stdout.write(`${JSON.stringify({ url, code: e.code, reason, message: e.message })}\n`);
  }
}
