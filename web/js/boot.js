// The page's first requests, made before its other modules are fetched and compiled: this
// module imports nothing, and index.html loads it `async`, so it runs as soon as it is here,
// without waiting for the document's style sheets or app.js's modules (app.js imports the same
// module, so it runs once). It asks for the session list and for everything the session the
// address names shows (its detail, intent tree and the figures across sessions) and, when the
// list is here, for the sources the diff opens on; app.js takes the answers over (`early`).
// getJSON, fetchSession and askSources are the page's one way of reading the API.

export async function getJSON(path) {
  const res = await fetch(path, { cache: "no-store" });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || `${path}: HTTP ${res.status}`);
  return body;
}

// Everything the session's panels read, requested at once.
export function fetchSession(id) {
  const path = `/api/sessions/${encodeURIComponent(id)}`;
  return Promise.all([getJSON(path), getJSON(`${path}/intents`), getJSON("/api/aggregates"),
                      getJSON("/api/strategies")]);
}

export const sourcePath = (id, n) => `/api/sessions/${encodeURIComponent(id)}/attempts/${n}/source`;

// Asks for the sources the diff of session `id` first shows (a Map of attempt number to the
// request), from the session list (`sessions`), which names the best attempt and the count: the
// diff opens on the first attempt against the best (or the last; app.js, fillDiffPickers). A
// wrong guess costs a request the diff does not use.
export function askSources(sessions, id) {
  const asked = new Map();
  const s = sessions.find((x) => x.id === id);
  if (!s || !s.attempts) return asked;
  const second = s.best_attempt !== null && s.best_attempt !== 1 ? s.best_attempt : s.attempts;
  for (const n of new Set([1, second])) {
    const req = getJSON(sourcePath(id, n));
    req.catch(() => {});  // awaited only if the diff wants it
    asked.set(n, req);
  }
  return asked;
}

const wanted = new URLSearchParams(location.search).get("session");

// The requests made at once: `session` (null without ?session=; if the store has no such
// session its answer is dropped, one 404) and the session list; `sources`: askSources' Map for
// the wanted session, asked for as soon as the list is here (a round trip less before the first
// render than asking when app.js has the list).
const sessions = getJSON("/api/sessions");
export const early = {
  wanted, sessions, session: wanted ? fetchSession(wanted) : null,
  sources: wanted ? sessions.then((list) => askSources(list.sessions, wanted)) : null,
};
if (early.session) early.session.catch(() => {});  // awaited only when the session exists
if (early.sources) early.sources.catch(() => {});
early.sessions.catch(() => {});  // awaited by app.js, which reports its failure
