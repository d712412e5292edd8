// The dashboard's pure functions: what each panel computes from the API's JSON, with no DOM and
// no network, so that node runs their unit tests (tests/browser/test_model.mjs).

// Best correct speedup after each attempt, in attempt order: [{number, elapsed, best}] where
// best is null until the first correct attempt.
export function bestSoFar(attempts, elapsedOf = () => null) {
  let best = null;
  return attempts.map((a) => {
    if (a.correct && typeof a.speedup === "number" && (best === null || a.speedup > best)) {
      best = a.speedup;
    }
    return { number: a.number, elapsed: elapsedOf(a), best };
  });
}

// Seconds between two ISO 8601 times (null when either is missing or unreadable).
export function secondsBetween(from, to) {
  const a = Date.parse(from), b = Date.parse(to);
  return Number.isFinite(a) && Number.isFinite(b) ? (b - a) / 1000 : null;
}

// Rows sorted by `key` (a function or a property name); nulls last in either direction; stable.
export function sortRows(rows, key, descending = false) {
  const get = typeof key === "function" ? key : (r) => r[key];
  const sign = descending ? -1 : 1;
  return rows
    .map((row, i) => ({ row, i, v: get(row) }))
    .sort((x, y) => {
      const xn = x.v === null || x.v === undefined, yn = y.v === null || y.v === undefined;
      if (xn || yn) return xn === yn ? x.i - y.i : xn ? 1 : -1;
      const c = typeof x.v === "number" && typeof y.v === "number"
        ? x.v - y.v : String(x.v).localeCompare(String(y.v));
      return c !== 0 ? sign * c : x.i - y.i;
    })
    .map((e) => e.row);
}

// Rows whose text (`textOf(row)`) contains every word of `query` (case-insensitive); a word
// `key:value` must instead start that field's text or one of its words ("verdict:correct" is not
// "incorrect").
export function filterRows(rows, query, textOf, fieldOf = (r, k) => r[k]) {
  const words = String(query || "").toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return rows;
  return rows.filter((row) => {
    const all = textOf(row).toLowerCase();
    return words.every((w) => {
      const colon = w.indexOf(":");
      if (colon > 0) {
        const v = fieldOf(row, w.slice(0, colon));
        if (v === undefined || v === null) return false;
        const text = String(v).toLowerCase(), want = w.slice(colon + 1);
        return text.startsWith(want) || text.split(/[^a-z0-9_.]+/).some((t) => t.startsWith(want));
      }
      return all.includes(w);
    });
  });
}

// The rows of a long list to draw for a scroll position: [first, end) of `count` rows of
// `rowPx` pixels seen through `viewPx` pixels scrolled by `scrollTop`, with `overscan` rows more
// at each end.
export function visibleRows(count, scrollTop, rowPx, viewPx, overscan) {
  const first = Math.max(0, Math.floor(scrollTop / rowPx) - overscan);
  const end = Math.min(count, Math.ceil((scrollTop + viewPx) / rowPx) + overscan);
  return [Math.min(first, end), end];
}

// A line diff (longest common subsequence): [{op: "same"|"del"|"add", a, b, text}] where a and b
// are 1-based line numbers in each side (null on the side a line is absent from).
export function lineDiff(aText, bText) {
  const a = splitLines(aText), b = splitLines(bText);
  // Common prefix and suffix first: candidates of one session differ in a few lines.
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre &&
         a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const am = a.slice(pre, a.length - suf), bm = b.slice(pre, b.length - suf);
  const n = am.length, m = bm.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = am[i] === bm[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  for (let k = 0; k < pre; k++) out.push({ op: "same", a: k + 1, b: k + 1, text: a[k] });
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && am[i] === bm[j]) {
      out.push({ op: "same", a: pre + i + 1, b: pre + j + 1, text: am[i] }); i++; j++;
    } else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out.push({ op: "del", a: pre + i + 1, b: null, text: am[i] }); i++;
    } else {
      out.push({ op: "add", a: null, b: pre + j + 1, text: bm[j] }); j++;
    }
  }
  for (let k = 0; k < suf; k++) {
    out.push({ op: "same", a: a.length - suf + k + 1, b: b.length - suf + k + 1,
               text: a[a.length - suf + k] });
  }
  return out;
}

