#include "optimize/observer.hpp"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "optimize/agents.hpp"
#include "optimize/event_payload.hpp"

namespace ok::optimize {

using nlohmann::json;

void FanOut::started(const Standing& s, const SessionInfo& info) {
  for (auto* o : observers_) o->started(s, info);
}
void FanOut::strategy(const Standing& s, const std::string& text) {
  for (auto* o : observers_) o->strategy(s, text);
}
void FanOut::generating(const Standing& s, int number, const std::string& what) {
  for (auto* o : observers_) o->generating(s, number, what);
}
void FanOut::model_text(int number, std::string_view text) {
  for (auto* o : observers_) o->model_text(number, text);
}
void FanOut::model_retry(int number, const std::string& why) {
  for (auto* o : observers_) o->model_retry(number, why);
}
void FanOut::evaluating(const Standing& s, int number, const std::string& description) {
  for (auto* o : observers_) o->evaluating(s, number, description);
}
void FanOut::attempt_finished(const Standing& s, const Attempt& a) {
  for (auto* o : observers_) o->attempt_finished(s, a);
}
void FanOut::diagnosed(const Standing& s, const Attempt& a) {
  for (auto* o : observers_) o->diagnosed(s, a);
}
void FanOut::search_decision(const Standing& s, int intent, const std::string& kind,
                             const std::string& text) {
  for (auto* o : observers_) o->search_decision(s, intent, kind, text);
}
void FanOut::warning(const std::string& text) {
  for (auto* o : observers_) o->warning(text);
}
void FanOut::control(const Standing& s, const std::string& state) {
  for (auto* o : observers_) o->control(s, state);
}
void FanOut::stopped(const Standing& s, const std::string& reason) {
  for (auto* o : observers_) o->stopped(s, reason);
}

namespace {

// The payload of an event with the running figures, `extra` merged in.
std::string with_standing(const Standing& s, json extra = json::object()) {
  extra.update(payload::standing(s));
  return extra.dump();
}

store::EventRow row(const char* kind, int number, int total, std::string text,
                    std::string payload_json = "{}") {
  store::EventRow r;
  r.kind = kind;
  r.number = number;
  r.total = total;
  r.text = std::move(text);
  r.payload_json = std::move(payload_json);
  return r;
}

}  // namespace

util::Result<std::unique_ptr<StoreObserver>> StoreObserver::open(const std::filesystem::path& db,
                                                                 std::string session) {
  auto st = store::Store::open(db);
  if (!st) return std::unexpected(st.error());
  return std::unique_ptr<StoreObserver>(new StoreObserver(std::move(*st), std::move(session)));
}

void StoreObserver::append(store::EventRow r) {
  r.session = session_;
  std::lock_guard lock(mu_);
  if (auto w = store_.append_event(r); !w) {
    ++lost_;
    if (!error_) error_ = w.error();
  }
}

std::optional<util::Error> StoreObserver::error() const {
  std::lock_guard lock(mu_);
  if (!error_) return std::nullopt;
  return util::Error{error_->kind, fmt::format("{} event{} lost; the first because: {}", lost_,
                                               lost_ == 1 ? "" : "s", error_->message)};
}

void RowObserver::started(const Standing& s, const SessionInfo& info) {
  append(row("started", 0, s.total, info.what, with_standing(s, {{"info", payload::info(info)}})));
}
void RowObserver::strategy(const Standing& s, const std::string& text) {
  append(row("strategy", 0, s.total, text, with_standing(s)));
}
void RowObserver::generating(const Standing& s, int number, const std::string& what) {
  append(row("generating", number, s.total, what, with_standing(s)));
}
void RowObserver::model_text(int number, std::string_view text) {
  append(row("model_text", number, 0, std::string(text)));
}
void RowObserver::model_retry(int number, const std::string& why) {
  append(row("model_retry", number, 0, why));
}
void RowObserver::evaluating(const Standing& s, int number, const std::string& description) {
  append(row("evaluating", number, s.total, description, with_standing(s)));
}
void RowObserver::attempt_finished(const Standing& s, const Attempt& a) {
  append(row("attempt_finished", a.number, s.total, a.verdict,
             with_standing(s, {{"attempt", payload::attempt(a)}})));
}
void RowObserver::diagnosed(const Standing& s, const Attempt& a) {
  append(row("diagnosed", a.number, s.total, payload::bottleneck(a),
             with_standing(s, {{"diagnosis", payload::diagnosis(a)}})));
}
void RowObserver::search_decision(const Standing& s, int intent, const std::string& kind,
                                  const std::string& text) {
  append(row("search_decision", intent, s.total, text, with_standing(s, {{"decision", kind}})));
}
void RowObserver::warning(const std::string& text) {
  append(row("warning", 0, 0, text));
}
void RowObserver::control(const Standing& s, const std::string& state) {
  append(row("control", 0, s.total, state, with_standing(s)));
}
void RowObserver::stopped(const Standing& s, const std::string& reason) {
  append(row("stopped", 0, s.total, reason, with_standing(s)));
}

}  // namespace ok::optimize
