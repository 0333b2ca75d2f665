/**
 * Which rows of a fixed-height table are on screen, in O(1): no per-row measurement. A general
 * virtualizer (@tanstack/react-virtual) keeps one measured entry per row and rebuilds them when
 * the count changes: at 1 000 000 rows that is a million objects per change of the total (the
 * page took 6 s to show its first rows and had 1.5 s long tasks while leases came and went).
 *
 * Browsers cap an element's height (Chromium about 33.5 million px, Firefox about 17.9 million):
 * past {@link MAX_SCROLL_PX} the scroll range is compressed, a scroll position maps to a row in
 * proportion, and rows are still drawn at their own height.
 */
export const MAX_SCROLL_PX = 15_000_000;

export interface RowWindow {
  /** Rows [first, last) are drawn. */
  first: number;
  last: number;
  /** Space above the first drawn row, px (in the element's own, possibly compressed, space). */
  padTop: number;
  /** The rows' element height, px. */
  height: number;
}

function geometry(count: number, rowH: number, viewH: number) {
  const full = count * rowH;
  const height = Math.min(full, MAX_SCROLL_PX);
  // How many px of rows one px of scrolling moves past (1 unless compressed).
  const ratio = full > height && height > viewH ? (full - viewH) / (height - viewH) : 1;
  return { height, ratio };
}

export function rowWindow(
  count: number,
  rowH: number,
  scrollTop: number,
  viewH: number,
  overscan: number,
): RowWindow {
  if (count <= 0) return { first: 0, last: 0, padTop: 0, height: 0 };
  const { height, ratio } = geometry(count, rowH, viewH);
  const top = Math.max(0, Math.min(scrollTop, height - viewH));
  const virtualTop = top * ratio;
  const first = Math.max(0, Math.min(count - 1, Math.floor(virtualTop / rowH) - overscan));
  const last = Math.min(count, Math.ceil((virtualTop + viewH) / rowH) + overscan);
  const padTop = ratio === 1 ? first * rowH : Math.max(0, top - (virtualTop - first * rowH));
  return { first, last, padTop, height };
}

/** The scroll position that brings row `index` into view (the nearest edge), or null when it is in view. */
export function scrollTopFor(
  index: number,
  count: number,
  rowH: number,
  scrollTop: number,
  viewH: number,
): number | null {
  const { height, ratio } = geometry(count, rowH, viewH);
  const virtualTop = Math.max(0, Math.min(scrollTop, height - viewH)) * ratio;
  const rowTop = index * rowH;
  if (rowTop < virtualTop) return rowTop / ratio;
  if (rowTop + rowH > virtualTop + viewH) return (rowTop + rowH - viewH) / ratio;
  return null;
}
