#!/usr/bin/env node
// Times one ONNX model under ONNX Runtime (CPU), the anchor of tensorsched's benchmarks.
//
//   node bench/ort_run.js MODEL.onnx [--threads T] [--iters N] [--warmup W] [--json]
//        [--shape NAME=D0,D1,...]... [--seed S]
//        [--load-inputs DIR] [--save-inputs DIR] [--save-outputs DIR] [--profile FILE]
//
// onnxruntime-node comes from build/bench-node (scripts/install-bench-deps.sh); ORT_NODE_DIR
// overrides that folder. Every model input gets a tensor of its declared type and shape (symbolic
// dimensions are 1 unless --shape gives them) with deterministic pseudo-random values: floats in
// [-1, 1), integers 0 or 1 (valid indices along any axis), booleans. Graph-only zoo models
// (models/*.onnx, weights as graph inputs) therefore run too, but ORT cannot fold or fuse weights
// it only sees at run time: benchmark the full models (models/full/NAME/model.onnx, written by
// tools/export_models.py), whose only input is the real one.
// --load-inputs reads DIR/NAME.npy for the inputs that have one (the rest stay random);
// --save-inputs and --save-outputs write every input / output as DIR/NAME.npy, so ORT can serve
// as a reference for other runs. --profile writes ORT's own profile of every run (Chrome trace
// JSON: one event per node and run, warm-ups included) to FILE. Prints median/min/max latency of
// N timed runs after W warm-ups.
'use strict';

const fs = require('fs');
const path = require('path');

const REPO = path.dirname(__dirname);

function usage(msg) {
  if (msg) process.stderr.write(`ort_run: ${msg}\n`);
  process.stderr.write(
    'usage: node bench/ort_run.js MODEL.onnx [--threads T] [--iters N] [--warmup W] [--json]\n' +
    '       [--shape NAME=D0,D1,...]... [--seed S] [--load-inputs DIR] [--save-inputs DIR]\n' +
    '       [--save-outputs DIR] [--profile FILE]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { model: null, threads: 1, iters: 10, warmup: 3, json: false, shapes: {}, seed: 0,
              loadInputs: null, saveInputs: null, saveOutputs: null, profile: null };
  const intArg = (name, v, min) => {
    if (v === undefined || !/^\d+$/.test(v) || Number(v) < min) usage(`${name} needs an integer >= ${min}`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(`${k} needs a value`);
      return argv[++i];
    };
    switch (k) {
      case '--threads': a.threads = intArg(k, next(), 1); break;
      case '--iters': a.iters = intArg(k, next(), 0); break;
      case '--warmup': a.warmup = intArg(k, next(), 0); break;
      case '--seed': a.seed = intArg(k, next(), 0); break;
      case '--json': a.json = true; break;
      case '--load-inputs': a.loadInputs = next(); break;
      case '--save-inputs': a.saveInputs = next(); break;
      case '--save-outputs': a.saveOutputs = next(); break;
      case '--profile': a.profile = next(); break;
      case '--shape': {
        const m = /^(.+)=(\d+(?:,\d+)*)?$/.exec(next());
        if (!m) usage('--shape wants NAME=D0,D1,... (NAME= for a scalar)');
        a.shapes[m[1]] = m[2] ? m[2].split(',').map(Number) : [];
        break;
      }
      case '-h': case '--help': usage();
      default:
        if (k.startsWith('-') || a.model) usage(`unexpected argument ${k}`);
        a.model = k;
    }
  }
  if (!a.model) usage('no model given');
  return a;
}

// onnxruntime-node's folder: ORT_NODE_DIR may name the npm prefix, its node_modules, or the
// package itself.
function loadOrt() {
  const base = path.resolve(process.env.ORT_NODE_DIR || path.join(REPO, 'build', 'bench-node'));
  const candidates = [base, path.join(base, 'onnxruntime-node'),
                      path.join(base, 'node_modules', 'onnxruntime-node')];
  for (const dir of candidates) {
    const pj = path.join(dir, 'package.json');
    if (fs.existsSync(pj) && JSON.parse(fs.readFileSync(pj, 'utf8')).name === 'onnxruntime-node') {
      return { ort: require(dir), version: require(pj).version };
    }
  }
  process.stderr.write(`ort_run: onnxruntime-node not found under ${base}; ` +
                       'run scripts/install-bench-deps.sh (or set ORT_NODE_DIR)\n');
  process.exit(3);
}

// ORT element type -> typed array and .npy descriptor (little-endian, as on x86).
const TYPES = {
  float32: { array: Float32Array, descr: '<f4' },
  float64: { array: Float64Array, descr: '<f8' },
  int64: { array: BigInt64Array, descr: '<i8' },
  int32: { array: Int32Array, descr: '<i4' },
  int16: { array: Int16Array, descr: '<i2' },
  int8: { array: Int8Array, descr: '|i1' },
  uint8: { array: Uint8Array, descr: '|u1' },
  bool: { array: Uint8Array, descr: '|b1' },
};
const DESCR_TO_TYPE = Object.fromEntries(Object.entries(TYPES).map(([t, v]) => [v.descr, t]));

