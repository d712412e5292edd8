#include "llm/client.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "llm/json_schema.hpp"

namespace ok::llm {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using util::ErrorKind;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::chrono::milliseconds backoff(const RetryPolicy& p, int retry) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const double base = static_cast<double>(p.base_delay.count()) * std::pow(2.0, retry - 1);
  const double capped = std::min(base, static_cast<double>(p.max_delay.count()));
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return std::chrono::milliseconds(static_cast<int64_t>(capped * jitter(rng)));
}

// False when cancelled during the wait.
bool sleep_for(std::chrono::milliseconds d, const std::atomic<bool>* cancel) {
  const auto until = Clock::now() + d;
  while (Clock::now() < until) {
    if (cancel && cancel->load()) return false;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::chrono::milliseconds(20), until - Clock::now()));
  }
  return !(cancel && cancel->load());
}

util::Error cancelled() {
  return util::Error{ErrorKind::kCancelled, "the call was cancelled"};
}

}  // namespace

Client::Client(Endpoint endpoint, ClientOptions options)
    : Client(endpoint, make_provider(endpoint), options) {}

Client::Client(Endpoint endpoint, std::unique_ptr<Provider> provider, ClientOptions options)
    : endpoint_(std::move(endpoint)),
      provider_(std::move(provider)),
      options_(options),
      redactor_(endpoint_.api_key),
      semaphore_(&provider_semaphore(endpoint_.provider.name + " " + endpoint_.base_url,
                                     options.max_concurrency)) {}

util::Result<Response> Client::complete(const Request& req, StreamSink* sink) {
  if (options_.cancel && options_.cancel->load()) return std::unexpected(cancelled());
  if (options_.ledger) {
    if (options_.ledger->budget_usd() && !endpoint_.info)
      return util::fail(ErrorKind::kUsage,
                        fmt::format("--budget-usd needs the model's price, and the registry has "
                                    "none for {}; add it to {} or drop --budget-usd",
                                    endpoint_.display, Registry::default_path().string()));
    if (auto ok = options_.ledger->admit(); !ok) return std::unexpected(ok.error());
  }
  return call(req, sink);
}

util::Result<Response> Client::call(const Request& req, StreamSink* sink) {
  const std::string started_at = utc_now_iso();
  const auto t0 = Clock::now();
  const RetryPolicy& policy = options_.retry;
  AttemptOptions aopts{options_.timeouts, options_.cancel};
  std::optional<AttemptError> last;
  int attempts = 0;
  util::Result<Response> result = std::unexpected(cancelled());
  for (int attempt = 1; attempt <= policy.max_retries + 1; ++attempt) {
    if (attempt > 1) {
      auto delay = backoff(policy, attempt - 1);
      if (last->retry_after_s) {
        const auto asked = std::chrono::milliseconds(
            static_cast<int64_t>(std::ceil(*last->retry_after_s * 1000.0)));
        if (asked > policy.max_retry_after) {
          last->error.message += fmt::format(
              "; the server asks to retry after {:.0f} s, longer than the {} s this client "
              "waits",
              *last->retry_after_s, policy.max_retry_after.count() / 1000);
          break;
        }
        delay = std::max(delay, asked);
      }
      if (sink) sink->on_retry(attempt, last->error);
      if (!sleep_for(delay, options_.cancel)) {
        last = AttemptError{cancelled(), false, 0, std::nullopt};
        break;
      }
    }
    if (!semaphore_->acquire(options_.cancel)) {
      last = AttemptError{cancelled(), false, 0, std::nullopt};
      break;
    }
    Permit permit(semaphore_);
    attempts = attempt;
    auto r = provider_->send(req, aopts, sink);
    permit.reset();
    if (r) {
      result = std::move(*r);
      last.reset();
      break;
    }
    last = std::move(r.error());
    last->error.message = redactor_.apply(last->error.message);
    if (!last->retryable) break;
  }

  const double latency = ms_since(t0);
  long http_status = 0;
  if (last) {
    util::Error e = last->error;
    if (attempts > 1) e.message += fmt::format(" (gave up after {} attempts)", attempts);
    http_status = last->http_status;
    result = std::unexpected(std::move(e));
  } else {
    Response& r = *result;
    r.attempts = attempts;
    r.latency_ms = latency;
    const Cost c = compute_cost(endpoint_.info, r.usage);
    r.cost_usd = c.usd;
    r.cost_estimated = c.estimated;
  }
  if (options_.ledger) {
    if (result) {
      options_.ledger->add(*result);
    } else {
      options_.ledger->add_failure();
    }
  }
  record(req, result, http_status, attempts, latency, started_at);
  return result;
}

