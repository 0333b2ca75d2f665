/**
 * Export of the fleet and the audit log: the CSV/JSON encoding (RFC 4180 quoting, formula
 * neutralising, `visible()` escaping) and `fleet.export` / `audit.export` through the service
 * (paged over one snapshot, filtered like the fleet view, viewer role enough, bad input refused).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/console/access.ts';
import {
  AUDIT_COLUMNS,
  assembleExport,
  type ConsoleService,
  createConsoleService,
  csvField,
  dispatch,
  FLEET_COLUMNS,
  methods,
  type Result,
} from '../../src/console/index.ts';
import { type LeaseBackend, openBackend } from '../../src/index.ts';
import { sharedOpener, until } from './helpers.ts';

describe('CSV and JSON encoding', () => {
  it('quotes commas, quotes and line breaks, and neutralises formulas', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField(null)).toBe('');
    expect(csvField(42)).toBe('42');
    for (const lead of ['=', '+', '-', '@']) expect(csvField(`${lead}1+1`)).toBe(`'${lead}1+1`);
    expect(csvField('=HYPERLINK("x")')).toBe(`"'=HYPERLINK(""x"")"`);
    // Control and bidi characters are shown as escapes, as on the page: no raw line break survives.
    expect(csvField('a\nb')).toBe('a\\u000Ab');
    expect(csvField('evil\u202Egnp.exe')).toBe('evil\\u202Egnp.exe');
    // A leading tab is escaped by visible() first, so it cannot start a formula either.
    expect(csvField('\tcmd')).toBe('\\u0009cmd');
  });

  it('quotes and neutralises per OWASP for both delimiters: a spreadsheet splitting on , or ; starts no formula', () => {
    // Split on `;` (European locales), the unquoted field became `x` and `=cmd|' /C calc'!A0`.
    expect(csvField("x;=cmd|' /C calc'!A0")).toBe(`"x;=cmd|' /C calc'!A0"`);
    expect(csvField('a;b')).toBe('"a;b"');
    expect(csvField('x,=1+1')).toBe('"x,=1+1"');
    for (const lead of ['=', '+', '-', '@']) {
      expect(csvField(`${lead}SUM(A1);1`)).toBe(`"'${lead}SUM(A1);1"`);
    }
    // Every field that could be split by either delimiter is one field for a reader of either.
    for (const value of ['a;=1', 'a,=1', 'a";=1', '=a;b,c']) {
      const field = csvField(value);
      expect(field.startsWith('"') && field.endsWith('"'), value).toBe(true);
      const inner = field.slice(1, -1);
      expect(inner.replaceAll('""', ''), value).not.toContain('"');
    }
  });

  it('assembles a CSV with a header and CRLF, and one JSON array that parses to the stored values', () => {
    expect(assembleExport('csv', ['a', 'b'], ['1,2', '3,4'])).toBe('a,b\r\n1,2\r\n3,4\r\n');
    expect(assembleExport('json', [], [])).toBe('[]\n');
    expect(JSON.parse(assembleExport('json', [], ['{"a":1}', '{"a":"x\\u202Ey"}']))).toEqual([
      { a: 1 },
      { a: 'x\u202Ey' },
    ]);
  });
});

describe('fleet.export and audit.export', () => {
  let backend: LeaseBackend;
  let service: ConsoleService;
  let id: string;
  const viewer: Caller = { user: 'vera', via: 'token', roles: { '*': 'viewer' } };

  beforeAll(async () => {
    backend = await openBackend('pglite://memory');
    service = createConsoleService({
      openBackend: sharedOpener(backend),
      connections: [{ name: 'main', url: 'pglite://memory' }],
      feed: { pollMaxMs: 100 },
      shared: {},
    });
    id = service.connections()[0]!.id;
    for (let i = 0; i < 25; i++)
      await backend.acquire(`exp-${String(i).padStart(2, '0')}`, `h-${i % 3}`, 60_000);
    const rec = await backend.acquire('=cmd|evil,"x"', 'h-0', 60_000);
    await backend.admin.forceRelease(rec.workId, {
      expectedToken: rec.fencingToken,
      operator: 'olga',
      reason: 'line one\nline two, "quoted"',
      batchId: 'b_test',
    });
    await service.waitLive(id);
    // Every row, and the force-release applied (the service may have taken its snapshot before it).
    await until(
      'the model has every row and the force-release',
      () =>
        (service.model(id)?.size ?? 0) >= 26 &&
        service.model(id)?.get('=cmd|evil,"x"')?.ended === 'force-released',
    );
  });
  afterAll(async () => {
    await service?.close();
    await backend?.close();
  });

  it('pages through one snapshot with the filter, a viewer may do it, and the pages make one file', async () => {
    const records: string[] = [];
    let offset: number | null = 0;
    let seq: number | undefined;
    let statusAt: number | undefined;
    let pages = 0;
    while (offset !== null) {
      const page: Result<'fleet.export'> = await service.handle(
        'fleet.export',
        methods['fleet.export'].params.parse({
          connectionId: id,
          format: 'json',
          filter: { holder: 'h-0', statuses: ['live'] },
          offset,
          limit: 7,
          seq,
          statusAt,
        }),
        viewer,
      );
      methods['fleet.export'].result.parse(page);
      expect(page.total).toBe(26);
      seq = page.seq;
      statusAt = page.statusAt;
      records.push(...page.records);
      offset = page.nextOffset;
      pages++;
    }
    expect(pages).toBe(4);
    const rows = JSON.parse(assembleExport('json', FLEET_COLUMNS, records)) as Array<Record<string, unknown>>;
    // h-0 holds exp-00, 03, …, 24 (9 live ones); the force-released '=cmd…' row is filtered out by status.
    expect(rows.map((r) => r.workId)).toEqual(
      Array.from({ length: 9 }, (_, i) => `exp-${String(i * 3).padStart(2, '0')}`),
    );
    expect(rows[0]).toMatchObject({ connection: 'main', status: 'live', holderId: 'h-0', ended: null });
    expect(Object.keys(rows[0]!)).toEqual([...FLEET_COLUMNS]);
  });

  it('CSV: the dangerous work id is quoted and neutralised, one line per record', async () => {
    const page = await service.handle(
      'fleet.export',
      methods['fleet.export'].params.parse({ connectionId: id, format: 'csv', filter: { search: 'cmd' } }),
      viewer,
    );
    expect(page.records).toHaveLength(1);
    expect(page.records[0]).toMatch(/^main,"'=cmd\|evil,""x""",force-released,h-0,\d+,/);
    const file = assembleExport('csv', FLEET_COLUMNS, page.records);
    expect(file.split('\r\n')).toHaveLength(3);
  });

  it('exports the audit with its batch id, filtered like the audit view', async () => {
    const out = await service.handle(
      'audit.export',
      methods['audit.export'].params.parse({ connectionId: id, format: 'csv', search: 'OLGA' }),
      viewer,
    );
    expect(out.records).toHaveLength(1);
    const file = assembleExport('csv', AUDIT_COLUMNS, out.records);
    expect(file.split('\r\n')[0]).toBe(AUDIT_COLUMNS.join(','));
    expect(out.records[0]).toContain('"line one\\u000Aline two, ""quoted"""');
    expect(out.records[0]).toContain(',b_test,');
    const byBatch = await service.handle(
      'audit.export',
      methods['audit.export'].params.parse({ connectionId: id, format: 'json', search: 'B_TEST' }),
      viewer,
    );
    expect(byBatch.records.map((r) => JSON.parse(r).batchId)).toEqual(['b_test']);
    const json = await service.handle(
      'audit.export',
      methods['audit.export'].params.parse({ connectionId: id, format: 'json', search: 'nobody' }),
      viewer,
    );
    expect(json.records).toEqual([]);
  });

  it('refuses bad params before any read, and connections the caller cannot see', async () => {
    for (const params of [
      { connectionId: id, format: 'xml' },
      { connectionId: id, format: 'csv', limit: 0 },
      { connectionId: id, format: 'csv', limit: 5001 },
      { connectionId: id, format: 'csv', filter: { statuses: ['gone'] } },
      { connectionId: id, format: 'csv', filter: { other: 1 } },
    ]) {
      const out = await dispatch(service, 'fleet.export', params, viewer);
      expect(out.ok ? 'ok' : out.error.code, JSON.stringify(params)).toBe('INVALID_ARGUMENT');
    }
    const audit = await dispatch(
      service,
      'audit.export',
      { connectionId: id, format: 'csv', limit: 1001 },
      viewer,
    );
    expect(audit.ok ? 'ok' : audit.error.code).toBe('INVALID_ARGUMENT');
    const nobody: Caller = { user: 'x', via: 'token', roles: { other: 'admin' } };
    const hidden = await dispatch(service, 'fleet.export', { connectionId: id, format: 'csv' }, nobody);
    expect(hidden.ok ? 'ok' : hidden.error.code).toBe('NOT_FOUND');
  });
});
