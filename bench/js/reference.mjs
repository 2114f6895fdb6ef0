// reference.mjs writes tokens/testdata/reference.jsonl.gz: inputs with their
// token counts and ids from OpenAI's tiktoken (the npm WASM build of the Rust
// core), for o200k_base and cl100k_base, so that `go test ./tokens` checks
// exactness without node.
//
// Inputs:
//   - random: seeded random and adversarial strings (many scripts, every
//     letter category, marks, digits of many scripts, white-space runs with
//     \r\n and Unicode spaces, contractions in all cases including ſ,
//     punctuation with / and newlines, emoji with ZWJ and skin tones,
//     characters new in Unicode 15.1, 16.0 and 17.0, unassigned and private
//     use code points, special-token text, invalid UTF-8, very long runs);
//   - corpus: every file of bench/mixtext/corpus, whole;
//   - mixed: the 1 MiB benchmark text (sha256 and counts only).
//
// Strings with invalid UTF-8 are stored as base64 ("b64"). Their reference is
// computed on the string Go's decoder yields (each invalid byte becomes
// U+FFFD), which is how package tokens defines counting them.
//
// Usage: node reference.mjs MIXED_TEXT_FILE [OUT]   (see gen-reference.sh)
//
// REF_SEED and REF_SCALE (environment) change the random inputs and multiply
// their number, and REF_FILES names a file listing more files to add whole
// (kind "file"), for a larger one-off check: write to another OUT and run
// AGENTCTX_TOKENS_REFERENCE=OUT go test -run TestReferenceFile ./tokens.
import { get_encoding } from "tiktoken";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const mixedPath = process.argv[2];
const outPath = process.argv[3] ?? path.join(here, "../../tokens/testdata/reference.jsonl.gz");
if (!mixedPath) {
  console.error("usage: node reference.mjs MIXED_TEXT_FILE [OUT]");
  process.exit(2);
}

// ---------------------------------------------------------------- PRNG
let state = BigInt(process.env.REF_SEED ?? "0x2026112207");
function next64() { // SplitMix64
  state = (state + 0x9E3779B97F4A7C15n) & 0xFFFFFFFFFFFFFFFFn;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & 0xFFFFFFFFFFFFFFFFn;
  z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & 0xFFFFFFFFFFFFFFFFn;
  return z ^ (z >> 31n);
}
const rnd = () => Number(next64() >> 11n) / 2 ** 53;
const int = (n) => Math.floor(rnd() * n);
const between = (a, b) => a + int(b - a + 1);
const pick = (arr) => arr[int(arr.length)];
const cp = (c) => String.fromCodePoint(c);
const range = (a, b) => () => cp(between(a, b));
function weighted(table) {
  const total = table.reduce((s, [w]) => s + w, 0);
  return () => {
    let x = rnd() * total;
    for (const [w, f] of table) { if ((x -= w) < 0) return f(); }
    return table[table.length - 1][1]();
  };
}

// ---------------------------------------------------------------- atoms
const words = ("the of and to in is you that it he was for on are as with his they I at be this have from or one had by " +
  "word but not what all were we when your can said there use an each which she do how their if will up other about out " +
  "many then them these so some her would make like him into time has look two more write go see number no way could people " +
  "tokenizer context window agent message summary compaction pipeline offload workspace artifact Go JSON HTTP API ID URL " +
  "don't can't won't it's I'm you're we've they'll he'd she's O'Brien rock'n'roll").split(" ");
const asciiLower = range(0x61, 0x7a), asciiUpper = range(0x41, 0x5a);
const lu = weighted([[5, asciiUpper], [2, range(0xc0, 0xd6)], [2, range(0x391, 0x3a9)], [2, range(0x410, 0x42f)],
  [1, range(0x531, 0x556)], [1, range(0x1c90, 0x1cba)], [1, range(0x10400, 0x10427)], [1, range(0x1d400, 0x1d419)],
  [1, () => pick(["İ", "ẞ", "Ÿ", "Ω", "Ǆ", "K", "Å"])]]);
const ll = weighted([[5, asciiLower], [2, range(0xdf, 0xf6)], [2, range(0x3b1, 0x3c9)], [2, range(0x430, 0x44f)],
  [1, range(0x561, 0x586)], [1, range(0x10d0, 0x10fa)], [1, range(0x10428, 0x1044f)], [1, range(0x1d41a, 0x1d433)],
  [1, () => pick(["ſ", "ı", "ǆ", "ﬅ", "ﬀ", "ŉ", "ʼn"])]]);