void Client::record(const Request& req, const util::Result<Response>& result, long http_status,
                    int attempts, double latency_ms, const std::string& started_at) {
  if (!options_.recorder) return;
  CallRecord rec;
  rec.session = req.session;
  rec.purpose = req.purpose;
  rec.provider = endpoint_.provider.name;
  rec.model = endpoint_.model_id;
  rec.base_url = endpoint_.base_url;
  rec.stream = req.stream;
  rec.request_json = redactor_.apply(request_to_json(req));
  rec.attempts = attempts;
  rec.latency_ms = latency_ms;
  rec.started_at = started_at;
  rec.http_status = http_status;
  if (result) {
    rec.ok = true;
    rec.response = redactor_.apply(result->text);
    rec.stop_reason = result->stop_reason;
    rec.usage = result->usage;
    rec.cost_usd = result->cost_usd;
    rec.cost_estimated = result->cost_estimated;
    rec.ttft_ms = result->ttft_ms;
    if (!result->model.empty()) rec.model = result->model;
  } else {
    rec.error_kind = std::string(error_kind_name(result.error().kind));
    rec.error = redactor_.apply(result.error().message);
  }
  // A failed write must not fail the call; the store reports its own errors elsewhere.
  (void)options_.recorder->record(rec);
}

util::Result<StructuredReply> Client::complete_json(const Request& req, const json& schema,
                                                    StreamSink* sink) {
  // The APIs want an object at the top; other schemas travel wrapped in {"value": ...}.
  const bool wrapped = !(schema.is_object() && schema.value("type", "") == "object");
  const json wire_schema = wrapped ? json{{"type", "object"},
                                          {"properties", {{"value", schema}}},
                                          {"required", json::array({"value"})}}
                                   : schema;
  Request r = req;
  r.json_schema = wire_schema;
  r.system += (r.system.empty() ? "" : "\n\n");
  r.system +=
      "Reply with only a JSON value, no prose and no code fences, matching this JSON "
      "schema:\n" +
      wire_schema.dump();

  auto check = [&](const Response& resp) -> std::expected<json, std::string> {
    auto parsed = parse_json_reply(resp.text);
    if (!parsed) return std::unexpected(parsed.error().message);
    const auto problems = validate_json(*parsed, wire_schema);
    if (!problems.empty()) {
      std::string all;
      for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
      return std::unexpected(all);
    }
    return wrapped ? (*parsed)["value"] : *parsed;
  };

  auto first = complete(r, sink);
  if (!first) return std::unexpected(first.error());
  auto value = check(*first);
  if (value) return StructuredReply{std::move(*value), std::move(*first), false};

  Request repair = r;
  repair.purpose = req.purpose + ":repair";
  repair.messages.push_back(
      Message{Role::kAssistant, first->text.empty() ? std::string("(empty reply)") : first->text});
  repair.messages.push_back(
      Message{Role::kUser, "Your reply did not match the schema: " + value.error() +
                               "\nReply again with only the corrected JSON."});
  auto second = complete(repair, sink);
  if (!second) return std::unexpected(second.error());
  auto fixed = check(*second);
  if (!fixed)
    return util::fail(ErrorKind::kProtocol,
                      redactor_.apply("the model's reply did not match the schema after one "
                                      "repair request: " +
                                      fixed.error()));
  return StructuredReply{std::move(*fixed), std::move(*second), true};
}

}  // namespace ok::llm
