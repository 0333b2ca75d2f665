/**
 * A pending release request on the open lease: who asked, why and how long ago (by the backend's
 * clock), and, once it is older than the escalation deadline (Settings), the offer to escalate to
 * a force-release. Before the deadline it says when the offer comes.
 */
import type { ReleaseRequestWire } from '../../../src/console/common/index.ts';
import { visible } from '../../../src/console/common/index.ts';
import { formatAgo, formatDuration, formatTime } from '../../lib/format.ts';
import { escalation, useEscalateAfterMs } from './deadline.ts';

export function ReleaseRequestNote({
  request,
  serverNow,
  forceOff,
  onEscalate,
}: {
  request: ReleaseRequestWire;
  /** The backend's now (frozen while the connection is stale). */
  serverNow: number;
  /** Why force release is not offered on this lease, or null when it is. */
  forceOff: string | null;
  onEscalate: (ageMs: number) => void;
}) {
  const deadlineMs = useEscalateAfterMs();
  const e = escalation(request, serverNow, deadlineMs);
  return (
    <section className="release-request" aria-label="Release request">
      <p>
        <strong>Release requested</strong>{' '}
        <time
          dateTime={new Date(request.at).toISOString()}
          title={`${formatTime(request.at, 'local')} · ${formatTime(request.at, 'utc')}`}
        >
          {formatAgo(e.ageMs)}
        </time>{' '}
        by <span className="mono">{visible(request.operator)}</span>: {visible(request.reason)}
      </p>
      {!e.due ? (
        <p className="muted">
          Waiting for the holder to hand over. Escalation to force release is offered in{' '}
          {formatDuration(e.inMs)} (deadline {formatDuration(deadlineMs)}, set in Settings).
        </p>
      ) : forceOff === null ? (
        <p>
          No handoff after {formatDuration(deadlineMs)}.{' '}
          <button type="button" className="danger" onClick={() => onEscalate(e.ageMs)}>
            Escalate to force release
          </button>
        </p>
      ) : (
        <p className="muted">
          No handoff after {formatDuration(deadlineMs)}; force release is not offered: {forceOff}
        </p>
      )}
    </section>
  );
}
