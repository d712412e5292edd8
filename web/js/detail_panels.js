// The session's text panels: the experiment table (sortable, filterable), the code diff of two
// chosen attempts (highlight.js) and the strategy tree (the world model's intents).
import {
  codeSegments, escapeHtml, filterRows, fmtPercent, fmtSpeedup, fmtUs, fmtUsd, intentForest,
  lineDiff, sortRows, splitHighlightedLines, statusCounts, visibleRows,
} from "./model.js";
import { rendered } from "./plots.js";

// highlight.js (the largest of the page's modules) is a dynamic import, not a static one, so
// that it does not hold up app.js, which requests the data: the diff waits for highlightLoaded.
// Relative, so that a page loaded from the versioned paths (/static/VERSION/...) imports the same
// versioned file index.html preloads.
let hljs = null;
export const highlightLoaded = import("../vendor/highlight.min.js").then((m) => { hljs = m.default; });

// The table's columns: key (sort and filter), header, cell text.
const COLUMNS = [
  ["number", "#", (a) => String(a.number)],
  ["verdict", "verdict", (a) => a.verdict],
  ["speedup", "speedup", (a) => fmtSpeedup(a.speedup)],
  ["runtime_us", "runtime", (a) => fmtUs(a.runtime_us)],
  ["sol", "speed of light", (a) => fmtPercent(a.roofline && a.roofline.fraction_of_speed_of_light)],
  ["bottleneck", "bottleneck", (a) => a.bottleneck || ""],
  ["cost_usd", "cost", (a) => fmtUsd(a.cost_usd)],
  ["wall_s", "wall", (a) => `${a.wall_s.toFixed(1)} s`],
  ["flags", "flags", (a) => (a.flags || []).join(", ")],
  ["what", "what", (a) => (a.intent && a.intent.title) || a.description || a.error || ""],
];

function field(a, key) {
  if (key === "sol") return a.roofline ? a.roofline.fraction_of_speed_of_light : null;
  if (key === "what") return (a.intent && a.intent.title) || a.description || a.error || "";
  if (key === "flags") return (a.flags || []).join(",");
  return a[key];
}

// The table draws only the rows in and near its scrolled view (a 500-attempt session would put
// 5,500 cells in the page, whose layout was a large part of the first render; docs/dashboard.md,
// "Render time"): the others are spacer rows of the same height. Rows have one height
// (style.css: cells do not wrap).
const ROW_PX = 24;    // a row's height until one has been measured
const VIEW_PX = 420;  // the scroll box's height (style.css: .scroll)
const OVERSCAN = 20;  // rows drawn beyond each end of the view

function rowHtml(a, state) {
  const cls = [a.correct ? "ok" : "bad", a.number === state.selected ? "selected" : ""].join(" ");
  return `<tr data-number="${a.number}" class="${cls}">` +
    COLUMNS.map(([key, , cell]) => `<td class="c-${key}">${escapeHtml(cell(a))}</td>`).join("") +
    "</tr>";
}

export function renderTable(panel, state, onSelect) {
  const d = state.detail;
  const attempts = d ? d.attempts : [];
  if (!attempts.length) return rendered(panel, "empty", "no attempt recorded yet");
  const t = state.table;
  const textOf = (a) => COLUMNS.map(([, , cell]) => cell(a)).join(" ");
  const rows = sortRows(filterRows(attempts, t.filter, textOf, field), (a) => field(a, t.sort),
                        t.descending);
  const head = COLUMNS.map(([key, title]) => {
    const mark = key === t.sort ? (t.descending ? " ▼" : " ▲") : "";
    return `<th data-key="${key}" aria-sort="${key === t.sort ? (t.descending ? "descending" : "ascending") : "none"}">` +
      `${escapeHtml(title)}${mark}</th>`;
  }).join("");
  const box = panel.querySelector(".body");
  // A redraw of the same order and filter (a live update, a selection) stays where it was
  // scrolled; another order or filter starts at the top.
  const old = box.querySelector(".scroll"), sig = JSON.stringify([t.sort, t.descending, t.filter]);
  const keepScroll = old && box.dataset.order === sig ? old.scrollTop : 0;
  box.dataset.order = sig;
  box.innerHTML = `<p class="count">${rows.length} of ${attempts.length} attempts</p>` +
    `<div class="scroll table-rows"><table><thead><tr>${head}</tr></thead><tbody></tbody></table></div>`;
  const scroller = box.querySelector(".scroll"), tbody = box.querySelector("tbody");
  let rowPx = ROW_PX, drawn = null, frame = 0;
  const spacer = (n) => (n > 0 ? `<tr class="spacer" aria-hidden="true"><td colspan="${COLUMNS.length}" ` +
                                 `style="height:${n * rowPx}px"></td></tr>` : "");
  // `top`: the scroll position; a new table's is 0 (reading it would lay out the page).
  const draw = (top = scroller.scrollTop) => {
    const [first, end] = visibleRows(rows.length, top, rowPx, VIEW_PX, OVERSCAN);
    if (drawn && drawn[0] === first && drawn[1] === end) return;
    drawn = [first, end];
    tbody.innerHTML = spacer(first) + rows.slice(first, end).map((a) => rowHtml(a, state)).join("") +
      spacer(rows.length - end);
  };
  draw(0);
  if (keepScroll) { scroller.scrollTop = keepScroll; draw(); }
  scroller.addEventListener("scroll", () => {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      // The real row height, once: spacers of the estimate would misplace the rows a little.
      const row = tbody.querySelector("tr[data-number]");
      const h = row ? row.getBoundingClientRect().height : 0;
      if (h > 0 && Math.abs(h - rowPx) > 0.01) { rowPx = h; drawn = null; }
      draw();
    });
  });
  box.querySelectorAll("th").forEach((th) => th.addEventListener("click", () => {
    const key = th.dataset.key;
    t.descending = t.sort === key ? !t.descending : key === "speedup";
    t.sort = key;
    renderTable(panel, state, onSelect);
  }));
  tbody.addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr[data-number]");
    if (tr) onSelect(Number(tr.dataset.number));
  });
  rendered(panel, "ready");
}

