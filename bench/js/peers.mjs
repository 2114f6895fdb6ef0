// peers.mjs measures the JavaScript token counters for bench/cmd/peers,
// which compares them with agentctx; see bench/peers.sh.
//
// Usage: node peers.mjs ENCODING FILE
//   ENCODING: o200k_base | cl100k_base
//
// It loads every tokenizer, counts FILE once with each, warms each up for a
// second, and prints one JSON line per tokenizer (name, version, tokens,
// load_ms). Then it reads commands from standard input, one per line:
//
//	NAME SECONDS   count FILE with NAME repeatedly for SECONDS (at least
//	               3 times) and print {"name", "runs": [[wall_ms, cpu_ms], ...]}
//
// and exits at the end of its input. The caller interleaves these rounds
// with its own, so every tokenizer sees the same share of a busy machine.
// cpu_ms is process.cpuUsage() (user + system) over the run.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";

const [encoding, file] = process.argv.slice(2);
if (!["o200k_base", "cl100k_base"].includes(encoding) || !file) {
  console.error("usage: node peers.mjs o200k_base|cl100k_base FILE");
  process.exit(2);
}
const text = readFileSync(file, "utf8");

const version = (pkg) => JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url))).version;
// Each peer: a name and a loader returning count(text).
const loaders = [
  ["tiktoken", async () => {
    const { get_encoding } = await import("tiktoken");
    const enc = get_encoding(encoding);
    return (s) => enc.encode_ordinary(s).length;
  }],
  ["gpt-tokenizer", async () => {
    const mod = await import(`gpt-tokenizer/encoding/${encoding}`);
    return (s) => mod.countTokens(s);
  }],
  ["ai-tokenizer", async () => {
    const { Tokenizer } = await import("ai-tokenizer");
    const data = await import(`ai-tokenizer/encoding/${encoding}`);
    const tok = new Tokenizer(data);
    return (s) => tok.count(s);
  }],
  ["js-tiktoken", async () => {
    const { getEncoding } = await import("js-tiktoken");
    const enc = getEncoding(encoding);
    return (s) => enc.encode(s).length;
  }],
];

const counters = new Map();
for (const [name, load] of loaders) {
  const t0 = performance.now();
  const count = await load();
  const loadMs = performance.now() - t0;
  const tokens = count(text);
  const warmEnd = performance.now() + 1000;
  while (performance.now() < warmEnd) count(text);
  counters.set(name, count);
  console.log(JSON.stringify({ name, version: version(name), encoding, bytes: Buffer.byteLength(text), tokens, load_ms: loadMs }));
}

for await (const line of createInterface({ input: process.stdin })) {
  const [name, seconds] = line.trim().split(/\s+/);
  const count = counters.get(name);
  if (!count) {
    console.error(`peers.mjs: unknown tokenizer ${name}`);
    process.exit(2);
  }
  const runs = [];
  const end = performance.now() + Number(seconds) * 1000;
  while (runs.length < 3 || performance.now() < end) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    count(text);
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    runs.push([wall, (c.user + c.system) / 1000]);
  }
  console.log(JSON.stringify({ name, runs }));
}
