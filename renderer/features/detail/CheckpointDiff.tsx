/**
 * Two decoded checkpoints side by side as a list of changes (diff.ts): added, removed and changed
 * values by path. Takes the two payloads; the detail pane shows it once the backends keep the
 * checkpoint saved at each handoff.
 */
import { visible } from '../../../src/console/common/index.ts';
import { diffValues } from './diff.ts';

export function CheckpointDiff({
  before,
  after,
  beforeLabel,
  afterLabel,
}: {
  before: unknown;
  after: unknown;
  /** "token 41, at the handoff" */
  beforeLabel: string;
  afterLabel: string;
}) {
  const { changes, truncated } = diffValues(before, after);
  if (changes.length === 0)
    return (
      <p className="muted">
        No change between {beforeLabel} and {afterLabel}.
      </p>
    );
  return (
    <table className="cdiff">
      <caption>
        {changes.length}
        {truncated ? '+' : ''} {changes.length === 1 ? 'change' : 'changes'} from {beforeLabel} to{' '}
        {afterLabel}
      </caption>
      <thead>
        <tr>
          <th scope="col" className="cdiff-c">
            Path
          </th>
          <th scope="col" className="cdiff-c">
            Change
          </th>
          <th scope="col" className="cdiff-c">
            {beforeLabel}
          </th>
          <th scope="col" className="cdiff-c">
            {afterLabel}
          </th>
        </tr>
      </thead>
      <tbody>
        {changes.map((c) => (
          <tr key={`${c.kind}${c.path}`} className={`cdiff-${c.kind}`}>
            <td className="cdiff-c mono">{visible(c.path === '' ? '/' : c.path)}</td>
            <td className="cdiff-c cdiff-kind">{c.kind}</td>
            <td className="cdiff-c mono">{c.before === undefined ? '—' : visible(c.before)}</td>
            <td className="cdiff-c mono">{c.after === undefined ? '—' : visible(c.after)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
