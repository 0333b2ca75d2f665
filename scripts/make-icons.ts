/**
 * Draws the app icon and writes every file the packagers need into assets/:
 * icon.svg (the design), icon.png (1024 px), icons/NxN.png (Linux), icon.ico
 * (Windows, PNG-compressed entries) and icon.icns (macOS, PNG entries).
 *
 * Pure Node (zlib only): the icon is defined by signed-distance shapes and
 * rasterized with 4×4 supersampling, so the assets can be regenerated on any
 * machine without ImageMagick or a browser. Run: `npm run icons`.
 *
 * The design: a teal rounded square; a white ring three quarters full (a
 * lease's time left) with a faint remainder; an amber dot in the middle (the
 * holder).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { deflateSync } from 'node:zlib';

const OUT = path.resolve(import.meta.dirname, '..', 'assets');
export const PNG_SIZES = [16, 24, 32, 48, 64, 128, 256, 512, 1024] as const;
const ICO_SIZES = [16, 24, 32, 48, 64, 128, 256] as const;
/** icns OSType per PNG size (retina variants reuse the larger bitmaps). */
const ICNS_TYPES: ReadonlyArray<[string, number]> = [
  ['icp4', 16],
  ['icp5', 32],
  ['icp6', 64],
  ['ic07', 128],
  ['ic08', 256],
  ['ic09', 512],
  ['ic10', 1024],
  ['ic11', 32],
  ['ic12', 64],
  ['ic13', 256],
  ['ic14', 512],
];

// Geometry in unit coordinates (0..1, y down).
const MARGIN = 0.04;
const CORNER = 0.22;
const RING_R = 0.285;
const RING_W = 0.09;
const DOT_R = 0.08;
const FULL_SWEEP = Math.PI * 1.5;
const TOP: Rgb = [20, 143, 133];
const BOTTOM: Rgb = [17, 78, 74];
const WHITE: Rgb = [255, 255, 255];
const AMBER: Rgb = [251, 191, 36];

type Rgb = [number, number, number];

function roundedRectDistance(x: number, y: number): number {
  const half = 0.5 - MARGIN;
  const qx = Math.abs(x - 0.5) - (half - CORNER);
  const qy = Math.abs(y - 0.5) - (half - CORNER);
  const outside = Math.hypot(Math.max(qx, 0), Math.max(qy, 0));
  return outside + Math.min(Math.max(qx, qy), 0) - CORNER;
}

/** Distance to the arc of radius RING_R swept clockwise from 12 o'clock by [from, to] radians. */
function arcDistance(x: number, y: number, from: number, to: number): number {
  const dx = x - 0.5;
  const dy = y - 0.5;
  let angle = Math.atan2(dx, -dy);
  if (angle < 0) angle += 2 * Math.PI;
  if (angle >= from && angle <= to) return Math.abs(Math.hypot(dx, dy) - RING_R);
  const end = (a: number): number => Math.hypot(dx - RING_R * Math.sin(a), dy + RING_R * Math.cos(a));
  return Math.min(end(from), end(to));
}

/** Straight-alpha RGBA pixels, `size`×`size`. */
export function renderIcon(size: number): Uint8Array {
  const px = new Uint8Array(size * size * 4);
  const n = 4;
  for (let py = 0; py < size; py++) {
    for (let pxx = 0; pxx < size; pxx++) {
      let r = 0;
      let g = 0;
      let b = 0;
      let a = 0;
      for (let sy = 0; sy < n; sy++) {
        for (let sx = 0; sx < n; sx++) {
          const x = (pxx + (sx + 0.5) / n) / size;
          const y = (py + (sy + 0.5) / n) / size;
          if (roundedRectDistance(x, y) > 0) continue;
          const t = (y - MARGIN) / (1 - 2 * MARGIN);
          let c: Rgb = [
            TOP[0] + (BOTTOM[0] - TOP[0]) * t,
            TOP[1] + (BOTTOM[1] - TOP[1]) * t,
            TOP[2] + (BOTTOM[2] - TOP[2]) * t,
          ];
          const mix = (over: Rgb, alpha: number): Rgb => [
            c[0] + (over[0] - c[0]) * alpha,
            c[1] + (over[1] - c[1]) * alpha,
            c[2] + (over[2] - c[2]) * alpha,
          ];
          if (arcDistance(x, y, FULL_SWEEP, 2 * Math.PI) <= RING_W / 2) c = mix(WHITE, 0.25);
          if (arcDistance(x, y, 0, FULL_SWEEP) <= RING_W / 2) c = WHITE;
          if (Math.hypot(x - 0.5, y - 0.5) <= DOT_R) c = AMBER;
          r += c[0];
          g += c[1];
          b += c[2];
          a += 1;
        }
      }
      const i = (py * size + pxx) * 4;
      if (a > 0) {
        px[i] = Math.round(r / a);
        px[i + 1] = Math.round(g / a);
        px[i + 2] = Math.round(b / a);
        px[i + 3] = Math.round((255 * a) / (n * n));
      }
    }
  }
  return px;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[i] = c >>> 0;
  }
  return table;
})();

