/**
 * The Electron IPC bridge, main half and preload half, over an in-memory
 * stand-in for ipcMain / ipcRenderer / webContents (the one permitted stand-in:
 * the Electron runtime cannot start on these machines). Payloads cross the
 * stand-in through structuredClone, as they cross Electron's IPC. Behind the
 * bridge is the real console service and the real dispatch.
 */
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConsoleEvent, ResponseEnvelope } from '../../src/console/api.ts';
import { dispatch } from '../../src/console/dispatch.ts';
import { type ConsoleService, createConsoleService } from '../../src/console/service.ts';
import { CALL_CHANNEL, EVENT_CHANNEL } from '../../src/electron-common/channels.ts';
import {
  createEventForwarder,
  createIpcMainHandler,
  createSenderCheck,
  type InvokeEventLike,
  registerIpcMainHandler,
} from '../../src/electron-common/ipc-main.ts';
import { createPreloadApi, type IpcRendererLike } from '../../src/electron-common/preload-api.ts';
import { APP_ENTRY_URL, isAppUrl } from '../../src/electron-common/window-policy.ts';

type Handler = (event: InvokeEventLike, ...args: unknown[]) => unknown;

/** One window's worth of IPC: ipcMain, the window's webContents and the page's ipcRenderer. */
function ipcPair(frameUrl = APP_ENTRY_URL) {
  const handlers = new Map<string, Handler>();
  const toRenderer = new EventEmitter();
  const frame = { url: frameUrl, parent: null as unknown };
  const webContents = {
    destroyed: false,
    isDestroyed() {
      return this.destroyed;
    },
    send(channel: string, ...args: unknown[]) {
      toRenderer.emit(channel, { sender: 'ipcRenderer-event' }, ...structuredClone(args));
    },
  };
  const ipcMain = {
    handle(channel: string, listener: Handler) {
      if (handlers.has(channel)) throw new Error(`second handler for ${channel}`);
      handlers.set(channel, listener);
    },
    removeHandler(channel: string) {
      handlers.delete(channel);
    },
  };
  const invokeAs = async (
    sender: unknown,
    senderFrame: InvokeEventLike['senderFrame'],
    channel: string,
    ...args: unknown[]
  ) => {
    const handler = handlers.get(channel);
    if (handler === undefined) throw new Error(`No handler registered for '${channel}'`);
    return structuredClone(await handler({ sender, senderFrame }, ...structuredClone(args)));
  };
  const ipcRenderer: IpcRendererLike & { listenerCount(channel: string): number } = {
    invoke: (channel, ...args) => invokeAs(webContents, frame, channel, ...args),
    on(channel, listener) {
      toRenderer.on(channel, listener);
      return this;
    },
    removeListener(channel, listener) {
      toRenderer.removeListener(channel, listener);
      return this;
    },
    listenerCount: (channel) => toRenderer.listenerCount(channel),
  };
  return { ipcMain, ipcRenderer, webContents, frame, handlers, invokeAs };
}

let service: ConsoleService | null = null;
afterEach(async () => {
  await service?.close();
  service = null;
});

function setup(frameUrl?: string) {
  service = createConsoleService({ operator: 'ipc-test', version: '9.9.9' });
  const pair = ipcPair(frameUrl);
  const svc = service;
  const refused: string[] = [];
  const handler = createIpcMainHandler({
    dispatch: (method, params) => dispatch(svc, method, params),
    isTrustedSender: createSenderCheck({ getTrustedSender: () => pair.webContents, isAppUrl }),
    onRefused: (reason) => refused.push(reason),
  });
  const unregister = registerIpcMainHandler(pair.ipcMain, handler);
  const unsubscribeService = svc.subscribe(createEventForwarder(() => pair.webContents));
  const api = createPreloadApi(pair.ipcRenderer);
  return { ...pair, api, handler, refused, unregister, unsubscribeService, service: svc };
}

