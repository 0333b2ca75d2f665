/**
 * The fleet's filters and sort as query values of the address (see
 * app/routes.ts): `q`, `holder`, `prefix`, `status` (comma-separated) and
 * `sort` / `dir`. Values that are not a known status or sort key are ignored,
 * so a hand-edited link shows the fleet rather than an error.
 */
import type { LeaseStatus } from '../../../src/console/common/index.ts';
import { LEASE_STATUSES } from '../../../src/console/common/index.ts';
import { type FleetFilter, SORT_KEYS, type Sort, type SortKey } from './model.ts';

export const DEFAULT_SORT: Sort = { key: 'workId', dir: 'asc' };

export function filterFromQuery(query: Readonly<Record<string, string>>): FleetFilter {
  const statuses = new Set<LeaseStatus>();
  for (const s of (query.status ?? '').split(',')) {
    if ((LEASE_STATUSES as readonly string[]).includes(s)) statuses.add(s as LeaseStatus);
  }
  return {
    search: query.q ?? '',
    holder: query.holder ?? '',
    workIdPrefix: query.prefix ?? '',
    statuses,
  };
}

export function sortFromQuery(query: Readonly<Record<string, string>>): Sort {
  const key = query.sort;
  if (key === undefined || !(SORT_KEYS as readonly string[]).includes(key)) {
    return query.dir === 'desc' ? { ...DEFAULT_SORT, dir: 'desc' } : DEFAULT_SORT;
  }
  return { key: key as SortKey, dir: query.dir === 'desc' ? 'desc' : 'asc' };
}

/** The query values of a filter and sort (undefined: the default, left out of the address). */
export function fleetQuery(filter: FleetFilter, sort: Sort): Record<string, string | undefined> {
  return {
    q: filter.search,
    holder: filter.holder,
    prefix: filter.workIdPrefix,
    status: LEASE_STATUSES.filter((s) => filter.statuses.has(s)).join(','),
    sort: sort.key === DEFAULT_SORT.key ? undefined : sort.key,
    dir: sort.dir === 'asc' ? undefined : sort.dir,
  };
}
