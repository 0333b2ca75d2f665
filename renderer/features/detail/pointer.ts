/**
 * Paths of nodes in a decoded checkpoint, as RFC 6901 JSON Pointers (`/orders/3/sku`; `~1` is a
 * `/` inside a key, `~0` a `~`): what the page's address holds (`?cp=`) and what "Copy path"
 * copies. The server takes the same path as a list of keys.
 */

export function toPointer(path: readonly string[]): string {
  return path.map((k) => `/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/** The keys of a pointer; null for text that is not one (it must be empty or start with `/`). */
export function fromPointer(pointer: string): string[] | null {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return null;
  const keys: string[] = [];
  for (const raw of pointer.slice(1).split('/')) {
    // `~` must be followed by 0 or 1.
    if (/~(?![01])/.test(raw)) return null;
    keys.push(raw.replaceAll('~1', '/').replaceAll('~0', '~'));
  }
  return keys;
}

/** The pointer of a node's child. */
export function childPointer(parent: string, key: string): string {
  return `${parent}${toPointer([key])}`;
}
