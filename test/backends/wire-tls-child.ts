/**
 * Run by redis-wire.test.ts in a child process started with NODE_EXTRA_CA_CERTS (the only way to
 * make Node trust a test certificate for a `rediss://` URL, which takes no CA option): opens the
 * backend at argv[2] (the server's TLS port), makes lease calls until the lease calls connection
 * is up, and prints what the server saw of this backend's connections (read on its plain port,
 * argv[3]) as JSON.
 */
import { Redis } from 'ioredis';
import { openRedis } from '../../src/backends/redis/index.ts';

const [url, port, prefix] = process.argv.slice(2) as [string, string, string];
const b = await openRedis(url, { keyPrefix: prefix, callTimeoutMs: 2000 });
const admin = new Redis({ host: '127.0.0.1', port: Number(port) });
const conns = async (): Promise<string[]> =>
  String(await admin.call('CLIENT', 'LIST', 'TYPE', 'normal'))
    .split('\n')
    .filter((line) => line.includes(` name=worklease:${prefix} `));
const rec = await b.acquire('tls', 'h', 30_000);
const deadline = Date.now() + 5000;
while ((await conns()).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
const renewed = await b.renew(rec, 30_000);
await b.checkpoint(rec, Buffer.from('over tls'), 30_000);
const read = await b.readCheckpoint(rec);
await b.admin.get('tls');
const cmds = (await conns()).map((line) => / cmd=(\S+)/.exec(line)?.[1]).sort();
process.stdout.write(
  `${JSON.stringify({ cmds, token: renewed.fencingToken === rec.fencingToken, state: Buffer.from(read.state!).toString() })}\n`,
);
await b.close();
admin.disconnect();
