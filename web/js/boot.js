// The page's first requests, made before its other modules are fetched and compiled: this
// module imports nothing, and index.html names it before app.js, so it runs as soon as the
// document is parsed (module scripts run in document order) while app.js's modules still load.
// It asks for the session list and for everything the session the address names shows (its
// detail, intent tree and the figures across sessions); app.js takes the answers over (`early`).
// getJSON and fetchSession are the page's one way of reading the API.

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

const wanted = new URLSearchParams(location.search).get("session");

// The requests made at once: `session` (null without ?session=; if the store has no such
// session its answer is dropped, one 404) and the session list.
export const early = { wanted, session: wanted ? fetchSession(wanted) : null, sessions: getJSON("/api/sessions") };
if (early.session) early.session.catch(() => {});  // awaited only when the session exists
early.sessions.catch(() => {});  // awaited by app.js, which reports its failure
