/**
 * How much guessing a token would take: an estimate from the patterns people
 * (and careless scripts) put in secrets, not from length and alphabet alone.
 *
 * The estimate is the length of the shortest description of the token in a
 * small pattern language, in bits (the idea behind zxcvbn, cut down to what
 * matters for machine tokens): a character drawn from the token's alphabet
 * costs log2(alphabet); a run with a constant step (`0123`, `fedc`, `aaaa`), a
 * repeat of text seen earlier in the token (`abcdabcd`), a common word
 * (`password`) or a stretch of a keyboard row (`qwerty`) of 4 characters or
 * more costs only what it takes to say which one. A random token has no such
 * shortcut worth its cost, so its estimate stays at its capacity; a made-up one
 * falls far below it (`0123456789abcdef` twice: 32 hex characters, 128 bits of
 * capacity, 22 bits estimated).
 */

/** What a token can carry, by the alphabet it was most likely drawn from, and the bits one character of it is worth. */
export interface Capacity {
  bits: number;
  bitsPerChar: number;
  alphabet: 'hex' | 'base64' | 'classes';
}

/**
 * The smallest standard alphabet that holds the token (hex, then base64 or base64url with
 * its `=` padding), else the character classes it uses. The standard alphabets come first
 * because a random token need not show every class of its own alphabet: one 22-character
 * base64url token in 96 has no digit and no `-` or `_`, and counting classes alone refused
 * it (52 letters: 125 bits).
 */
export function capacityOf(token: string): Capacity {
  if (/^[0-9a-fA-F]+$/.test(token)) return { bits: 4 * token.length, bitsPerChar: 4, alphabet: 'hex' };
  const unpadded = token.replace(/={1,2}$/, '');
  if (/^[A-Za-z0-9+/]+$/.test(unpadded) || /^[A-Za-z0-9_-]+$/.test(unpadded)) {
    return { bits: 6 * unpadded.length, bitsPerChar: 6, alphabet: 'base64' };
  }
  let pool = 0;
  if (/[a-z]/.test(token)) pool += 26;
  if (/[A-Z]/.test(token)) pool += 26;
  if (/[0-9]/.test(token)) pool += 10;
  if (/[^a-zA-Z0-9]/.test(token)) pool += 32;
  const bitsPerChar = Math.log2(pool);
  return { bits: token.length * bitsPerChar, bitsPerChar, alphabet: 'classes' };
}

/** Shorter patterns are left alone: in random text they are common enough to be chance. */
const MIN_PATTERN = 4;

/**
 * Words that turn up in hand-made secrets, lower case. Short on purpose: the point is
 * the common ones (a long list would only lower estimates of random tokens by chance).
 */
const WORDS = [
  'password',
  'passwd',
  'secret',
  'token',
  'admin',
  'administrator',
  'root',
  'letmein',
  'welcome',
  'changeme',
  'default',
  'login',
  'master',
  'test',
  'testing',
  'qwerty',
  'dragon',
  'monkey',
  'iloveyou',
  'trustno1',
  'worklease',
  'console',
  'prod',
  'production',
  'staging',
  'example',
  'hunter',
  'correct',
  'horse',
  'battery',
  'staple',
];
const KEYBOARD_ROWS = ['qwertyuiop', 'asdfghjkl', 'zxcvbnm', '1234567890', '!@#$%^&*()'];
/** Bits to name one word of the list, one stretch of a keyboard row (row, start, length). */
const WORD_BITS = Math.log2(WORDS.length) + 1;
const ROW_BITS = Math.log2(KEYBOARD_ROWS.length * 10 * 8);

/**
 * The estimated entropy of `token` in bits: the cheapest description in the pattern language
 * of the file comment, found by dynamic programming over positions (O(n²) for repeats; tokens
 * are at most a few hundred characters).
 */
export function estimateEntropyBits(text: string): number {
  const { bitsPerChar, alphabet } = capacityOf(text);
  // base64's `=` padding carries nothing.
  const token = alphabet === 'base64' ? text.replace(/={1,2}$/, '') : text;
  const n = token.length;
  const lower = token.toLowerCase();
  const best = new Array<number>(n + 1).fill(Number.POSITIVE_INFINITY);
  best[0] = 0;
  for (let i = 0; i < n; i++) {
    const here = best[i]!;
    if (here === Number.POSITIVE_INFINITY) continue;
    const relax = (end: number, cost: number): void => {
      if (here + cost < best[end]!) best[end] = here + cost;
    };
    relax(i + 1, bitsPerChar);
    // A run with a constant step: aaaa, 0123, 9876, acegi. First character, step (-2..2), length.
    for (let j = i + 1, step = lower.charCodeAt(i + 1) - lower.charCodeAt(i); j < n; j++) {
      if (Math.abs(step) > 2 || lower.charCodeAt(j) - lower.charCodeAt(j - 1) !== step) break;
      const len = j - i + 1;
      if (len >= MIN_PATTERN) relax(j + 1, bitsPerChar + Math.log2(5) + Math.log2(len));
    }
    // A repeat of earlier text (may overlap, as in abababab): where it starts, how long.
    for (let from = 0; from < i; from++) {
      let len = 0;
      while (i + len < n && token[from + len] === token[i + len]) len++;
      for (let l = MIN_PATTERN; l <= len; l++) relax(i + l, Math.log2(i) + Math.log2(l) + 1);
    }
    for (const word of WORDS) {
      if (word.length >= MIN_PATTERN && lower.startsWith(word, i)) relax(i + word.length, WORD_BITS);
    }
    for (const row of KEYBOARD_ROWS) {
      for (let len = MIN_PATTERN; i + len <= n; len++) {
        const part = lower.slice(i, i + len);
        if (!row.includes(part) && !row.includes([...part].reverse().join(''))) break;
        relax(i + len, ROW_BITS);
      }
    }
  }
  return best[n]!;
}