const lt = () => pick(["ǅ", "ǈ", "ǋ", "ǲ", "ᾈ", "ᾉ", "ᾏ", "ᾘ", "ᾯ", "ᾼ", "ῌ", "ῼ"]);
const lm = weighted([[2, range(0x2b0, 0x2c1)], [1, range(0x2c6, 0x2d1)], [2, () => pick(["ー", "々", "ゝ", "ゞ", "ヽ", "ｰ", "ꜗ", "ꙿ", "ᵃ", "ᵇ", "ⁱ", "ⁿ", "ₐ", "〻"])],
  [1, range(0x1d2c, 0x1d6a)]]);
const lo = weighted([[2, range(0x5d0, 0x5ea)], [2, range(0x627, 0x64a)], [2, range(0x915, 0x939)], [2, range(0xe01, 0xe2e)],
  [4, range(0x4e00, 0x9fff)], [2, range(0x3041, 0x3096)], [2, range(0x30a1, 0x30fa)], [3, range(0xac00, 0xd7a3)],
  [1, range(0x20000, 0x2a6df)], [1, () => pick(["ª", "º", "ƻ", "ǀ", "ʔ", "ו", "ℵ", "〆", "ㄅ", "ꀀ"])], [1, range(0x1200, 0x135a)]]);
const marks = weighted([[4, range(0x300, 0x36f)], [1, range(0x483, 0x489)], [1, range(0x591, 0x5bd)], [1, range(0x64b, 0x65f)],
  [1, range(0x93c, 0x94d)], [1, range(0xe31, 0xe3a)], [1, range(0x20d0, 0x20f0)], [2, range(0xfe00, 0xfe0f)],
  [1, range(0x1ab0, 0x1ace)], [1, range(0xe0100, 0xe01ef)], [1, range(0x1d165, 0x1d169)], [1, () => pick(["ः", "ா", "ि", "ং", "゙", "゚"])]]);
const digits = weighted([[8, range(0x30, 0x39)], [1, range(0x660, 0x669)], [1, range(0x966, 0x96f)], [1, range(0xff10, 0xff19)],
  [1, range(0x1d7ce, 0x1d7ff)], [1, () => pick(["²", "³", "¹", "¼", "½", "¾", "Ⅻ", "ⅳ", "〇", "①", "⑴", "⒈", "𝟘", "𐒠", "٣", "๓", "፲"])]]);
