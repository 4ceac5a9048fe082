#!/usr/bin/env node
// Generates the RFC 8785 test vectors in tests/data/json with node's own ECMAScript semantics.
//
//   node tools/gen/gen_json_vectors.js
//
// Writes numbers.txt ("<16 hex digits of the IEEE-754 bits> <String(x)>" per line) and pairs
// NAME.in.json / NAME.out.json (input text / expected canonical bytes, no trailing newline).
// Deterministic: the random doubles come from a fixed-seed splitmix64.
'use strict';

const fs = require('fs');
const path = require('path');
const assert = require('assert');

const out_dir = path.join(__dirname, '..', '..', 'tests', 'data', 'json');
fs.mkdirSync(out_dir, { recursive: true });

// ---- reference canonicaliser (RFC 8785 section 3.2 / Appendix A) -------------------------
function canonicalize(v) {
  if (v === null || typeof v !== 'object') {
    if (typeof v === 'number' && !Number.isFinite(v)) throw new Error('non-finite number');
    return JSON.stringify(v); // minimal escapes, Number::toString for numbers
  }
  if (Array.isArray(v)) return '[' + v.map(canonicalize).join(',') + ']';
  // Default sort compares UTF-16 code units; never rely on JS object key order (integer-like
  // keys come first there).
  const keys = Object.keys(v).sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalize(v[k])).join(',') + '}';
}

// ---- IEEE-754 helpers -----------------------------------------------------------------
const view = new DataView(new ArrayBuffer(8));
function bits_of(x) {
  view.setFloat64(0, x);
  return view.getBigUint64(0);
}
function double_of(bits) {
  view.setBigUint64(0, BigInt.asUintN(64, bits));
  return view.getFloat64(0);
}
const hex16 = (b) => b.toString(16).padStart(16, '0');
const is_finite_bits = (b) => ((b >> 52n) & 0x7ffn) !== 0x7ffn;

// splitmix64, fixed seed
let sm_state = 0x5eed2024c0ffee11n;
function next_u64() {
  sm_state = BigInt.asUintN(64, sm_state + 0x9e3779b97f4a7c15n);
  let z = sm_state;
  z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
  z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
  return z ^ (z >> 31n);
}

// ---- numbers.txt --------------------------------------------------------------------------
const number_bits = [];
const seen = new Set();
function add_bits(b) {
  b = BigInt.asUintN(64, b);
  if (!is_finite_bits(b) || seen.has(b)) return;
  seen.add(b);
  number_bits.push(b);
}
const add = (x) => add_bits(bits_of(x));
const add_neighbours = (x) => {
  const b = bits_of(x);
  for (const d of [-2n, -1n, 0n, 1n, 2n]) add_bits(b + d);
};

// RFC 8785 Appendix B (the NaN and Infinity rows are tested as errors in the C++ test).
const appendix_b = [
  ['0000000000000000', '0'],
  ['8000000000000000', '0'],
  ['0000000000000001', '5e-324'],
  ['8000000000000001', '-5e-324'],
  ['7fefffffffffffff', '1.7976931348623157e+308'],
  ['ffefffffffffffff', '-1.7976931348623157e+308'],
  ['4340000000000000', '9007199254740992'],
  ['c340000000000000', '-9007199254740992'],
  ['4430000000000000', '295147905179352830000'],
  ['44b52d02c7e14af5', '9.999999999999997e+22'],
  ['44b52d02c7e14af6', '1e+23'],
  ['44b52d02c7e14af7', '1.0000000000000001e+23'],
  ['444b1ae4d6e2ef4e', '999999999999999700000'],
  ['444b1ae4d6e2ef4f', '999999999999999900000'],
  ['444b1ae4d6e2ef50', '1e+21'],
  ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
  ['3eb0c6f7a0b5ed8d', '0.000001'],
  ['41b3de4355555553', '333333333.3333332'],
  ['41b3de4355555554', '333333333.33333325'],
  ['41b3de4355555555', '333333333.3333333'],
  ['41b3de4355555556', '333333333.3333334'],
  ['41b3de4355555557', '333333333.33333343'],
  ['becbf647612f3696', '-0.0000033333333333333333'],
  ['43143ff3c1cb0959', '1424953923781206.2'],
];
for (const [h, expected] of appendix_b) {
  const b = BigInt('0x' + h);
  assert.strictEqual(String(double_of(b)), expected, 'Appendix B row ' + h);
  add_bits(b);
}

