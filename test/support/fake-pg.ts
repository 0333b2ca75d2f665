/**
 * A fake PostgreSQL server on a loopback port that misbehaves in one chosen way, for the tests that
 * a hostile or broken server never takes the process down: after the client's start-up packet it
 * sends an authentication type no client knows, a malformed message, half a message and a cut, or
 * (after a normal start-up) garbage in reply to the first statement.
 */
import net from 'node:net';

export type FakeReply =
  | 'unknown-auth'
  | 'sasl-unknown-mechanism'
  | 'bad-length'
  | 'cut'
  | 'garbage-after-ready';

export interface FakePostgres {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

function msg(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

const int32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

const READY = Buffer.concat([
  msg('R', int32(0)), // AuthenticationOk
  msg('K', Buffer.concat([int32(4242), int32(1)])), // BackendKeyData
  msg('S', Buffer.from('server_version\u000015.0\u0000')),
  msg('Z', Buffer.from('I')),
]);

export async function startFakePostgres(reply: FakeReply): Promise<FakePostgres> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let started = false;
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (!started) {
        if (buffered.length < 8) return;
        const len = buffered.readInt32BE(0);
        if (buffered.length < len) return;
        const code = buffered.readInt32BE(4);
        buffered = buffered.subarray(len);
        if (code === 80877103) {
          socket.write('N'); // SSLRequest: no TLS here
          return;
        }
        started = true;
        switch (reply) {
          case 'unknown-auth':
            socket.write(msg('R', int32(99)));
            return;
          case 'sasl-unknown-mechanism':
            socket.write(msg('R', Buffer.concat([int32(10), Buffer.from('FANCY-AUTH\u0000\u0000')])));
            return;
          case 'bad-length':
            // An ErrorResponse whose length says 2: shorter than the length field itself.
            socket.write(Buffer.from([0x45, 0, 0, 0, 2, 0x53]));
            return;
          case 'cut':
            socket.end(msg('R', int32(0)).subarray(0, 6));
            return;
          case 'garbage-after-ready':
            socket.write(READY);
            return;
        }
      }
      // A statement after a normal start-up: a DataRow that claims more columns than it carries.
      if (buffered.length > 0) {
        buffered = Buffer.alloc(0);
        socket.write(
          Buffer.concat([
            msg('1', Buffer.alloc(0)),
            msg('D', Buffer.concat([Buffer.from([0, 9]), int32(1000)])),
          ]),
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    url: `postgres://fake@127.0.0.1:${port}/fake`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
