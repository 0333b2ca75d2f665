/** The private redis-server starter of the chaos runs and the durability tests: a failed start leaves nothing behind. */
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, redisCall, startRedisServer } from '../../src/chaos/servers.ts';

function redisServersOn(port: number): string[] {
  try {
    return execFileSync('pgrep', ['-f', `redis-server.*--port ${port}|redis-server 127.0.0.1:${port}`], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .filter((l) => l !== '');
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

describe('startRedisServer', () => {
  it('starts a server that answers, and stop() ends it', async () => {
    const server = await startRedisServer();
    expect(await redisCall(server.port, 'PING')).toBe('PONG');
    expect(redisServersOn(server.port)).toHaveLength(1);
    await server.stop();
    expect(redisServersOn(server.port)).toEqual([]);
  });

  it('fails at once when redis-server exits at start (port taken), leaving no process', async () => {
    const port = await freePort();
    // Something that holds the port but is not Redis.
    const squatter: Server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
    try {
      await expect(startRedisServer({ port })).rejects.toThrow(/exited at start/);
      expect(redisServersOn(port)).toEqual([]);
    } finally {
      await new Promise((r) => squatter.close(r));
    }
  });
});