export function splitLines(text) {
  if (!text) return [];
  const lines = String(text).split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

// A candidate's text cut into stretches to highlight in one language each: Python, with the C++
// or CUDA held in its triple-quoted strings (load_inline sources) as "cpp". Line-aligned:
// [{lang, first, lines}] with `first` the 0-based line index and `lines` the stretch's lines.
export function codeSegments(text, language) {
  const lines = splitLines(text);
  if (language !== "python") return lines.length ? [{ lang: "cpp", first: 0, lines }] : [];
  const segs = [];
  let cur = null;
  const push = (lang, i) => {
    if (!cur || cur.lang !== lang) { cur = { lang, first: i, lines: [] }; segs.push(cur); }
    cur.lines.push(lines[i]);
  };
  let inCode = false, quote = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!inCode) {
      push("python", i);
      const m = line.match(/("""|''')\s*(\\)?\s*$/);
      if (m && countOf(line, m[1]) % 2 === 1 && looksLikeCpp(lines, i + 1, m[1])) {
        inCode = true; quote = m[1];
      }
    } else if (line.includes(quote)) {
      inCode = false; push("python", i);
    } else {
      push("cpp", i);
    }
  }
  return segs;
}

function countOf(s, sub) {
  return s.split(sub).length - 1;
}

// Whether the string that starts at line `from` holds C++/CUDA (an include, a kernel, a template).
function looksLikeCpp(lines, from, quote) {
  for (let i = from; i < lines.length && !lines[i].includes(quote); i++) {
    if (/^\s*#include\b|__global__|\btorch::Tensor\b|\btemplate\s*<|\bextern\s+"C"/.test(lines[i])) {
      return true;
    }
  }
  return false;
}

// highlight.js HTML of several lines cut into one HTML string per line, each with its spans
// balanced: spans open at a line's end are closed there and reopened on the next line.
export function splitHighlightedLines(html) {
  const out = [];
  const open = [];  // opening tags in force
  let line = "";
  const re = /<span[^>]*>|<\/span>|\n|[^<\n]+|</g;
  let m;
  while ((m = re.exec(html)) !== null) {
    const t = m[0];
    if (t === "\n") {
      out.push(line + "</span>".repeat(open.length));
      line = open.join("");
    } else if (t.startsWith("<span")) {
      open.push(t); line += t;
    } else if (t === "</span>") {
      open.pop(); line += t;
    } else {
      line += t;
    }
  }
  out.push(line + "</span>".repeat(open.length));
  return out;
}

// The non-dominated points of [{x: cost, y: speedup, ...}]: nobody cheaper (or as cheap) and at
// least as fast with one of the two strictly better. Sorted by x.
export function paretoFrontier(points) {
  const ok = points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  const sorted = [...ok].sort((p, q) => p.x - q.x || q.y - p.y);
  const front = [];
  let bestY = -Infinity;
  for (const p of sorted) {
    if (p.y > bestY) { front.push(p); bestY = p.y; }
  }
  return front;
}

// The roofline's roofs over intensities [lo, hi] (FLOP/byte): the bandwidth slope up to the
// ridge point and the compute roof after it, as x/y arrays for a log-log plot.
export function roofLines(bandwidth, peakFlops, lo, hi) {
  if (!(bandwidth > 0 && peakFlops > 0)) return null;
  const ridge = peakFlops / bandwidth;
  const x0 = Math.min(lo, ridge / 10), x1 = Math.max(hi, ridge * 10);
  return { ridge, x: [x0, ridge, x1], y: [bandwidth * x0, peakFlops, peakFlops] };
}

// The landscape's three axes from the intent tree's template axes and the attempts' params:
// the template axes on which the attempts differ (up to three), padded with speedup and attempt
// number; without template axes (a model's session) attempt, runtime and achieved bandwidth.
// Returns [{title, value(attempt) -> number|string|null, categories?}].
export function landscapeAxes(attempts, treeAxes) {
  const varying = [];
  for (const axis of treeAxes || []) {
    const get = paramGetter(axis.key);
    const seen = new Set(attempts.map((a) => JSON.stringify(get(a) ?? null)));
    seen.delete("null");
    if (seen.size > 1) {
      const values = (axis.values || []).map((v) => JSON.stringify(v));
      for (const s of seen) if (!values.includes(s)) values.push(s);
      varying.push({ title: axis.key, categories: values.map((v) => JSON.parse(v)),
                     value: (a) => { const v = get(a); return v === undefined ? null : v; } });
    }
  }
  const speed = { title: "speedup", value: (a) => a.speedup ?? null };
  const number = { title: "attempt", value: (a) => a.number };
  if (varying.length >= 3) return varying.slice(0, 3);
  if (varying.length === 2) return [...varying, speed];
  if (varying.length === 1) return [varying[0], number, speed];
  return [number, { title: "runtime (us)", value: (a) => a.runtime_us ?? null },
          { title: "bandwidth (GB/s)",
            value: (a) => (a.roofline ? a.roofline.achieved_bytes_per_s / 1e9 : null) }];
}

// An axis key "skill.name" read from an attempt's params ({skill: {name: value}}).
export function paramGetter(key) {
  const dot = key.indexOf(".");
  const skill = key.slice(0, dot), name = key.slice(dot + 1);
  return (a) => {
    const p = a.params && a.params[skill];
    return p && typeof p === "object" ? p[name] : undefined;
  };
}

// The intent tree as nested nodes: [{intent, children: [...]}] from the flat list (parent ids).
export function intentForest(intents) {
  const byParent = new Map();
  for (const i of intents || []) {
    const p = i.parent === null || i.parent === undefined ? null : i.parent;
    if (!byParent.has(p)) byParent.set(p, []);
    byParent.get(p).push(i);
  }
  const ids = new Set((intents || []).map((i) => i.id));
  const build = (i, depth) => ({
    intent: i,
    children: depth > 64 ? [] : (byParent.get(i.id) || []).map((c) => build(c, depth + 1)),
  });
  // Roots: no parent, or a parent not in the list.
  const roots = (intents || []).filter((i) => i.parent === null || i.parent === undefined ||
                                              !ids.has(i.parent));
  return roots.map((r) => build(r, 0));
}

// How many intents of each status: {open, trying, succeeded, failed, pruned}.
export function statusCounts(intents) {
  const c = { open: 0, trying: 0, succeeded: 0, failed: 0, pruned: 0 };
  for (const i of intents || []) c[i.status] = (c[i.status] || 0) + 1;
  return c;
}

// The strategy statistics table: one row per (strategy, class) with a record, then its
// all-classes row; classes in the population's order.
export function strategyRows(data) {
  const rows = [];
  for (const s of data.strategies || []) {
    for (const cls of data.classes || []) {
      const f = s.classes && s.classes[cls];
      if (f) rows.push({ id: s.id, cls, ...f });
    }
    if (s.all) rows.push({ id: s.id, cls: "all", ...s.all });
  }
  return rows;
}

export function fmtSpeedup(x) {
  return typeof x === "number" ? `${x.toFixed(x >= 100 ? 0 : 3)}x` : "–";
}

export function fmtUs(x) {
  if (typeof x !== "number") return "–";
  if (x >= 1e6) return `${(x / 1e6).toFixed(2)} s`;
  if (x >= 1e3) return `${(x / 1e3).toFixed(2)} ms`;
  return `${x.toFixed(1)} us`;
}

export function fmtUsd(x) {
  return typeof x === "number" ? `$${x.toFixed(4)}` : "–";
}

export function fmtPercent(x) {
  return typeof x === "number" ? `${(100 * x).toFixed(x < 0.1 ? 1 : 0)}%` : "–";
}

// HTML-escapes text for innerHTML.
export function escapeHtml(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
  })[c]);
}