function expectError(res: ResponseEnvelope, code: string) {
  expect(res.ok).toBe(false);
  if (!res.ok) expect(res.error.code).toBe(code);
}

describe('IPC bridge: calls', () => {
  it('round-trips a valid call through preload → main → dispatch → service', async () => {
    const { api } = setup();
    const res = await api.call('console.info', {});
    expect(res).toEqual({
      ok: true,
      result: { version: '9.9.9', readOnly: false, operator: 'ipc-test', profilesEditable: true },
    });
    expect(await api.call('connections.list', {})).toEqual({ ok: true, result: [] });
  });

  it('answers a malformed envelope with INVALID_ARGUMENT and does not throw', async () => {
    const { invokeAs, webContents, frame } = setup();
    for (const bad of [
      undefined,
      null,
      'connections.list',
      42,
      [],
      { params: {} },
      { method: 7, params: {} },
    ]) {
      const res = (await invokeAs(webContents, frame, CALL_CHANNEL, bad)) as ResponseEnvelope;
      expectError(res, 'INVALID_ARGUMENT');
    }
    const extra = (await invokeAs(webContents, frame, CALL_CHANNEL, {
      method: 'connections.list',
      params: {},
      token: 'x',
    })) as ResponseEnvelope;
    expectError(extra, 'INVALID_ARGUMENT');
  });

  it('answers an unknown method and bad params with INVALID_ARGUMENT', async () => {
    const { api } = setup();
    // Casts stand in for a compromised or buggy renderer that ignores the types.
    expectError(await api.call('process.exit' as 'console.info', {}), 'INVALID_ARGUMENT');
    expectError(await api.call('__proto__' as 'console.info', {}), 'INVALID_ARGUMENT');
    expectError(await api.call('fleet.snapshot', { connectionId: '' }), 'INVALID_ARGUMENT');
    expectError(
      await api.call('lease.forceRelease', {
        connectionId: 'c',
        workId: 'w',
        expectedToken: 'not-a-token',
        reason: 'x',
      }),
      'INVALID_ARGUMENT',
    );
    expectError(
      await api.call('connections.list', { sneaky: true } as unknown as Record<string, never>),
      'INVALID_ARGUMENT',
    );
  });

  it('brings service errors back with the same code', async () => {
    const { api } = setup();
    const res = await api.call('fleet.snapshot', { connectionId: 'no-such-connection' });
    expectError(res, 'NOT_FOUND');
    if (!res.ok) expect(res.error.name).toBe('NotFoundError');
  });

  it('turns a throwing dispatch into an INTERNAL envelope instead of a rejected invoke', async () => {
    const pair = ipcPair();
    const handler = createIpcMainHandler({
      dispatch: () => Promise.reject(new Error('bug in dispatch')),
      isTrustedSender: () => true,
    });
    registerIpcMainHandler(pair.ipcMain, handler);
    const res = await createPreloadApi(pair.ipcRenderer).call('console.info', {});
    expectError(res, 'INTERNAL');
  });

  it('reports a dead main process as BACKEND_UNAVAILABLE, not a rejection', async () => {
    const { api, unregister } = setup();
    unregister();
    expectError(await api.call('console.info', {}), 'BACKEND_UNAVAILABLE');
  });
});

