// The dashboard page: the session picker, the state every panel reads, and the live loop (the
// session's events polled every half second; a new event refetches the session, its intent tree
// and the figures across sessions). window.okDashboard exposes what the browser tests and the
// bench read: when the first complete render ended, how long each panel took, and when each
// attempt first appeared.
//
// The first render is ordered for speed (docs/dashboard.md, "Render time"): every request of the
// chosen session goes out at once when this module starts; every panel is drawn as soon as the
// data and the diff's two sources are here, in one frame. No panel needs Plotly (the 2D plots are
// SVG charts of our own, chart.js); the Charts page loads it when it is first opened.
import { renderConvergence, renderCost, renderStrategies } from "./across_panels.js";
import { renderCharts } from "./charts_page.js";
import { highlightLoaded, renderDiff, renderTable, renderTree } from "./detail_panels.js";
import { escapeHtml, fmtSpeedup, fmtUsd } from "./model.js";
import { early, fetchSession, getJSON } from "./boot.js";
import { loadPlotly } from "./plots.js";
import {
  renderLandscape, renderRoofline, renderTrajectory, renderUtilisation,
} from "./session_panels.js";

const POLL_MS = 500;
const SESSIONS_EVERY = 10;  // polls between refreshes of the session list

const state = {
  sessions: [], id: null, detail: null, tree: null, aggregates: null, strategies: null,
  selected: null, lastEvent: 0, stopped: false,
  table: { sort: "number", descending: false, filter: "" },
  trajectoryX: "attempt",
  diff: { a: null, b: null },
};
const sources = new Map();  // attempt number -> its source JSON (this session's)
const asked = new Map();    // attempt number -> the request for its source, made ahead
// Times in ms since navigation: moduleStartMs (this module runs), dataMs (the session's data is
// here), sourcesMs (the diff's two sources here), drawnMs (every panel drawn), firstRenderMs (the
// frame with every panel painted); renderMs: each panel's drawing time.
const okDashboard = { firstRenderMs: null, seen: {}, errors: [], polls: 0,
                      moduleStartMs: performance.now(), dataMs: null, sourcesMs: null,
                      drawnMs: null, renderMs: {} };
// Keeps the first time of a mark.
const mark = (name) => { if (okDashboard[name] === null) okDashboard[name] = performance.now(); };
window.okDashboard = okDashboard;

const $ = (id) => document.getElementById(id);
const panel = (name) => $(`panel-${name}`);


function select(number) {
  state.selected = number;
  state.diff.b = number;
  $("diff-b").value = String(number);
  renderSelectionDependents();
  loadDiff();
}

function renderSelectionDependents() {
  timed("table", () => renderTable(panel("table"), state, select));
  timed("utilisation", () => renderUtilisation(panel("utilisation"), state));
  timed("trajectory", () => renderTrajectory(panel("trajectory"), state, select));
}

// Runs one panel's render and keeps how long it took (okDashboard.renderMs, for the bench).
function timed(name, render) {
  const t0 = performance.now();
  render();
  okDashboard.renderMs[name] = Math.round(performance.now() - t0);
}

// The widths of the panels that draw to a size, read once before any panel is drawn: one
// layout of the page, where each panel reading its own after the others wrote would lay the
// page out again (docs/dashboard.md, "Render time").
function measureWidths() {
  const names = ["trajectory", "roofline", "landscape", "convergence", "cost", "strategies"];
  return Object.fromEntries(names.map((n) => [n, panel(n).querySelector(".body").clientWidth]));
}

// Every panel of the session and across sessions; `widths`: measureWidths', when read earlier.
function renderPanels(widths = measureWidths()) {
  state.widths = widths;
  // The landscape first: its canvas' font is resolved against the page's style, which the
  // panels written before it would have to be styled for first.
  timed("landscape", () => renderLandscape(panel("landscape"), state, select));
  timed("table", () => renderTable(panel("table"), state, select));
  timed("tree", () => renderTree(panel("tree"), state, select));
  timed("utilisation", () => renderUtilisation(panel("utilisation"), state));
  timed("trajectory", () => renderTrajectory(panel("trajectory"), state, select));
  timed("roofline", () => renderRoofline(panel("roofline"), state, select));
  renderAcross();
  state.widths = null;  // later renders, after the page may have changed, read their own
}

function renderAcross() {
  timed("convergence", () => renderConvergence(panel("convergence"), state));
  timed("cost", () => renderCost(panel("cost"), state));
  timed("strategies", () => renderStrategies(panel("strategies"), state));
}

