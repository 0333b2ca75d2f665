import { describe, expect, it } from 'vitest';
import { childPointer, fromPointer, toPointer } from '../../renderer/features/detail/pointer.ts';

describe('JSON Pointers of decoded nodes', () => {
  it('round-trips keys with slashes, tildes and the empty key', () => {
    const path = ['a/b', '~x', '', '0', 'üñí'];
    expect(toPointer(path)).toBe('/a~1b/~0x//0/üñí');
    expect(fromPointer(toPointer(path))).toEqual(path);
    expect(toPointer([])).toBe('');
    expect(fromPointer('')).toEqual([]);
    expect(childPointer('/a', 'b/c')).toBe('/a/b~1c');
  });

  it('refuses text that is not a pointer', () => {
    expect(fromPointer('orders/1')).toBeNull();
    expect(fromPointer('/a~2b')).toBeNull();
    expect(fromPointer('/a~')).toBeNull();
  });
});