// Every line of a source as highlighted HTML, each language stretch highlighted whole.
function highlightLines(source, language) {
  const out = [];
  for (const seg of codeSegments(source, language)) {
    const html = hljs.highlight(seg.lines.join("\n"), { language: seg.lang, ignoreIllegals: true }).value;
    out.push(...splitHighlightedLines(html));
  }
  return out;
}

export function renderDiff(panel, state, sources) {
  const { a, b } = state.diff;
  const sa = sources.get(a), sb = sources.get(b);
  const box = panel.querySelector(".body");
  if (a === null || b === null || !sa || !sb) {
    return rendered(panel, "empty", "choose two attempts above");
  }
  if (sa.source === null || sb.source === null) {
    return rendered(panel, "empty", (sa.source === null ? sa : sb).reason);
  }
  const la = highlightLines(sa.source, sa.language), lb = highlightLines(sb.source, sb.language);
  const ops = lineDiff(sa.source, sb.source);
  const added = ops.filter((o) => o.op === "add").length;
  const removed = ops.filter((o) => o.op === "del").length;
  const rows = ops.map((o) => {
    const html = o.op === "add" ? lb[o.b - 1] : la[o.a - 1];
    const sign = o.op === "add" ? "+" : o.op === "del" ? "-" : " ";
    return `<tr class="d-${o.op}"><td class="ln">${o.a ?? ""}</td><td class="ln">${o.b ?? ""}</td>` +
      `<td class="sign">${sign}</td><td class="code"><code>${html ?? ""}</code></td></tr>`;
  }).join("");
  box.innerHTML = `<p class="count">#${a} ${escapeHtml(sa.path)} → #${b} ${escapeHtml(sb.path)}: ` +
    `<span class="added">+${added}</span> <span class="removed">-${removed}</span></p>` +
    `<div class="scroll diff hljs"><table>${rows}</table></div>`;
  rendered(panel, "ready");
}

const STATUS_MARK = { succeeded: "✔", failed: "✘", pruned: "–", trying: "…", open: "○" };

function intentHtml(node) {
  const i = node.intent;
  const evidence = (i.evidence || []).map((n) => `<a href="#" data-attempt="${Number(n)}">#${Number(n)}</a>`)
    .join(" ");
  const head = `<span class="status s-${escapeHtml(i.status)}" title="${escapeHtml(i.status)}">` +
    `${STATUS_MARK[i.status] || "?"}</span> <span class="title">${escapeHtml(i.title)}</span>` +
    ` <span class="meta">p ${Number(i.priority || 0).toFixed(3)} · c ${Number(i.confidence || 0).toFixed(2)}` +
    `${evidence ? " · " + evidence : ""}${i.note ? " · " + escapeHtml(i.note) : ""}</span>`;
  if (!node.children.length) return `<li data-intent="${Number(i.id)}">${head}</li>`;
  return `<li data-intent="${Number(i.id)}"><details open><summary>${head}</summary><ul>` +
    node.children.map(intentHtml).join("") + "</ul></details></li>";
}

export function renderTree(panel, state, onSelect) {
  const tree = state.tree;
  if (!tree || !Array.isArray(tree.intents)) {
    return rendered(panel, "empty", "this session has no intent tree (it is recorded after " +
      "the first evaluation of an engine search)");
  }
  const counts = statusCounts(tree.intents);
  const summary = `${escapeHtml(tree.policy || "")} search, strategy ` +
    `${escapeHtml((tree.strategy && tree.strategy.id) || "?")}, ${escapeHtml(tree.problem_class || "")}` +
    ` problems; ${tree.intents.length} intents: ` +
    Object.entries(counts).filter(([, n]) => n).map(([s, n]) => `${n} ${s}`).join(", ");
  const box = panel.querySelector(".body");
  box.innerHTML = `<p class="count">${summary}</p><div class="scroll tree"><ul>` +
    intentForest(tree.intents).map(intentHtml).join("") + "</ul></div>";
  box.querySelectorAll("a[data-attempt]").forEach((el) => el.addEventListener("click", (ev) => {
    ev.preventDefault();
    onSelect(Number(el.dataset.attempt));
  }));
  rendered(panel, "ready");
}