const unicodeSpaces = ["\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007",
  "\u2008", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u0085", "\u000b", "\u000c"];
const notSpaces = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e", "\u00ad"];
const space = weighted([[20, () => " "], [4, () => "\n"], [2, () => "\t"], [2, () => "\r\n"], [1, () => "\r"], [2, () => pick(unicodeSpaces)],
  [3, () => " ".repeat(between(2, 9))], [1, () => "\n".repeat(between(2, 5))], [1, () => pick([" \n", "\n ", " \r\n ", "\t\n", "\n\t", " \t ", "\r\r\n"])]]);
const punct = weighted([[10, () => pick([..."!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'"])], [2, () => pick(["//", "/*", "*/", "->", "=>", "::", "...", "?!", "!=", "==", "&&", "||", "\\n", "{}", "[]", "();", "\"\"", "''", "/>", "</", "//\n", "/\n/"])],
  [2, () => pick(["—", "–", "…", "«", "»", "“", "”", "‘", "’", "„", "¿", "¡", "·", "•", "§", "¶", "†", "©", "®", "™", "°", "±", "×", "÷", "€", "£", "¥", "₿", "∑", "∞", "≠", "≤", "→", "⇒", "∀", "∃", "√", "、", "。", "，", "！", "？", "「", "」", "【", "】", "《", "》", "〜", "・", "٫", "؟", "।"])],
  [1, () => pick(["\u0000", "\u0001", "\u001b", "\u007f", "\u0080", "\u009f", "\ufffd", "\ufffe", "\uffff", "\u{10ffff}", "\ue000", "\u{f0000}", ...notSpaces])]]);
const emoji = () => pick(["😀", "😂", "🥲", "👍", "👍🏽", "👋🏿", "🧑‍💻", "👩🏾‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🏴‍☠️", "🇺🇸", "🇯🇵", "🇩🇪", "#️⃣", "1️⃣", "*️⃣", "❤️", "❤️‍🔥", "🫱🏼‍🫲🏾",
  "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "🐻‍❄️", "👁️‍🗨️", "☀️", "✅", "❌", "⚠️", "🚀", "🔥", "🤦‍♂️", "🧪", "🫠", "©️", "™️", "🅰️", "🆗", "🀄", "🃏", "🎴", "🔟"]);
const contraction = () => {
  const base = pick(["s", "t", "re", "ve", "m", "ll", "d", "S", "T", "RE", "Re", "rE", "VE", "Ve", "M", "LL", "Ll", "lL", "D", "ſ", "r", "l", "v", "x", "e", "LLL", "ss", "tt", "dd"]);
  return pick(["'", "'", "'", "’", "`"]) + base;
};
const special = () => pick(["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>", "<|im_start|>", "<|im_end|>"]);
// Code points new in Unicode 15.1 and 16.0 (letters, digits, marks for tiktoken,
// not for Go 1.26's unicode package) and new in 17.0 (unassigned for tiktoken).
const newer = weighted([[2, range(0x2ebf0, 0x2ee5d)], [1, range(0x10d40, 0x10d8f)], [1, range(0x11380, 0x113ff)], [1, range(0x16d40, 0x16d79)],
  [1, range(0x11bc0, 0x11be1)], [1, range(0x16100, 0x16139)], [1, range(0x1e5d0, 0x1e5fa)], [1, range(0x105c0, 0x105f3)],
  [1, range(0x13460, 0x143fa)], [1, range(0x1cc00, 0x1ccf9)], [1, range(0x10940, 0x1095f)], [1, range(0x16ea0, 0x16eb8)], [1, range(0x1e6c0, 0x1e6fe)], [1, range(0x11b60, 0x11b67)]]);
const anyCp = () => {
  for (;;) {
    const c = rnd() < 0.6 ? int(0x10000) : int(0x110000);
    if (c < 0xd800 || c > 0xdfff) return cp(c);
  }
};
const letter = weighted([[6, ll], [4, lu], [1, lt], [2, lm], [4, lo], [2, marks]]);
const wordish = () => {
  const n = between(1, 10);
  let s = "";
  for (let i = 0; i < n; i++) s += letter();
  return s;
};
const caseWord = () => { // o200k's case rules: iPhone, HTMLParser, McDONALD's, marks inside
  const parts = [];
  const n = between(1, 4);
  for (let i = 0; i < n; i++) {
    const k = between(0, 4);
    const f = pick([lu, ll, lt, lm, lo, marks, asciiUpper, asciiLower]);
    for (let j = 0; j < k; j++) parts.push(f());
  }
  return parts.join("") + (rnd() < 0.3 ? contraction() : "");
};
const atom = weighted([
  [14, () => (rnd() < 0.6 ? " " : "") + pick(words)],
  [6, wordish], [6, caseWord], [5, contraction], [8, () => { let s = ""; const n = between(1, 8); for (let i = 0; i < n; i++) s += digits(); return s; }],
  [14, space], [10, punct], [4, marks], [4, emoji], [1, special], [2, newer], [3, anyCp], [2, lo], [2, lm], [1, lt],
]);

// A string made of atoms; styles weight toward one kind of trouble.
function randomString() {
  const style = int(10);
  const n = between(1, style < 2 ? 8 : 40);
  let s = "";
  for (let i = 0; i < n; i++) {
    switch (style) {
      case 3: s += rnd() < 0.5 ? space() : pick([letter, digits, punct, emoji, contraction, () => ""])(); break; // white space
      case 4: s += rnd() < 0.5 ? caseWord() : pick([marks, punct, contraction, space, lm, lt])(); break; // case & marks
      case 5: s += pick([punct, () => "/", () => "\n", () => "\r", space, () => " ", letter])(); break; // punctuation, / and newlines
      case 6: s += pick([anyCp, newer, marks, digits])(); break; // anything
      default: s += atom();
    }
  }
  return s;
}

function longRun() {
  const unit = pick([() => "a", () => "A", () => " ", () => "\n", () => "\t", () => "1", () => "!", () => "/", () => "한", () => "😀", () => "\u0301",
    () => " a", () => "ab", () => "'s", () => "\r\n", () => " \n", () => "\u3000", () => "٣", () => "ǅ", () => "ー", atom, letter, space, digits, punct, emoji]);
  const u = unit();
  const reps = between(50, pick([300, 1000, 5000, 20000]));
  const around = () => (rnd() < 0.5 ? "" : atom());
  return around() + u.repeat(Math.max(1, Math.floor(reps / Math.max(1, u.length)))) + around();
}

// Invalid UTF-8: bytes no decoder accepts, spliced into valid text.
const badBytes = [[0x80], [0xbf], [0xc0], [0xc1, 0xbf], [0xc2], [0xe0, 0x80, 0x80], [0xe0, 0xa0], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf],
  [0xef, 0xbf], [0xf0, 0x9f, 0x98], [0xf0, 0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf5], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xfe], [0xff], [0xc3, 0x28], [0xe2, 0x82, 0x28]];
function invalidBytes() {
  const parts = [];
  const n = between(1, 20);
  for (let i = 0; i < n; i++) {
    if (rnd() < 0.35) parts.push(Buffer.from(pick(badBytes)));
    else parts.push(Buffer.from(atom(), "utf8"));
  }
  return Buffer.concat(parts);
}

// Go's utf8.DecodeRune: a valid sequence, or U+FFFD for one byte.
function goDecode(b) {
  let out = "";
  const cont = (i) => i < b.length && b[i] >= 0x80 && b[i] <= 0xbf;
  for (let i = 0; i < b.length;) {
    const c = b[i];
    let n = 0, lo = 0x80, hi = 0xbf;
    if (c < 0x80) n = 1;
    else if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) { n = 3; if (c === 0xe0) lo = 0xa0; if (c === 0xed) hi = 0x9f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 4; if (c === 0xf0) lo = 0x90; if (c === 0xf4) hi = 0x8f; }
    let ok = n > 0 && i + n <= b.length;
    if (ok && n > 1) ok = b[i + 1] >= lo && b[i + 1] <= hi;
    for (let k = 2; ok && k < n; k++) ok = cont(i + k);
    if (ok) { out += b.subarray(i, i + n).toString("utf8"); i += n; } else { out += "\ufffd"; i++; }
  }
  return out;
}