// Resolves after a frame has been painted. A hidden tab paints no frame: there it resolves in
// the next task, so the live loop goes on.
function nextPaint() {
  if (document.hidden) return new Promise((resolve) => setTimeout(resolve, 0));
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

function renderSummary() {
  const s = state.detail && state.detail.session;
  $("session-summary").textContent = s
    ? `${s.name} · ${s.backend} · ${s.model} · ${s.status} · ${s.attempts} attempts · best ` +
      `${fmtSpeedup(s.best_speedup)}${s.best_attempt !== null ? ` (#${s.best_attempt})` : ""} · ` +
      `${fmtUsd(s.cost_usd)}${state.detail.device ? ` · ${state.detail.device.name}` : ""}`
    : "no session";
  $("live").textContent = !s ? "" : s.status === "running" ? "● live" : s.status;
  $("live").className = `live ${s && s.status === "running" ? "on" : ""}`;
}

function fillDiffPickers() {
  const attempts = state.detail ? state.detail.attempts : [];
  // The options are written once and copied to the second picker (parsing is the costly part).
  const [selA, selB] = [$("diff-a"), $("diff-b")];
  const keep = [selA.value, selB.value];
  selA.innerHTML = attempts.map((a) => `<option value="${Number(a.number)}">#${Number(a.number)} ` +
                                       `${escapeHtml(a.verdict)}` +
                                       `${a.speedup ? " " + fmtSpeedup(a.speedup) : ""}</option>`).join("");
  selB.replaceChildren(...selA.cloneNode(true).children);
  [selA, selB].forEach((sel, i) => { if (keep[i]) sel.value = keep[i]; });
  if (attempts.length && state.diff.a === null) {
    const best = state.detail.session.best_attempt;
    state.diff.a = attempts[0].number;
    state.diff.b = best !== null && best !== attempts[0].number ? best : attempts[attempts.length - 1].number;
  }
  if (state.diff.a !== null) {
    $("diff-a").value = String(state.diff.a);
    $("diff-b").value = String(state.diff.b);
  }
}

const sourcePath = (id, n) => `/api/sessions/${encodeURIComponent(id)}/attempts/${n}/source`;

// Asks for the sources the diff will first show, with the session's data rather than after it
// (a round trip less before the first render): the session list names the best attempt and the
// count, and the diff opens on the first attempt against the best (or the last). A wrong guess
// costs a request the diff does not use.
function askSources(id) {
  const s = state.sessions.find((x) => x.id === id);
  if (!s || !s.attempts) return;
  const second = s.best_attempt !== null && s.best_attempt !== 1 ? s.best_attempt : s.attempts;
  for (const n of new Set([1, second])) {
    const req = getJSON(sourcePath(id, n));
    req.catch(() => {});  // awaited only if the diff wants it
    asked.set(n, req);
  }
}

async function loadDiff() {
  const { a, b } = state.diff;
  const id = state.id;
  const wanted = [...new Set([a, b])].filter((n) => n !== null && !sources.has(n));
  const got = await Promise.all(wanted.map((n) => asked.get(n) || getJSON(sourcePath(id, n))));
  wanted.forEach((n, i) => sources.set(n, got[i]));
  await highlightLoaded;
  if (id === state.id) timed("diff", () => renderDiff(panel("diff"), state, sources));
}

function noteSeen() {
  const now = Date.now();
  for (const a of state.detail ? state.detail.attempts : []) {
    if (!(a.number in okDashboard.seen)) okDashboard.seen[a.number] = now;
  }
}


// Takes a session's data (fetchSession's, or fetched now) and redraws every panel.
async function refreshSession(fetched = fetchSession(state.id), id = state.id) {
  const [detail, intents, aggregates, strategies] = await fetched;
  // Another session was opened while this one's data was on its way: it is stale, drop it.
  if (id !== state.id) return;
  // Measured before anything is written: the page is still laid out from its last frame, so
  // this costs no layout (after the diff and the pickers are written it would).
  const widths = measureWidths();
  state.detail = detail;
  state.tree = intents.tree;
  state.aggregates = aggregates;
  state.strategies = strategies;
  // The detail's newest event was read before its attempts: polling from it misses none.
  state.lastEvent = Math.max(state.lastEvent, detail.last_event_id || 0);
  mark("dataMs");
  noteSeen();
  renderSummary();
  fillDiffPickers();
  // The diff's two sources first (one round trip, a few ms, the page nearly empty meanwhile):
  // drawn before the panels, their answers would wait behind them, and the diff would come in
  // a second frame, a second paint of the whole page.
  // A diff that fails does not keep the panels off the screen; its error is the render's.
  const diff = loadDiff();
  await diff.catch(() => {});
  mark("sourcesMs");
  renderPanels(widths);
  mark("drawnMs");
  await diff;
}

// Re-reads the session list (or takes `answer`, its request made already); true when a session
// was added or changed since the last read.
async function refreshSessions(answer = getJSON("/api/sessions")) {
  const { sessions } = await answer;
  const sig = (ss) => ss.map((s) => `${s.id}/${s.updated_at}/${s.attempts}`).join(",");
  const changed = sig(sessions) !== sig(state.sessions);
  state.sessions = sessions;
  const picker = $("session-picker");
  picker.innerHTML = sessions.map((s) => `<option value="${escapeHtml(encodeURIComponent(s.id))}">` +
    `${escapeHtml(s.id)} — ${escapeHtml(s.name)} (${escapeHtml(s.model)}, ${Number(s.attempts)} ` +
    `attempts, ${escapeHtml(s.status)})</option>`).join("");
  if (state.id) picker.value = encodeURIComponent(state.id);
  return changed;
}

// Another session moved: the panels across sessions read it.
async function refreshAcross() {
  const [aggregates, strategies] = await Promise.all([getJSON("/api/aggregates"),
                                                      getJSON("/api/strategies")]);
  state.aggregates = aggregates;
  state.strategies = strategies;
  renderAcross();
}

// Shows session `id`; `fetched`: its data when already requested (fetchSession).
async function openSession(id, fetched = fetchSession(id)) {
  state.id = id;
  state.detail = null; state.tree = null; state.selected = null; state.lastEvent = 0;
  state.diff = { a: null, b: null };
  sources.clear();
  asked.clear();
  askSources(id);
  okDashboard.seen = {};
  const params = new URLSearchParams(location.search);
  params.set("session", id);
  history.replaceState(null, "", `?${params}`);
  // The page then polls the events above the detail's last_event_id.
  await refreshSession(fetched);
}

async function drainEvents() {
  let fresh = false;
  for (;;) {
    const ev = await getJSON(`/api/sessions/${encodeURIComponent(state.id)}/events?after=${state.lastEvent}`);
    if (!ev.events.length) return fresh;
    state.lastEvent = ev.last_id;
    fresh = true;
  }
}

async function poll() {
  okDashboard.polls++;
  try {
    const others = okDashboard.polls % SESSIONS_EVERY === 0 && await refreshSessions();
    if (state.id && await drainEvents()) await refreshSession();
    else if (others) await refreshAcross();
  } catch (e) {
    okDashboard.errors.push(String(e));
  }
  setTimeout(poll, POLL_MS);
}

function bindControls() {
  $("session-picker").addEventListener("change", (e) => openSession(decodeURIComponent(e.target.value)));
  $("table-filter").addEventListener("input", (e) => {
    state.table.filter = e.target.value;
    renderTable(panel("table"), state, select);
  });
  for (const side of ["a", "b"]) {
    $(`diff-${side}`).addEventListener("change", (e) => {
      state.diff[side] = Number(e.target.value);
      loadDiff();
    });
  }
  panel("trajectory").querySelectorAll("button[data-x]").forEach((b) => b.addEventListener("click", () => {
    state.trajectoryX = b.dataset.x;
    panel("trajectory").querySelectorAll("button[data-x]").forEach((o) => o.classList.toggle("active", o === b));
    renderTrajectory(panel("trajectory"), state, select);
  }));
  document.querySelectorAll("nav button[data-page]").forEach((b) => b.addEventListener("click", async () => {
    document.querySelectorAll("nav button").forEach((o) => o.classList.toggle("active", o === b));
    document.querySelectorAll(".page").forEach((p) => { p.hidden = p.id !== `page-${b.dataset.page}`; });
    if (b.dataset.page !== "charts") return;
    // The Charts page draws box plots and heatmaps: Plotly's cartesian bundle, loaded now.
    const [data] = await Promise.all([getJSON("/api/charts"), loadPlotly()]);
    if (!$("page-charts").hidden) renderCharts(panel("charts"), data);
  }));
}

async function main() {
  bindControls();
  // The session the address names was requested with the list, by boot.js; if the list has no
  // such session that answer is dropped and the newest session is shown.
  await refreshSessions(early.sessions);
  const known = state.sessions.some((s) => s.id === early.wanted);
  const id = known ? early.wanted : state.sessions.length ? state.sessions[0].id : null;
  if (id) {
    await openSession(id, known ? early.session : undefined);
  } else {
    $("session-summary").textContent = "no session in this store yet: run `openkernel optimize`";
    renderPanels();
    renderDiff(panel("diff"), state, sources);
    mark("drawnMs");
  }
  await nextPaint();  // complete means on screen: the frame with the last panel painted
  okDashboard.firstRenderMs = performance.now();
  document.body.dataset.ready = "1";
  setTimeout(poll, POLL_MS);
}

main().catch((e) => {
  okDashboard.errors.push(String(e));
  $("session-summary").textContent = `error: ${e.message}`;
});