function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of buf) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

export function encodePng(rgba: Uint8Array, size: number): Buffer {
  const raw = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) {
    raw[y * (size * 4 + 1)] = 0;
    Buffer.from(rgba.buffer, rgba.byteOffset + y * size * 4, size * 4).copy(raw, y * (size * 4 + 1) + 1);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw, { level: 9 })),
    chunk('IEND', new Uint8Array()),
  ]);
}

function encodeIco(pngs: ReadonlyArray<[number, Buffer]>): Buffer {
  const header = Buffer.alloc(6 + 16 * pngs.length);
  header.writeUInt16LE(0, 0);
  header.writeUInt16LE(1, 2); // type: icon
  header.writeUInt16LE(pngs.length, 4);
  let offset = header.length;
  pngs.forEach(([size, png], i) => {
    const e = 6 + 16 * i;
    header[e] = size >= 256 ? 0 : size; // 0 means 256
    header[e + 1] = size >= 256 ? 0 : size;
    header.writeUInt16LE(1, e + 4); // planes
    header.writeUInt16LE(32, e + 6); // bits per pixel
    header.writeUInt32LE(png.length, e + 8);
    header.writeUInt32LE(offset, e + 12);
    offset += png.length;
  });
  return Buffer.concat([header, ...pngs.map(([, png]) => png)]);
}

function encodeIcns(pngBySize: ReadonlyMap<number, Buffer>): Buffer {
  const parts = ICNS_TYPES.map(([type, size]) => {
    const png = pngBySize.get(size)!;
    const head = Buffer.alloc(8);
    head.write(type, 0, 'ascii');
    head.writeUInt32BE(png.length + 8, 4);
    return Buffer.concat([head, png]);
  });
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(8);
  head.write('icns', 0, 'ascii');
  head.writeUInt32BE(body.length + 8, 4);
  return Buffer.concat([head, body]);
}

export function iconSvg(): string {
  const s = 1024;
  const m = MARGIN * s;
  const w = s - 2 * m;
  const r = RING_R * s;
  const c = s / 2;
  const end = (a: number): string => `${c + r * Math.sin(a)} ${c - r * Math.cos(a)}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${s} ${s}" width="${s}" height="${s}" role="img">
  <title>worklease console</title>
  <defs>
    <linearGradient id="bg" x1="0" y1="0" x2="0" y2="1">
      <stop offset="0" stop-color="rgb(${TOP.join(',')})"/>
      <stop offset="1" stop-color="rgb(${BOTTOM.join(',')})"/>
    </linearGradient>
  </defs>
  <rect x="${m}" y="${m}" width="${w}" height="${w}" rx="${CORNER * s}" fill="url(#bg)"/>
  <path d="M ${end(FULL_SWEEP)} A ${r} ${r} 0 0 1 ${end(0)}" fill="none" stroke="#fff" stroke-opacity="0.25" stroke-width="${RING_W * s}" stroke-linecap="round"/>
  <path d="M ${end(0)} A ${r} ${r} 0 1 1 ${end(FULL_SWEEP)}" fill="none" stroke="#fff" stroke-width="${RING_W * s}" stroke-linecap="round"/>
  <circle cx="${c}" cy="${c}" r="${DOT_R * s}" fill="rgb(${AMBER.join(',')})"/>
</svg>
`;
}

function main(): void {
  mkdirSync(path.join(OUT, 'icons'), { recursive: true });
  const pngBySize = new Map<number, Buffer>();
  for (const size of PNG_SIZES) {
    const png = encodePng(renderIcon(size), size);
    pngBySize.set(size, png);
    writeFileSync(path.join(OUT, 'icons', `${size}x${size}.png`), png);
  }
  writeFileSync(path.join(OUT, 'icon.png'), pngBySize.get(1024)!);
  writeFileSync(path.join(OUT, 'icon.svg'), iconSvg());
  writeFileSync(path.join(OUT, 'icon.ico'), encodeIco(ICO_SIZES.map((s) => [s, pngBySize.get(s)!])));
  writeFileSync(path.join(OUT, 'icon.icns'), encodeIcns(pngBySize));
  console.info(`wrote icons to ${path.relative(process.cwd(), OUT) || '.'}`);
}

main();
