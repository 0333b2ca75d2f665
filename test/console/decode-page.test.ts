import { describe, expect, it } from 'vitest';
import { decodeCheckpoint, hexDump } from '../../src/console/decode/page.ts';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('decodeCheckpoint', () => {
  it('shows nothing for an empty page', () => {
    expect(decodeCheckpoint(new Uint8Array(0), null, 0)).toEqual({ kind: 'empty', text: '' });
    expect(decodeCheckpoint(new Uint8Array(0), 0, 0)).toEqual({ kind: 'empty', text: '' });
    expect(decodeCheckpoint(new Uint8Array(0), 10, 10).kind).toBe('empty');
  });

  it('pretty-prints JSON when the page holds the whole payload', () => {
    const bytes = utf8('{"processed":3,"cursor":"c-9","lastBatch":[1,2]}');
    const d = decodeCheckpoint(bytes, bytes.length, 0);
    expect(d.kind).toBe('json');
    expect(d.json).toEqual({ processed: 3, cursor: 'c-9', lastBatch: [1, 2] });
    expect(d.text).toBe(JSON.stringify({ processed: 3, cursor: 'c-9', lastBatch: [1, 2] }, null, 2));
  });

  it('does not parse JSON from part of a payload', () => {
    const bytes = utf8('{"a":1}');
    const d = decodeCheckpoint(bytes, bytes.length + 10, 0);
    expect(d.kind).toBe('text');
    expect(d.text).toBe('{"a":1}');
    expect(d.json).toBeUndefined();
  });

  it('shows UTF-8 text as text, with control characters made visible', () => {
    const bytes = utf8('processed=42 ✓ naïve\nnext line\twith tab');
    const d = decodeCheckpoint(bytes, bytes.length, 0);
    expect(d).toEqual({ kind: 'text', text: 'processed=42 ✓ naïve\nnext line\twith tab' });
    const esc = utf8(`${'x'.repeat(40)}\u001b[31mred`);
    expect(decodeCheckpoint(esc, esc.length, 0)).toEqual({
      kind: 'text',
      text: `${'x'.repeat(40)}\u241b[31mred`,
    });
  });

  it('dumps binary as hex with offsets and an ASCII column', () => {
    const bytes = new Uint8Array([0x57, 0x4c, 0x44, 0x4d, 0x00, 0x01, 0xff, 0xfe, ...utf8('abcdefghij')]);
    const d = decodeCheckpoint(bytes, bytes.length, 0);
    expect(d.kind).toBe('hex');
    expect(d.text.split('\n')).toEqual([
      '00000000  57 4c 44 4d 00 01 ff fe  61 62 63 64 65 66 67 68  |WLDM....abcdefgh|',
      '00000010  69 6a                                             |ij|',
    ]);
  });

  it('falls back to hex for invalid UTF-8 and for NUL-laden or control-heavy text', () => {
    expect(decodeCheckpoint(new Uint8Array([0xc3, 0x28, 0x41]), 3, 0).kind).toBe('hex');
    expect(decodeCheckpoint(new Uint8Array([0xed, 0xa0, 0x80]), 3, 0).kind).toBe('hex'); // surrogate
    expect(decodeCheckpoint(utf8('abc\u0000def'), 7, 0).kind).toBe('hex');
    expect(decodeCheckpoint(utf8('\u0001\u0002\u0003abc'), 6, 0).kind).toBe('hex');
  });

  it('numbers a page in the middle from its offset and trims cut characters', () => {
    const bytes = new Uint8Array(40).map((_, i) => (i * 37) & 0xff);
    const d = decodeCheckpoint(bytes, 1000, 0x1230);
    expect(d.kind).toBe('hex');
    const lines = d.text.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^00001230 {2}00 25 4a 6f/);
    expect(lines[1]).toMatch(/^00001240 {2}/);
    expect(lines[2]).toMatch(/^00001250 {2}/);

    // "é" is c3 a9: a page starting on a9 and ending on c3 still reads as text.
    const whole = utf8('éabcdé');
    const middle = whole.subarray(1, whole.length - 1);
    expect(decodeCheckpoint(middle, whole.length, 1)).toEqual({ kind: 'text', text: 'abcd' });
  });

  it('never throws on any bytes', () => {
    let seed = 7;
    for (let n = 0; n < 300; n++) {
      const len = n % 70;
      const bytes = new Uint8Array(len).map(() => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        return seed & 0xff;
      });
      for (const [size, off] of [
        [len, 0],
        [null, 0],
        [len + 5, 5],
        [0, -3],
      ] as const) {
        const d = decodeCheckpoint(bytes, size, off);
        expect(['empty', 'json', 'text', 'hex']).toContain(d.kind);
        expect(typeof d.text).toBe('string');
      }
    }
  });

  it('hexDump of nothing is empty', () => {
    expect(hexDump(new Uint8Array(0))).toBe('');
  });
});
