#include <gtest/gtest.h>

#include "llm/sse.hpp"

namespace ok::llm {
namespace {

std::vector<SseEvent> feed_in_pieces(std::string_view text, size_t piece, SseParser& p) {
  std::vector<SseEvent> out;
  for (size_t i = 0; i < text.size(); i += piece) p.feed(text.substr(i, piece), out);
  return out;
}

const std::string kStream =
    ": comment line\r\n"
    "event: message_start\r\n"
    "data: {\"a\":1}\r\n"
    "\r\n"
    "data: first\n"
    "data:second\n"
    "\n"
    "event: ping\r"
    "data: x\r"
    "\r"
    "id: 7\n"
    "retry: 100\n"
    "\n"
    "data: [DONE]\n\n";

TEST(LlmSse, ParsesEventsWhateverTheChunking) {
  for (size_t piece : {size_t{1}, size_t{2}, size_t{5}, size_t{1000}}) {
    SseParser p;
    auto ev = feed_in_pieces(kStream, piece, p);
    ASSERT_EQ(ev.size(), 4u) << "piece " << piece;
    EXPECT_EQ(ev[0].event, "message_start");
    EXPECT_EQ(ev[0].data, "{\"a\":1}");
    EXPECT_EQ(ev[1].event, "");
    EXPECT_EQ(ev[1].data, "first\nsecond");
    EXPECT_EQ(ev[2].event, "ping");
    EXPECT_EQ(ev[2].data, "x");
    EXPECT_EQ(ev[3].data, "[DONE]");
    EXPECT_FALSE(p.has_partial());
  }
}

TEST(LlmSse, ReportsAnUnfinishedEvent) {
  SseParser p;
  std::vector<SseEvent> out;
  p.feed("data: {\"complete\":true}\n\ndata: {\"cut", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(p.has_partial());
  SseParser q;
  q.feed("data: x\n", out);  // the field arrived but the blank line did not
  EXPECT_TRUE(q.has_partial());
}

TEST(LlmSse, EventWithoutDataIsDropped) {
  SseParser p;
  std::vector<SseEvent> out;
  p.feed("event: lonely\n\n:keepalive\n\n", out);
  EXPECT_TRUE(out.empty());
}

TEST(LlmSse, OverlongLineStopsTheParser) {
  SseParser p;
  std::vector<SseEvent> out;
  std::string huge((4u << 20) + 1, 'a');
  p.feed("data: ", out);
  p.feed(huge, out);
  EXPECT_TRUE(p.overflowed());
  p.feed("\n\ndata: later\n\n", out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace ok::llm