// Zeros, denormals, normal boundaries, the largest double.
for (const b of [0n, 1n, 2n, 3n, 0x000fffffffffffffn, 0x0010000000000000n, 0x7fefffffffffffffn,
                 0x7feffffffffffffen, 0x0008000000000000n]) {
  add_bits(b);
  add_bits(b | (1n << 63n));
}
// Every power of ten the doubles reach, and a few negated.
for (let e = -323; e <= 308; ++e) add(Number('1e' + e));
for (let e = -30; e <= 30; e += 3) add(-Number('1e' + e));
// Where the layout changes (n = 21 / 22, n = -5 / -6) and neighbours.
for (const x of [1e21, 1e20, 1e22, 1e-6, 1e-7, 1e-5, 123456789012345680000, 1.5e21, 0.0000015,
                 0.00000015, 9.5e20, 1e15, 1e16, 1e17]) add_neighbours(x);
// Integers near 2^53, 2^63, 2^64.
for (let d = -4; d <= 4; ++d) add(2 ** 53 + d);
for (const x of [2 ** 53, 2 ** 63, 2 ** 64, 2 ** 31, 2 ** 32, -(2 ** 53), -(2 ** 63)])
  add_neighbours(x);
// Everyday values and the examples of the task.
for (const x of [0.1, 0.2, 0.1 + 0.2, 1 / 3, 2 / 3, Math.PI, Math.E, 123e-20, 56, 4.5, 0.002,
                 1e-27, 333333333.33333329, 1e30, 0.000001, 1, -1, 10, 100, 0.5, 1.25, 1e-10,
                 5e-324, 1.7976931348623157e308, 9007199254740993, -0.000001, 1234.5678])
  add(x);
// Random bit patterns over the whole range...
let uniform = 0;
while (uniform < 250) {
  const b = next_u64();
  if (!is_finite_bits(b)) continue;
  add_bits(b);
  ++uniform;
}
// ...and random doubles with exponents near 1 (where the layout has its fixed-point forms).
for (let i = 0; i < 150; ++i) {
  const r = next_u64();
  const exponent = 1023n - 30n + (r % 110n); // about 1e-9 .. 1e24
  const mantissa = next_u64() & 0x000fffffffffffffn;
  const sign = (r >> 63n) << 63n;
  add_bits(sign | (exponent << 52n) | mantissa);
}
// ...and random integers that fit in a double exactly.
for (let i = 0; i < 30; ++i) add(Number(next_u64() % (1n << 53n)));

assert(number_bits.length >= 300, 'need at least 300 numbers');
const lines = number_bits.map((b) => hex16(b) + ' ' + String(double_of(b)));
fs.writeFileSync(path.join(out_dir, 'numbers.txt'), lines.join('\n') + '\n');

// ---- canonicalisation pairs --------------------------------------------------------------
const pairs = {};

// RFC 8785 section 3.2.2: the main example.
pairs.rfc8785_main = {
  input: String.raw`{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}
`,
  expected:
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
    '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
};

// RFC 8785 section 3.2.3: sorting by UTF-16 code units.
pairs.rfc8785_sorting = {
  input: String.raw`{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}
`,
  expected:
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control",' +
    '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",' +
    '"\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
};

// RFC 8785 Appendix B: every finite row, written with 17 significant digits.
pairs.rfc8785_appendix_b = {
  input: '[\n' + appendix_b.map(([h]) => '  ' + double_of(BigInt('0x' + h)).toPrecision(17))
                   .join(',\n') + '\n]\n',
  expected: '[' + appendix_b.map(([, s]) => s).join(',') + ']',
};

