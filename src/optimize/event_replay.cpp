#include "optimize/event_replay.hpp"

#include <functional>
#include <nlohmann/json.hpp>

#include "optimize/event_payload.hpp"

namespace ok::optimize {

using nlohmann::json;

namespace {

json object_at(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_object() ? j[key] : json::object();
}

}  // namespace

bool replay_event(const store::EventRow& e, Observer& to) {
  json p = json::parse(e.payload_json, nullptr, false);
  if (!p.is_object()) p = json::object();
  const Standing s = payload::standing_from(e.total, p);
  const std::string& k = e.kind;
  if (k == "started") {
    SessionInfo info = payload::info_from(object_at(p, "info"));
    if (info.what.empty()) info.what = e.text;
    to.started(s, info);
  } else if (k == "strategy") {
    to.strategy(s, e.text);
  } else if (k == "generating") {
    to.generating(s, e.number, e.text);
  } else if (k == "model_text") {
    to.model_text(e.number, e.text);
  } else if (k == "model_retry") {
    to.model_retry(e.number, e.text);
  } else if (k == "evaluating") {
    to.evaluating(s, e.number, e.text);
  } else if (k == "attempt_finished") {
    Attempt a = payload::attempt_from(object_at(p, "attempt"));
    if (!p.contains("attempt")) {  // the row's own columns
      a.number = e.number;
      a.verdict = e.text;
    }
    to.attempt_finished(s, a);
  } else if (k == "diagnosed") {
    to.diagnosed(s, payload::diagnosis_from(e.number, object_at(p, "diagnosis")));
  } else if (k == "search_decision") {
    const std::string kind = p.contains("decision") && p["decision"].is_string()
                                 ? p["decision"].get<std::string>()
                                 : std::string();
    to.search_decision(s, e.number, kind, e.text);
  } else if (k == "warning") {
    to.warning(e.text);
  } else if (k == "control") {
    to.control(s, e.text);
  } else if (k == "stopped") {
    to.stopped(s, e.text);
  } else {
    return false;
  }
  return true;
}

EventFollower::EventFollower(std::filesystem::path db, std::string session)
    : db_(std::move(db)), session_(std::move(session)) {}

EventFollower::Key EventFollower::key_of(const store::EventRow& e) {
  return {.kind = e.kind,
          .time = e.time,
          .number = e.number,
          .text_size = e.text.size(),
          .text_hash = std::hash<std::string>{}(e.text)};
}

// Whether `k` continues (or starts) a run of a merge's copies.
bool EventFollower::is_copy(const Key& k) {
  if (echo_ && *echo_ < seen_.size() && seen_[*echo_] == k) {
    ++*echo_;
    return true;
  }
  echo_.reset();
  if (!seen_.empty() && seen_.front() == k) {
    echo_ = 1;
    return true;
  }
  return false;
}

util::Result<std::vector<store::EventRow>> EventFollower::poll(int limit) {
  if (!store_) {
    auto st = store::Store::open(db_);
    if (!st) return std::unexpected(st.error());
    store_.emplace(std::move(*st));
  }
  auto rows = store_->events_since(session_, last_id_, limit);
  if (!rows) return std::unexpected(rows.error());
  std::vector<store::EventRow> fresh;
  for (auto& r : *rows) {
    last_id_ = r.id;
    Key k = key_of(r);
    if (is_copy(k)) continue;
    seen_.push_back(std::move(k));
    if (r.kind == "stopped") finished_ = true;
    if (r.kind == "started") finished_ = false;
    fresh.push_back(std::move(r));
  }
  return fresh;
}

}  // namespace ok::optimize
