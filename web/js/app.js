// The dashboard page: the session picker, the state every panel reads, and the live loop (the
// session's events polled every half second; a new event refetches the session, its intent tree
// and the figures across sessions). window.okDashboard exposes what the browser tests and the
// bench read: when the first complete render ended, and when each attempt first appeared.
import { renderConvergence, renderCost, renderStrategies } from "./across_panels.js";
import { renderCharts } from "./charts_page.js";
import { renderDiff, renderTable, renderTree } from "./detail_panels.js";
import { escapeHtml, fmtSpeedup, fmtUsd } from "./model.js";
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
const okDashboard = { firstRenderMs: null, seen: {}, errors: [], polls: 0,
                      moduleStartMs: performance.now(), renderMs: {} };
window.okDashboard = okDashboard;

const $ = (id) => document.getElementById(id);
const panel = (name) => $(`panel-${name}`);

async function getJSON(path) {
  const res = await fetch(path, { cache: "no-store" });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || `${path}: HTTP ${res.status}`);
  return body;
}

function select(number) {
  state.selected = number;
  state.diff.b = number;
  $("diff-b").value = String(number);
  renderSelectionDependents();
  loadDiff();
}

function renderSelectionDependents() {
  timed("trajectory", () => renderTrajectory(panel("trajectory"), state, select));
  timed("utilisation", () => renderUtilisation(panel("utilisation"), state));
  timed("table", () => renderTable(panel("table"), state, select));
}

// Runs one panel's render and keeps how long it took (okDashboard.renderMs, for the bench).
function timed(name, render) {
  const t0 = performance.now();
  render();
  okDashboard.renderMs[name] = Math.round(performance.now() - t0);
}

function renderSession() {
  renderSelectionDependents();
  timed("roofline", () => renderRoofline(panel("roofline"), state));
  timed("landscape", () => renderLandscape(panel("landscape"), state));
  timed("tree", () => renderTree(panel("tree"), state, select));
}

function renderAcross() {
  timed("convergence", () => renderConvergence(panel("convergence"), state));
  timed("cost", () => renderCost(panel("cost"), state));
  timed("strategies", () => renderStrategies(panel("strategies"), state));
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
  for (const id of ["diff-a", "diff-b"]) {
    const sel = $(id);
    const keep = sel.value;
    sel.innerHTML = attempts.map((a) => `<option value="${Number(a.number)}">#${Number(a.number)} ` +
                                        `${escapeHtml(a.verdict)}` +
                                        `${a.speedup ? " " + fmtSpeedup(a.speedup) : ""}</option>`).join("");
    if (keep) sel.value = keep;
  }
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

async function loadDiff() {
  const { a, b } = state.diff;
  const id = state.id;
  const wanted = [...new Set([a, b])].filter((n) => n !== null && !sources.has(n));
  const got = await Promise.all(wanted.map((n) =>
    getJSON(`/api/sessions/${encodeURIComponent(id)}/attempts/${n}/source`)));
  wanted.forEach((n, i) => sources.set(n, got[i]));
  if (id === state.id) renderDiff(panel("diff"), state, sources);
}

function noteSeen() {
  const now = Date.now();
  for (const a of state.detail ? state.detail.attempts : []) {
    if (!(a.number in okDashboard.seen)) okDashboard.seen[a.number] = now;
  }
}

async function refreshSession() {
  const id = encodeURIComponent(state.id);
  const [detail, intents, aggregates, strategies] = await Promise.all([
    getJSON(`/api/sessions/${id}`), getJSON(`/api/sessions/${id}/intents`),
    getJSON("/api/aggregates"), getJSON("/api/strategies"),
  ]);
  state.detail = detail;
  state.tree = intents.tree;
  state.aggregates = aggregates;
  state.strategies = strategies;
  noteSeen();
  renderSummary();
  fillDiffPickers();
  const diff = loadDiff();  // the sources load while the plots draw
  renderSession();
  renderAcross();
  await diff;
}

// Re-reads the session list; true when a session was added or changed since the last read.
async function refreshSessions() {
  const { sessions } = await getJSON("/api/sessions");
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

async function openSession(id) {
  state.id = id;
  state.detail = null; state.tree = null; state.selected = null; state.lastEvent = 0;
  state.diff = { a: null, b: null };
  sources.clear();
  okDashboard.seen = {};
  const params = new URLSearchParams(location.search);
  params.set("session", id);
  history.replaceState(null, "", `?${params}`);
  // Events first: the page then polls from the newest one it has seen.
  const ev = await getJSON(`/api/sessions/${encodeURIComponent(id)}/events?after=0&limit=1000`);
  state.lastEvent = ev.last_id;
  await drainEvents();
  await refreshSession();
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
    if (b.dataset.page === "charts") renderCharts(panel("charts"), await getJSON("/api/charts"));
  }));
}

async function main() {
  bindControls();
  await refreshSessions();
  const wanted = new URLSearchParams(location.search).get("session");
  const id = state.sessions.some((s) => s.id === wanted) ? wanted
    : state.sessions.length ? state.sessions[0].id : null;
  if (id) {
    await openSession(id);
  } else {
    $("session-summary").textContent = "no session in this store yet: run `openkernel optimize`";
    renderSession();
    renderAcross();
    renderDiff(panel("diff"), state, sources);
  }
  okDashboard.firstRenderMs = performance.now();
  document.body.dataset.ready = "1";
  setTimeout(poll, POLL_MS);
}

main().catch((e) => {
  okDashboard.errors.push(String(e));
  $("session-summary").textContent = `error: ${e.message}`;
});
