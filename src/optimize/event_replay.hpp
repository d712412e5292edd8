// The persisted events (docs/store.md, "events") back as Observer calls, for a front end that
// follows a session another process runs, or one that has finished (`kernel-code watch`): it
// polls an EventFollower and hands each row to replay_event, and so renders the same typed
// events as a front end that runs the engine in-process. Nothing here parses text output.
//
// EventFollower owns a store connection of its own; not thread-safe (one follower per thread).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "optimize/observer.hpp"
#include "store/store.hpp"

namespace ok::optimize {

// Turns a persisted event back into the Observer call that produced it, with the values it was
// called with (model_text and all; payloads of older engines give their fields' defaults).
// Unknown kinds are ignored (a newer engine's store): returns false for them.
bool replay_event(const store::EventRow& e, Observer& to);

// Follows one session's events in a store that another process writes (WAL: reading never blocks
// the writer). A merge of stores (the SLURM sweep) deletes a session's events and appends copies
// of them in their order under new ids: the follower recognises such a run of copies (it starts
// with a copy of the session's first event and goes on with the events in the order seen) and
// skips it, so every event is returned once, genuine repeats (the same model text twice in one
// millisecond) included.
class EventFollower {
 public:
  // Opens nothing yet: the store is opened by the first poll.
  EventFollower(std::filesystem::path db, std::string session);
  // The events recorded since the last call (at most `limit` rows read), oldest first.
  util::Result<std::vector<store::EventRow>> poll(int limit = 1000);
  // A `stopped` event was seen and no `started` (a resume) came after it.
  bool finished() const { return finished_; }

 private:
  // What identifies an event across a merge's copy: kind, number, time and text (by its length
  // and hash).
  struct Key {
    std::string kind, time;
    int number = 0;
    size_t text_size = 0, text_hash = 0;
    friend bool operator==(const Key&, const Key&) = default;
  };
  static Key key_of(const store::EventRow& e);
  bool is_copy(const Key& k);

  std::filesystem::path db_;
  std::string session_;
  std::optional<store::Store> store_;
  int64_t last_id_ = 0;
  std::vector<Key> seen_;  // the events returned, in order
  // While a run of copies is being skipped: the index in seen_ of the next expected copy.
  std::optional<size_t> echo_;
  bool finished_ = false;
};

}  // namespace ok::optimize
