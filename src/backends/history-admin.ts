/**
 * The argument checks of the history and hold calls (docs/history.md), run before any I/O like the
 * rest of {@link createBackend}'s (common.ts): admin.history, hold, unhold, handoffCheckpoint and
 * prune's history retention.
 */
import { InvalidArgumentError } from '../lease/errors.ts';
import {
  DEFAULT_HISTORY_KEEP_PER_ITEM,
  DEFAULT_HISTORY_MAX_AGE_MS,
  type HistoryRetention,
} from '../lease/history-types.ts';
import type { HistoryOptions, HoldOptions, LeaseAdmin, ReadStateOptions } from '../lease/types.ts';
import {
  checkId,
  checkInt,
  checkOperator,
  checkOptions,
  checkText,
  MAX_MAX_STATE_BYTES,
} from '../lease/validate.ts';
import type { HistoryPruning, LeaseDriver } from './common.ts';

/** The longest hold / unhold reason, as for force-release and request-release. */
export const MAX_REASON_LENGTH = 2000;

/** A history entry id as every backend writes them (SQL: decimal; Redis: a stream id). */
const ENTRY_ID = /^[0-9A-Za-z:_-]{1,64}$/;

/** The retention prune applies, defaults filled in. */
export function checkHistoryRetention(value: unknown): HistoryPruning {
  const o = checkOptions<HistoryRetention>('options.history', value, ['olderThanMs', 'keepPerItem']);
  return {
    olderThanMs: checkInt(
      'options.history.olderThanMs',
      o.olderThanMs,
      0,
      Number.MAX_SAFE_INTEGER,
      DEFAULT_HISTORY_MAX_AGE_MS,
    ),
    keepPerItem: checkInt(
      'options.history.keepPerItem',
      o.keepPerItem,
      1,
      1_000_000,
      DEFAULT_HISTORY_KEEP_PER_ITEM,
    ),
  };
}

function checkHold(workId: unknown, options: unknown): { operator: string; reason: string } {
  checkId('workId', workId);
  if (options === undefined) throw new InvalidArgumentError('options with operator and reason are required');
  const o = checkOptions<HoldOptions>('options', options, ['operator', 'reason']);
  const operator = checkOperator('options.operator', o.operator);
  const reason = checkText('options.reason', o.reason, MAX_REASON_LENGTH);
  return { operator, reason };
}

type HistoryAdmin = Pick<LeaseAdmin, 'history' | 'hold' | 'unhold' | 'handoffCheckpoint'>;

/** The admin calls of a work item's history and holds, checked, on `driver`; `open` throws once closed. */
export function historyAdmin(driver: LeaseDriver, open: () => void): HistoryAdmin {
  return {
    async history(workId, options: HistoryOptions = {}) {
      checkId('workId', workId);
      const o = checkOptions<HistoryOptions>('options', options, ['limit', 'before']);
      const limit = checkInt('options.limit', o.limit, 1, 1000, 100);
      if (o.before !== undefined && (typeof o.before !== 'string' || !ENTRY_ID.test(o.before))) {
        throw new InvalidArgumentError(
          'options.before must be the id of a history entry (from a previous page)',
        );
      }
      open();
      return driver.history(workId, o.before ?? null, limit);
    },
    async hold(workId, options) {
      const { operator, reason } = checkHold(workId, options);
      open();
      return driver.hold(workId, operator, reason);
    },
    async unhold(workId, options) {
      const { operator, reason } = checkHold(workId, options);
      open();
      return driver.unhold(workId, operator, reason);
    },
    async handoffCheckpoint(workId, options: ReadStateOptions = {}) {
      checkId('workId', workId);
      const o = checkOptions<ReadStateOptions>('options', options, ['offset', 'length']);
      const offset = checkInt('options.offset', o.offset, 0, MAX_MAX_STATE_BYTES, 0);
      const length = checkInt('options.length', o.length, 1, 1024 * 1024, 65_536);
      open();
      return driver.handoffCheckpoint(workId, offset, length);
    },
  };
}