// Every control character escaped, short escapes, '/' and unnecessary escapes, DEL,
// U+2028/2029 (raw in the output), non-ASCII in raw and escaped form.
{
  let controls = '';
  for (let c = 0; c < 0x20; ++c) controls += '\\u' + c.toString(16).padStart(4, '0');
  let controls_upper = '';
  for (let c = 0; c < 0x20; ++c) controls_upper += '\\u' + c.toString(16).toUpperCase().padStart(4, '0');
  pairs.escapes = {
    input:
      '{"controls": "' + controls + '",\n' +
      ' "controls_upper": "' + controls_upper + '",\n' +
      ' "short": "\\b\\t\\n\\f\\r\\"\\\\\\/",\n' +
      ' "unneeded": "\\u0041\\u007e\\u00e9\\u00E9\\u2028\\u2029\\u007f\\u002F",\n' +
      ' "raw": "\x7f\u2028\u2029\u00e9\u20ac\ud83d\ude00 \'<>&",\n' +
      ' "astral": "\\ud83d\\ude00\\uD834\\uDD1E\\udbff\\udfff",\n' +
      ' "bmp_edges": "\\ue000\\uffff\\ufffd\\u0800\\u07ff\\u0080",\n' +
      ' "\\u0000key\\u001f": "controls in a key",\n' +
      ' "": ""}\n',
  };
}

// Nested objects and arrays, empty containers, key order at every level.
pairs.nested = {
  input: `{"z": {"b": [1, {"y": 2, "x": [[], {}]}, [[[3]]]], "a": {"d": null, "c": true}},
 "a": [{"b": 1, "a": 2}, [false, [0.5, -0.0, 1e2]]],
 "m": {}, "l": []}
`,
};

// Unicode keys where UTF-8 byte order and UTF-16 code-unit order disagree.
pairs.unicode_keys = {
  input: String.raw`{
  "\ue000": "U+E000 (EE 80 80 in UTF-8, E000 in UTF-16)",
  "\ud800\udc00": "U+10000 (F0 in UTF-8, D800 in UTF-16: sorts before U+E000)",
  "\uffff": "U+FFFF",
  "\udbff\udfff": "U+10FFFF",
  "\ufb33": "U+FB33",
  "\ud83d\ude00": "U+1F600",
  "e\u0301": "decomposed",
  "\u00e9": "precomposed",
  "10": "ten", "2": "two", "1": "one", "a": "a", "A": "A", "aa": "aa", "": "empty",
  "\u007f": "DEL", "~": "tilde"
}
`,
};

// Integers: what fits in int64/uint64 and what does not, all printed as doubles.
pairs.integers = {
  input: `[0, -0, 1, -1, 9007199254740991, 9007199254740992, 9007199254740993,
 -9007199254740993, 9223372036854775807, -9223372036854775808, 18446744073709551615,
 18446744073709551616, -9223372036854775809, 123456789012345678901234567890,
 100000000000000000000, 1000000000000000000000, 1e-400, -1e-400]
`,
};

// Whitespace everywhere JSON allows it, and the literals.
pairs.whitespace = {
  input: ' \t\r\n[ \n true ,\r\nfalse\t,null , { "k" \n: \t"v" } , [ ] , { } ]\r\n\t ',
};

for (const [name, pair] of Object.entries(pairs)) {
  const expected = canonicalize(JSON.parse(pair.input));
  if (pair.expected !== undefined) assert.strictEqual(expected, pair.expected, name);
  fs.writeFileSync(path.join(out_dir, name + '.in.json'), pair.input);
  fs.writeFileSync(path.join(out_dir, name + '.out.json'), expected);
}

console.log(`wrote ${lines.length} numbers and ${Object.keys(pairs).length} pairs to ${out_dir}`);
