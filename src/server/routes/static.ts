/**
 * The console page and its assets: no credentials needed (they hold no data),
 * HTML with the strict CSP and no framing, paths that are refused rather than
 * normalised, and no source maps (they would hand out the sources with their
 * comments; the build makes none and a stray `.map` is a 404 here).
 */
import { createReadStream, existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, resolve, sep } from 'node:path';
import { contentTypeFor, isSafeAssetPath } from '../../console/assets.ts';
import { notFound } from '../respond.ts';

const FALLBACK_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>worklease console</title></head>
<body><h1>worklease console</h1>
<p>The console's API is running, but the renderer has not been built. Run <code>npm run build:renderer</code> and reload.</p>
</body></html>
`;

/**
 * The real path of `urlPath` under `root`, or null when it does not exist, is
 * not a regular file, or resolves (through `..` or a symlink) outside `root`.
 */
export function resolveInside(root: string, urlPath: string): string | null {
  const realRoot = realpathSync(root);
  const candidate = resolve(realRoot, `.${urlPath}`);
  if (candidate !== realRoot && !candidate.startsWith(realRoot + sep)) return null;
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch {
    return null;
  }
  if (real !== realRoot && !real.startsWith(realRoot + sep)) return null;
  try {
    if (!statSync(real).isFile()) return null;
  } catch {
    return null;
  }
  return real;
}

/** `GET`/`HEAD` of a path that is not the API: the page at any of its routes, or an asset. */
export function createStaticRoute(options: {
  staticRoot: string;
  csp: () => string;
}): (req: IncomingMessage, res: ServerResponse, pathname: string) => void {
  const { staticRoot, csp } = options;

  const sendHtml = (res: ServerResponse, req: IncomingMessage, body: Buffer): void => {
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Length': body.length,
      'Content-Security-Policy': csp(),
      'X-Frame-Options': 'DENY',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  };

  /**
   * The page, at whatever route it was asked for. The build's asset URLs are relative (`./assets/…`,
   * so Electron can load it from its app protocol); over http they are made absolute here, or the
   * page at `/c/x/lease/y` would ask for `/c/x/lease/assets/…`. (A `<base href>` would do the same,
   * but the CSP allows no base URI.)
   */
  const sendIndex = (req: IncomingMessage, res: ServerResponse): void => {
    const index = resolve(staticRoot, 'index.html');
    if (!existsSync(index)) {
      sendHtml(res, req, Buffer.from(FALLBACK_PAGE));
      return;
    }
    const html = readFileSync(index, 'utf8').replace(/(\s(?:src|href)=")\.\//g, '$1/');
    sendHtml(res, req, Buffer.from(html));
  };

  const sendFile = (req: IncomingMessage, res: ServerResponse, file: string): void => {
    const headers: Record<string, string | number> = {
      'Content-Type': contentTypeFor(file),
      'Content-Length': statSync(file).size,
    };
    if (extname(file).toLowerCase() === '.html') {
      headers['Content-Security-Policy'] = csp();
      headers['X-Frame-Options'] = 'DENY';
    }
    res.writeHead(200, headers);
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(file)
      .on('error', () => res.destroy())
      .pipe(res);
  };

  return (req, res, pathname) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    // The page's own routes (app/routes.ts in the renderer): `/c/<connectionId>/…` carries ids that
    // are untrusted text (a work id may hold `.`, `%2F`, `%2E%2E`), so such a path is never looked up
    // as a file: it is answered with the page, whatever it holds.
    if (pathname === '/c' || pathname.startsWith('/c/')) {
      sendIndex(req, res);
      return;
    }
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathname);
    } catch {
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('bad path\n');
      return;
    }
    if (!isSafeAssetPath(decoded)) {
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('bad path\n');
      return;
    }
    if (decoded === '/' || decoded === '/index.html') {
      sendIndex(req, res);
      return;
    }
    if (!existsSync(resolve(staticRoot, 'index.html'))) {
      notFound(res);
      return;
    }
    if (extname(decoded).toLowerCase() === '.map') {
      notFound(res);
      return;
    }
    const file = resolveInside(staticRoot, decoded);
    if (file === null) {
      // Client-side routes (no extension: `/audit`, `/connections`) get the app; a missing asset is a 404.
      if (extname(decoded) === '') sendIndex(req, res);
      else notFound(res);
      return;
    }
    sendFile(req, res, file);
  };
}
