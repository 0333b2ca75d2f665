/**
 * A fake PostgreSQL server on a loopback port that records what a client sends
 * it: the startup parameters (user, database, …) and the password it answers a
 * cleartext password request with. It then refuses the login (28P01) and
 * closes. For tests of what a console sends to a host a caller chose: it must
 * never be the server's own credentials.
 */
import net from 'node:net';

export interface FakeLogin {
  /** Startup parameters as sent (`user`, `database`, `application_name`, …). */
  startup: Record<string, string>;
  /** The password sent for the cleartext request, or null when none came before the connection closed. */
  password: string | null;
}

export interface FakePostgres {
  readonly port: number;
  /** Every connection accepted, in order (including ones that sent nothing). */
  readonly connections: number;
  readonly logins: readonly FakeLogin[];
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

function authRequest(): Buffer {
  const b = Buffer.alloc(9);
  b.write('R', 0);
  b.writeInt32BE(8, 1);
  b.writeInt32BE(3, 5); // AuthenticationCleartextPassword
  return b;
}

function authFailed(): Buffer {
  const fields = Buffer.from('SFATAL\0C28P01\0Mpassword authentication failed (fake server)\0\0');
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

export async function startFakePostgres(): Promise<FakePostgres> {
  const logins: FakeLogin[] = [];
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffer = Buffer.alloc(0);
    let login: FakeLogin | null = null;
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (login === null) {
          // Untyped messages: length, then a code or the protocol version.
          if (buffer.length < 8) return;
          const len = buffer.readInt32BE(0);
          if (buffer.length < len) return;
          const code = buffer.readInt32BE(4);
          const body = buffer.subarray(8, len);
          buffer = buffer.subarray(len);
          if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
            socket.write('N');
            continue;
          }
          const parts = body.toString('utf8').split('\0');
          const startup: Record<string, string> = {};
          for (let i = 0; i + 1 < parts.length && parts[i] !== ''; i += 2) startup[parts[i]!] = parts[i + 1]!;
          login = { startup, password: null };
          logins.push(login);
          socket.write(authRequest());
          continue;
        }
        if (buffer.length < 5) return;
        const len = buffer.readInt32BE(1);
        if (buffer.length < len + 1) return;
        const type = String.fromCharCode(buffer[0]!);
        const body = buffer.subarray(5, len + 1);
        buffer = buffer.subarray(len + 1);
        if (type === 'p') {
          login.password = body.toString('utf8').replace(/\0$/, '');
          socket.end(authFailed());
          return;
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    get connections() {
      return connections;
    },
    logins,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
