import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  APP_ENTRY_URL,
  CONTENT_SECURITY_POLICY,
  contentTypeFor,
  isAppUrl,
  isNavigationAllowed,
  isPermissionAllowed,
  isPermissionCheckAllowed,
  isRequestAllowed,
  resolveAppAsset,
  SECURITY_HEADERS,
  WEB_PREFERENCES,
  windowOpenPolicy,
} from '../../src/electron-common/window-policy.ts';

function directives(csp: string): Map<string, string[]> {
  return new Map(
    csp.split(';').map((d) => {
      const [name = '', ...values] = d.trim().split(/\s+/);
      return [name, values];
    }),
  );
}

describe('window policy: webPreferences', () => {
  it('isolates the renderer from Node and Electron', () => {
    expect(WEB_PREFERENCES).toMatchObject({
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      experimentalFeatures: false,
      navigateOnDragDrop: false,
      devTools: false,
    });
    expect(Object.isFrozen(WEB_PREFERENCES)).toBe(true);
    expect(WEB_PREFERENCES).not.toHaveProperty('preload');
  });
});

describe('window policy: CSP', () => {
  const csp = directives(CONTENT_SECURITY_POLICY);

  it('has no unsafe sources and no remote origins', () => {
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/unsafe-inline|unsafe-eval|unsafe-hashes|wasm-unsafe-eval/);
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/https?:|wss?:|\*/);
  });

  it('locks every fetch directive down to self or none', () => {
    expect(csp.get('default-src')).toEqual(["'none'"]);
    expect(csp.get('script-src')).toEqual(["'self'"]);
    expect(csp.get('style-src')).toEqual(["'self'"]);
    expect(csp.get('connect-src')).toEqual(["'self'"]);
    expect(csp.get('img-src')).toEqual(["'self'", 'data:']);
    for (const d of ['object-src', 'base-uri', 'frame-ancestors', 'form-action', 'frame-src']) {
      expect(csp.get(d), d).toEqual(["'none'"]);
    }
  });

  it('is sent with the other security headers', () => {
    expect(SECURITY_HEADERS['Content-Security-Policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(SECURITY_HEADERS['X-Content-Type-Options']).toBe('nosniff');
    expect(SECURITY_HEADERS['Referrer-Policy']).toBe('no-referrer');
  });
});

describe('window policy: navigation, windows, requests, permissions', () => {
  it('denies navigation to another origin, scheme or page', () => {
    for (const target of [
      'https://example.com/',
      'http://127.0.0.1:7420/',
      'file:///etc/passwd',
      'app://evil/index.html',
      'app://console/other.html',
      'app://console/index.html?x=1',
      'javascript:alert(1)',
      'data:text/html,<script>1</script>',
      'not a url',
    ]) {
      expect(isNavigationAllowed(APP_ENTRY_URL, target), target).toBe(false);
    }
    expect(isNavigationAllowed('https://example.com/', 'https://example.com/')).toBe(false);
  });

  it('allows only staying on the same page', () => {
    expect(isNavigationAllowed(APP_ENTRY_URL, APP_ENTRY_URL)).toBe(true);
    expect(isNavigationAllowed(APP_ENTRY_URL, `${APP_ENTRY_URL}#/leases`)).toBe(true);
  });

  it('denies window.open for every URL', () => {
    for (const url of ['https://example.com/', APP_ENTRY_URL, 'about:blank']) {
      expect(windowOpenPolicy({ url })).toEqual({ action: 'deny' });
    }
  });

  it('cancels every request that is not the app itself', () => {
    expect(isRequestAllowed('app://console/assets/index-abc.js')).toBe(true);
    expect(isRequestAllowed('data:image/png;base64,AAAA')).toBe(true);
    for (const url of [
      'https://cdn.example/x.js',
      'http://127.0.0.1:7420/api/call',
      'ws://127.0.0.1/',
      'file:///x',
    ]) {
      expect(isRequestAllowed(url), url).toBe(false);
    }
  });

  it('grants notifications only', () => {
    expect(isPermissionAllowed('notifications')).toBe(true);
    for (const p of [
      'media',
      'geolocation',
      'clipboard-read',
      'openExternal',
      'fullscreen',
      'hid',
      'serial',
    ]) {
      expect(isPermissionAllowed(p), p).toBe(false);
    }
  });

  it('grants the notification check for the origin Electron passes, trailing slash included', () => {
    // setPermissionCheckHandler's requestingOrigin is the origin's URL spec: `app://console/`.
    // Comparing it as a string with APP_ORIGIN (no slash) denied notifications for good.
    expect(isPermissionCheckAllowed('notifications', 'app://console/')).toBe(true);
    expect(isPermissionCheckAllowed('notifications', 'app://console')).toBe(true);
    expect(isPermissionCheckAllowed('media', 'app://console/')).toBe(false);
    for (const origin of [
      'app://console/index.html',
      'app://console/?x=1',
      'app://console:8080/',
      'app://user@console/',
      'app://console.evil/',
      'https://console/',
      'file:///',
      'null',
      '',
    ]) {
      expect(isPermissionCheckAllowed('notifications', origin), origin).toBe(false);
    }
  });

  it('recognises only the app origin as its own', () => {
    expect(isAppUrl(APP_ENTRY_URL)).toBe(true);
    expect(isAppUrl('app://user@console/index.html')).toBe(false);
    expect(isAppUrl('app://console.evil/index.html')).toBe(false);
    expect(isAppUrl('https://console/index.html')).toBe(false);
  });
});

describe('window policy: app protocol files', () => {
  const root = path.resolve('/srv/renderer');

  it('maps app URLs into the renderer directory', () => {
    expect(resolveAppAsset(root, 'app://console/')).toBe(path.join(root, 'index.html'));
    expect(resolveAppAsset(root, APP_ENTRY_URL)).toBe(path.join(root, 'index.html'));
    expect(resolveAppAsset(root, 'app://console/assets/a%20b.js?v=1#x')).toBe(
      path.join(root, 'assets', 'a b.js'),
    );
  });

  it('refuses escapes and foreign hosts', () => {
    // The URL parser already folds literal and %2e dot segments, so they cannot leave the root.
    expect(resolveAppAsset(root, 'app://console/../../etc/passwd')).toBe(path.join(root, 'etc', 'passwd'));
    expect(resolveAppAsset(root, 'app://console/%2e%2e/secret')).toBe(path.join(root, 'secret'));
    for (const url of [
      'app://console/a%2f..%2f..%2fsecret',
      'app://console/a%5c..%5csecret',
      'app://console/a%00.js',
      'app://console/%E0%A4%A',
      'app://other/index.html',
      'https://console/index.html',
    ]) {
      expect(resolveAppAsset(root, url), url).toBeNull();
    }
  });

  it('serves scripts and styles with their real types (nosniff needs them)', () => {
    expect(contentTypeFor('x/index.html')).toMatch(/^text\/html/);
    expect(contentTypeFor('x/a.js')).toMatch(/^text\/javascript/);
    expect(contentTypeFor('x/a.CSS')).toMatch(/^text\/css/);
    expect(contentTypeFor('x/a.bin')).toBe('application/octet-stream');
  });
});