// mulberry32, seeded per input from (seed, name): an input's values do not depend on the others.
function rng(seed, name) {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  for (const c of name) h = Math.imul(h ^ c.codePointAt(0), 0x01000193) >>> 0;
  return () => {
    h = (h + 0x6d2b79f5) >>> 0;
    let t = h;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomData(type, n, next) {
  const data = new TYPES[type].array(n);
  for (let i = 0; i < n; i++) {
    const u = next();
    if (type === 'float32' || type === 'float64') data[i] = 2 * u - 1;
    else if (type === 'int64') data[i] = u < 0.5 ? 0n : 1n;
    else data[i] = u < 0.5 ? 0 : 1;
  }
  return data;
}

// Files are named after the tensor, with anything unsafe in a file name replaced.
const npyName = (dir, name) => path.join(dir, name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy');

function writeNpy(file, tensor) {
  const t = TYPES[tensor.type];
  if (!t) throw new Error(`cannot write ${tensor.type} to .npy`);
  const dims = tensor.dims.map(Number);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${t.descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Format 1.0: magic, version, uint16 header length; the header is padded with spaces and ends
  // in '\n' so that the data starts on a 64-byte boundary.
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  Buffer.from('\x93NUMPY', 'latin1').copy(pre, 0);
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const d = tensor.data;
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
                                        Buffer.from(d.buffer, d.byteOffset, d.byteLength)]));
}

// Returns { type, dims, data } converted to `want` (the input's declared type) when it differs.
function readNpy(file, want) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + hlen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shape || /'fortran_order':\s*True/.test(header)) {
    throw new Error(`${file}: unsupported .npy header ${header.trim()}`);
  }
  const type = DESCR_TO_TYPE[descr[1].replace(/^=/, '<')];
  if (!type) throw new Error(`${file}: unsupported dtype ${descr[1]}`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const n = dims.reduce((p, d) => p * d, 1);
  const Arr = TYPES[type].array;
  // Copy: the file's data need not be aligned for the typed array.
  const raw = new Arr(n);
  new Uint8Array(raw.buffer).set(buf.subarray(start, start + raw.byteLength));
  if (type === want || !TYPES[want]) return { type, dims, data: raw };
  const toBig = want === 'int64', fromBig = type === 'int64';
  const data = new TYPES[want].array(n);
  for (let i = 0; i < n; i++) {
    const v = fromBig ? Number(raw[i]) : raw[i];
    data[i] = toBig ? BigInt(Math.trunc(v)) : v;
  }
  return { type: want, dims, data };
}

function makeInputs(ort, session, a) {
  const feeds = {};
  for (const meta of session.inputMetadata) {
    const name = meta.name;
    if (!meta.isTensor) throw new Error(`input ${name} is not a tensor`);
    const file = a.loadInputs && npyName(a.loadInputs, name);
    if (file && fs.existsSync(file)) {
      const t = readNpy(file, meta.type);
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
      continue;
    }
    if (a.loadInputs) process.stderr.write(`ort_run: no ${file}; input ${name} is random\n`);
    if (!TYPES[meta.type]) throw new Error(`input ${name}: element type ${meta.type} not supported`);
    // ORT reports an unknown shape like a scalar's ([]): such inputs need --shape.
    const dims = a.shapes[name] || meta.shape.map(d => (typeof d === 'number' && d >= 0 ? d : 1));
    const n = dims.reduce((p, d) => p * d, 1);
    feeds[name] = new ort.Tensor(meta.type, randomData(meta.type, n, rng(a.seed, name)), dims);
  }
  return feeds;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const { ort, version } = loadOrt();
  // ORT names the profile PREFIX_<date>.json; it is moved to --profile's FILE after the runs.
  const profilePrefix = a.profile && path.join(fs.mkdtempSync(path.join(require('os').tmpdir(), 'ort-profile-')), 'p');
  const session = await ort.InferenceSession.create(a.model, {
    executionProviders: ['cpu'],
    ...(a.profile ? { enableProfiling: true, profileFilePrefix: profilePrefix } : {}),
    intraOpNumThreads: a.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    logSeverityLevel: 3,  // errors only: ORT's warnings (e.g. unused initializers) are noise here
  });
  const feeds = makeInputs(ort, session, a);
  if (a.saveInputs) {
    fs.mkdirSync(a.saveInputs, { recursive: true });
    for (const [name, t] of Object.entries(feeds)) writeNpy(npyName(a.saveInputs, name), t);
  }

  let outputs = null;
  for (let i = 0; i < a.warmup; i++) outputs = await session.run(feeds);
  const times = [];
  for (let i = 0; i < a.iters; i++) {
    const t0 = process.hrtime.bigint();
    outputs = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  if (a.saveOutputs) {
    if (!outputs) outputs = await session.run(feeds);
    fs.mkdirSync(a.saveOutputs, { recursive: true });
    for (const [name, t] of Object.entries(outputs)) writeNpy(npyName(a.saveOutputs, name), t);
  }
  await session.release();
  if (a.profile) {
    const dir = path.dirname(profilePrefix);
    const written = fs.readdirSync(dir).filter(f => f.endsWith('.json'));
    if (written.length !== 1) throw new Error(`no profile written under ${dir}`);
    fs.copyFileSync(path.join(dir, written[0]), a.profile);
    fs.rmSync(dir, { recursive: true });
  }

  const sorted = [...times].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  const median = sorted.length === 0 ? null
    : sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const r = v => (v === null || v === undefined ? null : Math.round(v * 1000) / 1000);
  const res = { model: a.model, threads: a.threads, median_ms: r(median), min_ms: r(sorted[0]),
                max_ms: r(sorted[sorted.length - 1]), iters: a.iters, warmup: a.warmup,
                ort_version: version };
  if (a.json) {
    console.log(JSON.stringify(res));
  } else {
    console.log(`onnxruntime ${version} ${a.model}, ${a.threads} thread(s): median ${res.median_ms} ms ` +
                `(min ${res.min_ms}, max ${res.max_ms}) over ${a.iters} runs after ${a.warmup} warm-ups`);
  }
}

main().catch(e => {
  process.stderr.write(`ort_run: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
