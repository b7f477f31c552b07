// SPDX-License-Identifier: Apache-2.0
#include "k8s/watch_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/api_error.h"

namespace skb::k8s {
namespace {

using ::testing::HasSubstr;

std::string Event(const std::string& type, const std::string& name, const std::string& rv) {
  return nlohmann::json(
             {{"type", type},
              {"object",
               {{"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}}}}})
             .dump() +
         "\n";
}

struct Collected {
  std::vector<WatchEvent> events;
  WatchHandler Handler() {
    return [this](WatchEvent&& e) {
      events.push_back(std::move(e));
      return true;
    };
  }
};

TEST(WatchDecoder, DecodesAcrossArbitraryChunkBoundaries) {
  std::string stream = Event("ADDED", "a", "1") + Event("MODIFIED", "a", "2") +
                       Event("BOOKMARK", "", "3") + Event("DELETED", "a", "4");
  for (size_t chunk = 1; chunk <= stream.size(); chunk += 7) {
    WatchDecoder d;
    Collected c;
    for (size_t i = 0; i < stream.size(); i += chunk) {
      ASSERT_TRUE(d.Feed(std::string_view(stream).substr(i, chunk), c.Handler()).ok());
    }
    ASSERT_TRUE(d.Finish(c.Handler()).ok());
    ASSERT_EQ(c.events.size(), 4u) << "chunk " << chunk;
    EXPECT_EQ(c.events[0].type, WatchEvent::Type::kAdded);
    EXPECT_EQ(c.events[1].type, WatchEvent::Type::kModified);
    EXPECT_EQ(c.events[2].type, WatchEvent::Type::kBookmark);
    EXPECT_EQ(c.events[3].type, WatchEvent::Type::kDeleted);
    EXPECT_EQ(c.events[3].object["metadata"]["resourceVersion"], "4");
  }
}

TEST(WatchDecoder, ErrorEventBecomesTypedStatus) {
  WatchDecoder d;
  Collected c;
  std::string err =
      R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",)j"
      R"j("message":"too old resource version: 5 (900)","reason":"Expired","code":410}})j"
      "\n";
  Status s = d.Feed(Event("ADDED", "a", "1") + err, c.Handler());
  EXPECT_TRUE(IsResourceExpired(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("too old resource version"));
  EXPECT_EQ(c.events.size(), 1u);  // the event before the error was delivered
}

TEST(WatchDecoder, MalformedLinesAreDataLoss) {
  const char* bad[] = {
      "not json\n",
      "[1,2]\n",
      R"({"type":"ADDED"})"
      "\n",
      R"({"type":"ADDED","object":"str"})"
      "\n",
      R"({"type":7,"object":{}})"
      "\n",
      R"({"type":"EXPLODED","object":{}})"
      "\n",
  };
  for (const char* line : bad) {
    WatchDecoder d;
    Collected c;
    Status s = d.Feed(line, c.Handler());
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << line << " -> " << s;
    EXPECT_TRUE(c.events.empty());
  }
}

// With a selection, the decoder looks at "type" before the checks above; a non-string type
// must be the same DataLoss there, not an exception out of nlohmann's value().
TEST(WatchDecoder, NonStringTypeWithASelectionIsDataLoss) {
  const JsonSelection& selection = JsonSelection::PodWatchEvent();
  WatchDecoder d("watch", 1 << 20, &selection);
  Collected c;
  Status s = d.Feed(R"({"type":7,"object":{"kind":"Pod"}})"
                    "\n",
                    c.Handler());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_TRUE(c.events.empty());
}

TEST(WatchDecoder, DeepNestingIsDataLossNotAStackOverflow) {
  WatchDecoder d;
  Collected c;
  std::string deep = R"({"type":"ADDED","object":{"metadata":{"name":"x"},"spec":)" +
                     std::string(100000, '[') + std::string(100000, ']') + "}}\n";
  Status s = d.Feed(deep, c.Handler());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("nested too deeply"));
}

TEST(WatchDecoder, StreamCutMidObjectIsDataLoss) {
  WatchDecoder d;
  Collected c;
  std::string ev = Event("ADDED", "a", "1");
  ASSERT_TRUE(d.Feed(ev + ev.substr(0, ev.size() / 2), c.Handler()).ok());
  Status s = d.Finish(c.Handler());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("stream ended inside an event"));
  EXPECT_EQ(c.events.size(), 1u);
}

TEST(WatchDecoder, LastEventWithoutNewlineIsDelivered) {
  WatchDecoder d;
  Collected c;
  std::string ev = Event("ADDED", "a", "1");
  ASSERT_TRUE(d.Feed(ev.substr(0, ev.size() - 1), c.Handler()).ok());
  ASSERT_TRUE(d.Finish(c.Handler()).ok());
  EXPECT_EQ(c.events.size(), 1u);
}

TEST(WatchDecoder, OversizedEventIsRejectedWithoutUnboundedBuffering) {
  WatchDecoder d("watch pods", 1000);
  Collected c;
  std::string big(600, 'x');
  ASSERT_TRUE(d.Feed(big, c.Handler()).ok());
  Status s = d.Feed(big, c.Handler());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("watch pods: event larger than 1000 bytes"));
  WatchDecoder d2("w", 10);
  EXPECT_EQ(d2.Feed(Event("ADDED", "a", "1"), c.Handler()).code(), StatusCode::kResourceExhausted);
}

TEST(WatchDecoder, HandlerCanStopTheStream) {
  WatchDecoder d;
  int seen = 0;
  ASSERT_TRUE(d.Feed(Event("ADDED", "a", "1") + Event("ADDED", "b", "2"), [&](WatchEvent&&) {
                 return ++seen < 1;
               }).ok());
  EXPECT_TRUE(d.stopped());
  EXPECT_EQ(seen, 1);
}

TEST(WatchDecoder, BlankLinesAndCrlfAreIgnored) {
  WatchDecoder d;
  Collected c;
  ASSERT_TRUE(d.Feed("\n\r\n" + Event("ADDED", "a", "1").insert(0, "  "), c.Handler()).ok());
  EXPECT_EQ(c.events.size(), 1u);
}

}  // namespace
}  // namespace skb::k8s