describe('IPC bridge: sender check', () => {
  it('refuses another WebContents', async () => {
    const { invokeAs, frame, refused } = setup();
    const res = (await invokeAs({ other: true }, frame, CALL_CHANNEL, {
      method: 'console.info',
      params: {},
    })) as ResponseEnvelope;
    expectError(res, 'FORBIDDEN');
    expect(refused).toHaveLength(1);
  });

  it('refuses a sub-frame, a missing frame and a foreign URL in its own window', async () => {
    const { invokeAs, webContents } = setup();
    const call = { method: 'console.info', params: {} };
    const cases: InvokeEventLike['senderFrame'][] = [
      { url: APP_ENTRY_URL, parent: { url: APP_ENTRY_URL } },
      null,
      { url: 'https://evil.example/', parent: null },
      { url: 'file:///etc/passwd', parent: null },
      { url: 'app://other-host/index.html', parent: null },
    ];
    for (const senderFrame of cases) {
      expectError(
        (await invokeAs(webContents, senderFrame, CALL_CHANNEL, call)) as ResponseEnvelope,
        'FORBIDDEN',
      );
    }
  });

  it('refuses everything when its window is gone', async () => {
    const pair = ipcPair();
    const check = createSenderCheck({ getTrustedSender: () => null, isAppUrl });
    expect(check({ sender: pair.webContents, senderFrame: pair.frame })).toBe(false);
  });

  it('refuses the page after it navigated to a foreign URL', async () => {
    const { api } = setup('https://evil.example/phish');
    expectError(await api.call('console.info', {}), 'FORBIDDEN');
  });
});

describe('IPC bridge: events', () => {
  it('delivers a connections event first, then pushed events; unsubscribe stops them', async () => {
    const { api, ipcRenderer, webContents } = setup();
    const got: ConsoleEvent[] = [];
    const unsubscribe = api.subscribe((e) => got.push(e));
    await expect.poll(() => got.length).toBe(1);
    expect(got[0]).toEqual({ type: 'connections', connections: [] });
    expect(ipcRenderer.listenerCount(EVENT_CHANNEL)).toBe(1);

    const pushed: ConsoleEvent = { type: 'resync', connectionId: 'c1', seq: 7 };
    webContents.send(EVENT_CHANNEL, pushed);
    expect(got[1]).toEqual(pushed);

    unsubscribe();
    unsubscribe(); // idempotent
    webContents.send(EVENT_CHANNEL, { type: 'resync', connectionId: 'c1', seq: 8 });
    expect(got).toHaveLength(2);
    expect(ipcRenderer.listenerCount(EVENT_CHANNEL)).toBe(0);
  });

  it('forwards real service events to the window, never the IPC event object', async () => {
    const { api } = setup();
    const got: ConsoleEvent[] = [];
    api.subscribe((e) => got.push(e));
    await expect.poll(() => got.length).toBe(1);
    const added = await api.call('connections.add', {
      name: 'ipc events',
      url: 'redis://127.0.0.1:6379/0?keyPrefix=wl-ipc-test',
      environment: 'test',
    });
    expect(added.ok).toBe(true);
    await expect
      .poll(() =>
        got.some((e) => e.type === 'connections' && e.connections.some((c) => c.name === 'ipc events')),
      )
      .toBe(true);
    for (const e of got) expect(JSON.stringify(e)).not.toContain('ipcRenderer-event');
  });

  it('keeps two subscribers independent and survives a throwing one', async () => {
    const { api, webContents } = setup();
    const a: ConsoleEvent[] = [];
    const b: ConsoleEvent[] = [];
    const offThrower = api.subscribe(() => {
      throw new Error('bad listener');
    });
    const offA = api.subscribe((e) => a.push(e));
    api.subscribe((e) => b.push(e));
    await expect.poll(() => a.length + b.length).toBe(2);
    offA();
    webContents.send(EVENT_CHANNEL, { type: 'resync', connectionId: 'x', seq: 1 });
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(2);
    offThrower();
  });

  it('drops events while the window is closed', () => {
    const { webContents } = ipcPair();
    let sent = 0;
    const forward = createEventForwarder(() => ({
      isDestroyed: () => webContents.destroyed,
      send: () => {
        sent++;
      },
    }));
    forward({ type: 'resync', connectionId: 'x', seq: 1 });
    webContents.destroyed = true;
    forward({ type: 'resync', connectionId: 'x', seq: 2 });
    expect(sent).toBe(1);
    const noWindow = createEventForwarder(() => null);
    expect(() => noWindow({ type: 'resync', connectionId: 'x', seq: 3 })).not.toThrow();
  });
});
