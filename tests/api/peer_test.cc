// api::Peer over real sockets on loopback: peers that gossip a caller's own buffer end on one
// model, and every refusal names its reason.

#include "api/peer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace murmur::api {
namespace {

using Config = std::map<std::string, std::string>;

Config Base() {
  return {{"plaintext", "true"},      {"log_level", "warn"},    {"probe_interval_ms", "100"},
          {"probe_timeout_ms", "40"}, {"compress", "topk:0.1"}, {"finish_wait_s", "5"}};
}

// Each peer pulls its buffer toward its own target (x -= 0.1 (x - t_i)); the cluster's optimum
// is the targets' mean. Returns the final buffer.
std::vector<float> Train(Peer& peer, std::vector<float>& x, float target, int* steps) {
  while (true) {
    auto turn = peer.Next();
    EXPECT_TRUE(turn.ok()) << turn.status().ToString();
    if (!turn.ok() || !turn->step) break;
    double loss = 0;
    for (float& v : x) {
      loss += 0.5 * (v - target) * (v - target);
      v -= 0.1f * (v - target);
    }
    EXPECT_TRUE(peer.Done(loss / static_cast<double>(x.size()), 8).ok());
    ++*steps;
  }
  return x;
}

TEST(PeerTest, TwoPeersGossipTheirOwnBuffersToOneModel) {
  constexpr size_t kDim = 1000;
  std::vector<float> a(kDim, 0.0f), b(kDim, 0.0f);
  Config ca = Base();
  ca["epochs"] = "4";
  ca["epoch_samples"] = "1000";  // 4000 samples of 8 per step: ~250 steps each
  ca["expect_members"] = "2";
  ca["same_init"] = "true";
  // Lock-step: on a quiet machine the peers step equally often and end at the targets' mean
  // (1.96-2.02). Under load (a parallel build) catch-ups and an outlier-refused update unbalance
  // them and the end ranged 0.82-2.99 in 40 runs, so the checks below are the finish's own.
  ca["max_lead"] = "0";
  // Membership that tolerates a starved process: with the 40 ms probe timeout, a parallel build
  // on 2 cores made the peers suspect each other, and each finished on its own model alone.
  ca["probe_interval_ms"] = "500";
  ca["probe_timeout_ms"] = "400";
  auto pa = Peer::Start(ca, a);
  ASSERT_TRUE(pa.ok()) << pa.status().ToString();
  Config cb = ca;
  cb["seeds"] = (*pa)->GetProgress().endpoint;
  auto pb = Peer::Start(cb, b);
  ASSERT_TRUE(pb.ok()) << pb.status().ToString();
  // Each peer trains and finishes on its own thread, as each process of a cluster would: a peer's
  // machine runs only inside its own calls, so finishing one peer while the other waited for its
  // turn could leave the collector averaging its own model alone (seen under load).
  int steps_a = 0, steps_b = 0;
  StatusOr<Progress> rb = InternalError("not run");
  std::thread t([&] {
    Train(**pb, b, 3.0f, &steps_b);
    rb = (*pb)->Finish();
  });
  Train(**pa, a, 1.0f, &steps_a);
  auto ra = (*pa)->Finish();
  t.join();
  ASSERT_TRUE(ra.ok()) << ra.status().ToString();
  ASSERT_TRUE(rb.ok()) << rb.status().ToString();
  std::printf("steps: a %d, b %d; a[0] after the finish %.4f; contributors %u, %u\n", steps_a,
              steps_b, a[0], ra->finish_contributors, rb->finish_contributors);
  EXPECT_EQ(ra->finish, "averaged");
  EXPECT_EQ(rb->finish, "averaged");
  EXPECT_EQ(ra->finish_contributors, 2u);
  EXPECT_EQ(rb->finish_contributors, 2u);
  EXPECT_GT(ra->rounds, 0u);
  EXPECT_GT(ra->bytes_sent, 0u);
  EXPECT_GE((steps_a + steps_b) * 8, 4000);
  // The finish averaged both peers' models and left both on the same bits: finite, and inside
  // what the pulls from 0 toward 1 and 3 can reach (with compression's overshoot).
  EXPECT_EQ(a, b);
  for (size_t i = 0; i < kDim; i += 97) {
    EXPECT_TRUE(std::isfinite(a[i])) << i;
    EXPECT_GT(a[i], 0.0f) << i;
    EXPECT_LT(a[i], 3.5f) << i;
  }
}

TEST(PeerTest, RefusesWhatItCannotDoWithTheReason) {
  std::vector<float> x(10, 0.0f);
  auto expect = [&](Config c, const std::string& needle) {
    auto p = Peer::Start(c, x);
    ASSERT_FALSE(p.ok()) << needle;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(p.status().message()).find(needle), std::string::npos)
        << p.status().ToString();
  };
  Config c = Base();
  c["time_limit_s"] = "1";
  Config unknown = c;
  unknown["sedes"] = "x";
  expect(unknown, "unknown key 'sedes'");
  Config model_key = c;
  model_key["hidden"] = "32";
  expect(model_key, "'hidden' does not apply");
  Config bad_value = c;
  bad_value["compress"] = "zip";
  expect(bad_value, "compress");
  Config no_budget = Base();
  expect(no_budget, "no budget");
  Config epochs = Base();
  epochs["epochs"] = "1";
  expect(epochs, "epoch_samples");
  Config lr = c;
  lr["lr"] = "0.1";
  expect(lr, "lr_schedule");
  std::vector<float> empty;
  EXPECT_EQ(Peer::Start(c, empty).status().code(), StatusCode::kInvalidArgument);
}

TEST(PeerTest, UnreachableSeedsFailTheRunAfterTheJoinTimeout) {
  std::vector<float> x(10, 0.0f);
  Config c = Base();
  c["time_limit_s"] = "60";
  c["seeds"] = "127.0.0.1:9";  // the discard port: nothing answers
  c["join_timeout_s"] = "1";
  auto p = Peer::Start(c, x);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Turn first;
  first.step = true;
  StatusOr<Turn> turn = first;
  while (turn.ok() && turn->step) {
    turn = (*p)->Next();
    if (turn.ok() && turn->step) {
      ASSERT_TRUE((*p)->Done(0.0, 1).ok());
    }
  }
  ASSERT_FALSE(turn.ok());
  EXPECT_EQ(turn.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(std::string(turn.status().message()).find("127.0.0.1:9"), std::string::npos)
      << turn.status().ToString();
}

TEST(PeerTest, CallsOutOfOrderAreRefused) {
  std::vector<float> x(10, 0.0f);
  Config c = Base();
  c["time_limit_s"] = "60";  // Stop() ends it
  auto p = Peer::Start(c, x);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->Done(0.0, 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*p)->Finish().status().code(), StatusCode::kFailedPrecondition);
  auto turn = (*p)->Next();
  ASSERT_TRUE(turn.ok()) << turn.status().ToString();
  ASSERT_TRUE(turn->step);
  EXPECT_EQ((*p)->Next().status().code(), StatusCode::kFailedPrecondition);
  (*p)->Stop();
  ASSERT_TRUE((*p)->Done(0.0, 1).ok());
  while (true) {
    turn = (*p)->Next();
    ASSERT_TRUE(turn.ok()) << turn.status().ToString();
    if (!turn->step) break;
    ASSERT_TRUE((*p)->Done(0.0, 1).ok());
  }
  auto result = (*p)->Finish();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->phase, "over");
}

}  // namespace
}  // namespace murmur::api