// ---------------------------------------------------------------- reference
const o200k = get_encoding("o200k_base");
const cl100k = get_encoding("cl100k_base");
const lines = [];
let strings = 0, bytes = 0;
function add(kind, input, withIds) {
  const isBuf = Buffer.isBuffer(input);
  const text = isBuf ? goDecode(input) : input;
  const a = o200k.encode_ordinary(text), b = cl100k.encode_ordinary(text);
  const rec = { kind };
  if (isBuf) rec.b64 = input.toString("base64"); else rec.text = input;
  rec.o200k = a.length;
  rec.cl100k = b.length;
  if (withIds) { rec.o200k_ids = Array.from(a); rec.cl100k_ids = Array.from(b); }
  lines.push(JSON.stringify(rec));
  strings++;
  bytes += isBuf ? input.length : Buffer.byteLength(input);
}

const scale = Number(process.env.REF_SCALE ?? 1);
const N_RANDOM = 8000 * scale, N_LONG = 300 * Math.min(scale, 2), N_INVALID = 1000 * scale;
for (let i = 0; i < N_RANDOM; i++) { const s = randomString(); add("random", s, Buffer.byteLength(s) <= 400); }
for (let i = 0; i < N_LONG; i++) add("long", longRun(), i % 10 === 0);
for (let i = 0; i < N_INVALID; i++) { const b = invalidBytes(); add("invalid", b, b.length <= 400); }
// Hand-picked traps.
for (const s of ["", " ", "  ", "\n", "\r\n", " \n", "a", "'s", "'S", "'ſ", "'ſt", "don't", "DON'T", "y'all're", "x'LL", "K", "ǅungla", "iPhone", "HTMLParser",
  "McDONALD's", "hello world", "hello  world", "hello   world\n", "  \n  x", "\t\tx", "\u3000x", "a\u0301", "\u0301", "\u0301a", "!\u0301", "!!\u0301", "\u0301ABC.", "ABC\u0301", "ー", "々x",
  "12345", "١٢٣٤٥", "1/2", "a//b", "!\n/", " !\r\n//", "<|endoftext|>", "\ufffd", "\u{2ebf0}", "\u{10d4a}\u{10d4b}", "\u{1e6c0}",
  "𮯰 is a CJK Ext I letter (Unicode 15.1)", "\u00a0\u00a0x", "x\u2028y", "\u0085", "\u000b\u000c", "\r\r\r", " ".repeat(100) + "x", "a".repeat(100000), " ".repeat(70000), "1".repeat(30001)]) {
  add("trap", s, Buffer.byteLength(s) <= 2000);
}

let corpusBytes = 0;
const corpusDir = path.join(here, "../mixtext/corpus");
for (const name of readdirSync(corpusDir).sort()) {
  const text = readFileSync(path.join(corpusDir, name), "utf8");
  add("corpus:" + name, text, true);
  corpusBytes += Buffer.byteLength(text);
}

if (process.env.REF_FILES) {
  for (const f of readFileSync(process.env.REF_FILES, "utf8").split("\n").filter(Boolean)) {
    const b = readFileSync(f);
    const valid = Buffer.from(b.toString("utf8"), "utf8").equals(b);
    add("file", valid ? b.toString("utf8") : b, b.length <= 20000);
  }
}

const mixed = readFileSync(mixedPath);
lines.push(JSON.stringify({
  kind: "mixed", size: mixed.length, sha256: createHash("sha256").update(mixed).digest("hex"),
  o200k: o200k.encode_ordinary(mixed.toString("utf8")).length, cl100k: cl100k.encode_ordinary(mixed.toString("utf8")).length,
}));

writeFileSync(outPath, gzipSync(lines.join("\n") + "\n", { level: 9 }));
console.error(`wrote ${outPath}: ${strings} strings (${bytes} bytes, corpus ${corpusBytes} bytes) + mixed ${mixed.length} bytes`);
