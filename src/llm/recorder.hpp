// Recording of every LLM call (request, reply, usage, cost, timing, error) into the store's
// llm_calls table, for traces and the dashboard. Schema: docs/llm.md.
//
// CallRecorder is the seam the Client writes to. StoreRecorder turns a record into the store's row
// (store::LlmCallRow; the SQL is the store's) and serialises its writes with its own mutex, so one
// recorder may serve many threads; the Store it borrows must not be used by another thread at the
// same time (open() gives it a connection of its own). Records are expected to be redacted
// already; StoreRecorder redacts again with the secrets it was given.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "llm/redact.hpp"
#include "llm/types.hpp"
#include "store/store.hpp"
#include "util/error.hpp"

namespace ok::llm {

struct CallRecord {
  std::string session;
  std::string purpose;
  std::string provider;
  std::string model;
  std::string base_url;
  bool stream = false;
  std::string request_json;  // system, messages and parameters; never headers or keys
  std::optional<std::string> response;
  std::string stop_reason;
  bool ok = false;
  std::string error_kind;  // empty on success
  std::string error;
  long http_status = 0;
  int attempts = 0;
  std::optional<Usage> usage;
  std::optional<double> cost_usd;
  bool cost_estimated = false;
  double latency_ms = 0;
  std::optional<double> ttft_ms;
  std::string started_at;  // UTC, ISO 8601 with milliseconds
};

class CallRecorder {
 public:
  virtual ~CallRecorder() = default;
  virtual util::Result<void> record(const CallRecord& rec) = 0;
};

class StoreRecorder final : public CallRecorder {
 public:
  // Borrows `store`, which must outlive this.
  explicit StoreRecorder(store::Store& store, Redactor redactor = {})
      : store_(&store), redactor_(std::move(redactor)) {}
  // Opens (and migrates) the store at `path` on a connection this recorder owns.
  static util::Result<std::unique_ptr<StoreRecorder>> open(const std::filesystem::path& path,
                                                           Redactor redactor = {});

  util::Result<void> record(const CallRecord& rec) override;
  // The row id of the last record written.
  int64_t last_id() const;

 private:
  StoreRecorder(store::Store owned, Redactor redactor);

  std::optional<store::Store> owned_;
  store::Store* store_;
  Redactor redactor_;
  mutable std::mutex mu_;
  int64_t last_id_ = 0;
};

// The request as recorded: provider-neutral, without credentials.
std::string request_to_json(const Request& req);
// Now, as UTC ISO 8601 with milliseconds.
std::string utc_now_iso();

}  // namespace ok::llm
