import { describe, expect, it } from 'vitest';
import { formatRoute, leasePath, parseFragment, parseRoute, type Route } from '../../renderer/app/routes.ts';
import { filterFromQuery, fleetQuery, sortFromQuery } from '../../renderer/features/fleet/url.ts';

/** What a browser does with an address: resolve it (dot segments, escapes) and split it. */
function load(href: string): Route {
  const url = new URL(href, 'http://127.0.0.1:7420');
  return parseRoute(url.pathname, url.search);
}

describe('console routes', () => {
  it('builds a lease link in the shape the CLI prints, and reads it back', () => {
    expect(leasePath('pg-main', 'job-17')).toBe('/c/pg-main/lease/job-17');
    expect(leasePath('pg-main', 'orders/job 17')).toBe('/c/pg-main/lease/orders%2Fjob%2017');
    expect(load('/c/pg-main/lease/orders%2Fjob%2017')).toEqual({
      view: 'fleet',
      connectionId: 'pg-main',
      workId: 'orders/job 17',
      query: {},
    });
  });

  it('round-trips untrusted work ids through a real URL parser unchanged', () => {
    const ids = [
      'job.17',
      '.',
      '..',
      '../../etc/passwd',
      'a%2Fb',
      '%E0%A4%A',
      '<img src=x onerror=alert(1)>',
      'x?status=stuck#frag',
      'tab\u202Ename\u200B',
      '日本語/ジョブ',
      '  spaced  ',
    ];
    for (const workId of ids) {
      const route: Route = {
        view: 'fleet',
        connectionId: 'c/1',
        workId,
        query: { q: 'a&b=c', scope: 'all' },
      };
      expect(load(formatRoute(route)), workId).toEqual(route);
    }
  });

  it('names the other views by path, with or without a connection, and keeps the query', () => {
    expect(load('/')).toEqual({ view: 'fleet', connectionId: null, workId: null, query: {} });
    expect(load('/audit?q=job-1')).toEqual({
      view: 'audit',
      connectionId: null,
      workId: null,
      query: { q: 'job-1' },
    });
    expect(load('/c/pg/audit')).toEqual({ view: 'audit', connectionId: 'pg', workId: null, query: {} });
    expect(formatRoute({ view: 'connections', connectionId: null, workId: null, query: {} })).toBe(
      '/connections',
    );
    expect(formatRoute({ view: 'fleet', connectionId: 'pg', workId: null, query: { status: 'stuck' } })).toBe(
      '/c/pg?status=stuck',
    );
  });

  it('reads a malformed or foreign address as the fleet, never as an error', () => {
    for (const href of [
      '/c/%E0%A4%A/lease/x',
      '/c//lease/x',
      '/a/b/c',
      '/Audit<script>',
      '/c/pg/lease/a/b',
    ]) {
      const r = load(href);
      expect(r.view, href).toBe('fleet');
      expect(r.workId, href).toBeNull();
    }
    expect(load('/c/pg/lease/%E0%A4%A')).toMatchObject({ connectionId: 'pg', workId: null });
    // A sign-in token is never part of the route (it is exchanged and removed at load).
    expect(load('/?token=secret').query).toEqual({});
  });

  it('keeps filters and sort in the query, ignoring values that are not statuses or sort keys', () => {
    const q = { q: 'batch', status: 'stuck,bogus,expired', sort: 'expiresAt', dir: 'desc' };
    const filter = filterFromQuery(q);
    expect(filter.search).toBe('batch');
    expect([...filter.statuses].sort()).toEqual(['expired', 'stuck']);
    expect(sortFromQuery(q)).toEqual({ key: 'expiresAt', dir: 'desc' });
    expect(sortFromQuery({ sort: 'constructor' })).toEqual({ key: 'workId', dir: 'asc' });
    expect(fleetQuery(filter, sortFromQuery(q))).toEqual({
      q: 'batch',
      holder: '',
      prefix: '',
      status: 'expired,stuck',
      sort: 'expiresAt',
      dir: 'desc',
    });
  });

  it('keeps the same route after the # in the desktop app (an app-protocol page: the path is a file)', () => {
    const route: Route = {
      view: 'fleet',
      connectionId: 'pg',
      workId: 'orders/job 17',
      query: { q: 'x', sort: 'expiresAt' },
    };
    const href = new URL(`app://console/index.html#${formatRoute(route)}`);
    expect(href.pathname).toBe('/index.html');
    expect(parseFragment(href.hash)).toEqual(route);
    expect(parseFragment('')).toEqual({ view: 'fleet', connectionId: null, workId: null, query: {} });
    expect(parseFragment('#/audit?q=job')).toMatchObject({ view: 'audit', query: { q: 'job' } });
  });
});
