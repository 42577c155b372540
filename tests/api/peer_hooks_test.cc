// api::Hooks on a lone peer over a real socket: the caller's state rides in the peer's
// checkpoints and comes back on a restart, a checkpoint of another model is refused, the hooks
// see the peer's id, its progress (as report lines), its model replacements and its stop.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "api/peer.h"
#include "node/train/checkpoint.h"

namespace murmur::api {
namespace {

using Config = std::map<std::string, std::string>;

// One peer that trains alone at once (expect_members 1): `epochs` of 400 samples, 8 per step.
Config Lone(double epochs) {
  return {{"plaintext", "true"},
          {"log_level", "warn"},
          {"id", "77"},
          {"expect_members", "1"},
          {"epochs", std::to_string(epochs)},
          {"epoch_samples", "400"},
          {"shard_samples", "400"}};
}

// Pulls x toward 1 until the run ends; returns the steps taken.
int Train(Peer& peer, std::vector<float>& x) {
  int steps = 0;
  while (true) {
    auto turn = peer.Next();
    EXPECT_TRUE(turn.ok()) << turn.status().ToString();
    if (!turn.ok() || !turn->step) break;
    for (float& v : x) v -= 0.1f * (v - 1.0f);
    EXPECT_TRUE(peer.Done(0.5, 8).ok());
    ++steps;
  }
  return steps;
}

// Starts a peer on `c` and `x`, trains until the run ends and finishes: Finish's result, or
// Start's error.
StatusOr<Progress> RunToEnd(const Config& c, std::vector<float>& x, const Hooks& hooks) {
  auto p = Peer::Start(c, x, {}, hooks);
  if (!p.ok()) return p.status();
  Train(**p, x);
  return (*p)->Finish();
}

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/murmur-hooks-XXXXXX";
    path_ = ::mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The caller's state as a function of the steps it took, so a restart can tell which it got.
SavedState StateAt(int steps) {
  SavedState s;
  s.tensors["momentum"] = {static_cast<float>(steps), 2.0f * static_cast<float>(steps)};
  s.numbers["cursor"] = static_cast<uint64_t>(steps);
  s.text["rng"] = "state-" + std::to_string(steps);
  s.indices["order"] = {3, 1, 2};
  return s;
}

TEST(PeerHooksTest, CheckpointKeysNeedTheStateHooks) {
  std::vector<float> x(16, 0.0f);
  Config c = Lone(1);
  c["checkpoint_dir"] = "/tmp/unused";
  auto p = Peer::Start(c, x);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(p.status().message()).find("checkpoint_dir"), std::string::npos)
      << p.status().ToString();
  EXPECT_NE(std::string(p.status().message()).find("save_state"), std::string::npos)
      << p.status().ToString();
}

TEST(PeerHooksTest, ACheckpointCarriesTheBufferAndTheCallersStateToARestart) {
  TempDir dir;
  std::vector<float> x(64, 0.0f);
  int saves = 0, steps = 0;
  Hooks hooks;
  hooks.model = "test model of 64 values";
  hooks.save_state = [&]() -> StatusOr<SavedState> {
    ++saves;
    return StateAt(steps);
  };
  hooks.restore_state = [](const SavedState&) { return InternalError("not resuming yet"); };
  Config c = Lone(1);  // 50 steps
  c["checkpoint_dir"] = dir.path();
  c["checkpoint_every"] = "10";
  int64_t local_steps = 0;
  {
    auto p = Peer::Start(c, x, {}, hooks);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    while (true) {
      auto turn = (*p)->Next();
      ASSERT_TRUE(turn.ok()) << turn.status().ToString();
      if (!turn->step) break;
      for (float& v : x) v -= 0.1f * (v - 1.0f);
      ++steps;  // before Done: the checkpoint after this step's round holds it
      ASSERT_TRUE((*p)->Done(0.5, 8).ok());
    }
    auto r = (*p)->Finish();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    local_steps = r->local_steps;
    EXPECT_EQ(local_steps, steps);
    EXPECT_EQ(steps, 50) << "400 samples of 8";
  }
  EXPECT_EQ(saves, 50 / 10 + 1) << "every 10 local steps and at the end";
  ASSERT_TRUE(std::filesystem::exists(dir.path() + "/checkpoint.mck"));

  // A restart with a larger budget resumes: the buffer, the clocks and the caller's state.
  std::vector<float> y(64, -7.0f);
  std::optional<SavedState> restored;
  Hooks again = hooks;
  again.restore_state = [&](const SavedState& s) {
    restored = s;
    return OkStatus();
  };
  Config c2 = c;
  c2["epochs"] = "1000";
  auto p = Peer::Start(c2, y, {}, again);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(restored.has_value());
  const SavedState want = StateAt(steps);
  EXPECT_EQ(restored->tensors, want.tensors);
  EXPECT_EQ(restored->numbers, want.numbers);
  EXPECT_EQ(restored->text, want.text);
  EXPECT_EQ(restored->indices, want.indices);
  EXPECT_EQ(y, x) << "the buffer is the one the first run ended on";
  auto turn = (*p)->Next();
  ASSERT_TRUE(turn.ok()) << turn.status().ToString();
  EXPECT_TRUE(turn->step);
  EXPECT_EQ((*p)->GetProgress().local_steps, local_steps) << "the clocks resumed";
  (*p)->Stop();
}

TEST(PeerHooksTest, ACheckpointOfAnotherModelOrRunIsRefusedAtStart) {
  TempDir dir;
  std::vector<float> x(32, 0.0f);
  Hooks hooks;
  hooks.model = "model A";
  hooks.save_state = []() -> StatusOr<SavedState> { return SavedState{}; };
  hooks.restore_state = [](const SavedState&) { return OkStatus(); };
  Config c = Lone(0.2);
  c["checkpoint_dir"] = dir.path();
  {
    auto r = RunToEnd(c, x, hooks);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  Hooks other = hooks;
  other.model = "model B";
  auto p = Peer::Start(c, x, {}, other);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(p.status().message()).find("model A"), std::string::npos)
      << p.status().ToString();
  Hooks run = hooks;
  run.run_identity = "another run";
  p = Peer::Start(c, x, {}, run);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(p.status().message()).find("another run"), std::string::npos)
      << p.status().ToString();
}

// A file whose checksum was recomputed over a NaN or a 1e30 (a forged or damaged-then-rewritten
// checkpoint) is checked by value: set aside as .corrupt and not resumed, in the buffer and in
// the caller's sections alike.
TEST(PeerHooksTest, ACheckpointWithImplausibleValuesIsSetAside) {
  const std::pair<std::string, float> cases[] = {{"params", std::nanf("")},
                                                 {"params", 1e30f},
                                                 {"public_copy", -INFINITY},
                                                 {"momentum", 2e8f}};
  for (const auto& [section, bad] : cases) {
    SCOPED_TRACE(section + " = " + std::to_string(bad));
    TempDir dir;
    std::vector<float> x(32, 0.0f);
    Hooks hooks;
    hooks.save_state = []() -> StatusOr<SavedState> {
      SavedState s;
      s.tensors["momentum"] = std::vector<float>(32, 0.5f);
      return s;
    };
    int restores = 0;
    hooks.restore_state = [&](const SavedState&) {
      ++restores;
      return OkStatus();
    };
    Config c = Lone(0.2);
    c["checkpoint_dir"] = dir.path();
    ASSERT_TRUE(RunToEnd(c, x, hooks).ok());
    const std::string path = dir.path() + "/checkpoint.mck";
    auto saved = node::ReadCheckpoint(path);
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    auto found = std::find_if(saved->tensors.begin(), saved->tensors.end(),
                              [&](const auto& t) { return t.first.ends_with(section); });
    ASSERT_NE(found, saved->tensors.end()) << section;
    found->second[found->second.size() / 2] = bad;
    ASSERT_TRUE(node::WriteCheckpoint(path, *saved).ok());  // a valid checksum over the bad value

    std::vector<float> y(32, 0.0f);
    auto p = Peer::Start(c, y, {}, hooks);
    ASSERT_TRUE(p.ok()) << p.status().ToString() << ": a bad file costs the resume, not the start";
    EXPECT_EQ(restores, 0) << "nothing of the file was restored";
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(std::filesystem::exists(path + ".corrupt"));
    EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return std::isfinite(v); }));
    (*p)->Stop();
  }
}

TEST(PeerHooksTest, ACallerSectionWithOneOfMurmursNamesIsNeverWritten) {
  TempDir dir;
  std::vector<float> x(32, 0.0f);
  Hooks hooks;
  hooks.save_state = []() -> StatusOr<SavedState> {
    SavedState s;
    s.tensors["params"] = {1.0f};  // would shadow the buffer on a restart
    return s;
  };
  hooks.restore_state = [](const SavedState&) { return OkStatus(); };
  Config c = Lone(0.2);
  c["checkpoint_dir"] = dir.path();
  auto r = RunToEnd(c, x, hooks);
  ASSERT_TRUE(r.ok()) << r.status().ToString()
                      << ": a failed checkpoint costs the checkpoint, not the run";
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/checkpoint.mck"));
}

TEST(PeerHooksTest, HooksSeeTheIdTheProgressTheReplacementsAndTheStop) {
  std::vector<float> x(32, 0.0f);
  uint64_t started_id = 0;
  int replaced = 0, finals = 0, reports = 0, stop_polls = 0, steps = 0;
  std::string final_report;
  Hooks hooks;
  hooks.started = [&](uint64_t id) {
    started_id = id;
    for (float& v : x) v = 5.0f;  // this process's own start (same_init false)
    return OkStatus();
  };
  hooks.replaced = [&] { ++replaced; };
  hooks.progress = [&](const Progress& p, bool final) {
    ++reports;
    EXPECT_NE(p.report.find("\"kind\""), std::string::npos) << p.report;
    if (final) {
      ++finals;
      final_report = p.report;
    }
  };
  hooks.stop = [&] {
    ++stop_polls;
    return steps >= 20;
  };
  Config c = Lone(10);  // 500 steps, stopped at 20
  c["report_interval_ms"] = "10";
  auto p = Peer::Start(c, x, {}, hooks);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(started_id, 77u);
  EXPECT_EQ(x, std::vector<float>(32, 5.0f));
  while (true) {
    auto turn = (*p)->Next();
    ASSERT_TRUE(turn.ok()) << turn.status().ToString();
    if (!turn->step) break;
    for (float& v : x) v -= 0.1f * (v - 1.0f);
    ++steps;
    ASSERT_TRUE((*p)->Done(0.5, 8).ok());
  }
  auto r = (*p)->Finish();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Seen at the next turn, or one later when the machine had asked for that step already.
  EXPECT_GE(steps, 20);
  EXPECT_LE(steps, 21);
  EXPECT_EQ(r->end_reason, "stopped");
  EXPECT_GT(stop_polls, 0);
  EXPECT_EQ(replaced, 0) << "a stopped run adopts no average";
  EXPECT_EQ(finals, 1);
  EXPECT_GE(reports, 2);
  EXPECT_NE(final_report.find("\"final\""), std::string::npos) << final_report;
  EXPECT_NE(final_report.find("\"stopped\""), std::string::npos) << final_report;
}

TEST(PeerHooksTest, LoggedFiguresRideInTheReportLinesWithinBounds) {
  std::vector<float> x(32, 0.0f);
  std::string final_report;
  Hooks hooks;
  hooks.progress = [&](const Progress& p, bool final) {
    if (final) final_report = p.report;
  };
  auto p = Peer::Start(Lone(1), x, {}, hooks);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Peer& peer = **p;
  EXPECT_TRUE(peer.Log("val/loss", 0.25).ok());
  EXPECT_TRUE(peer.Log("val/loss", 0.125).ok()) << "a name's latest value replaces its last";
  EXPECT_EQ(peer.Log("", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(peer.Log("has space", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(peer.Log(std::string(Peer::kMaxScalarName + 1, 'a'), 1).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(peer.Log("nan", std::nan("")).code(), StatusCode::kInvalidArgument);
  for (size_t i = 1; i < Peer::kMaxScalars; ++i) {
    ASSERT_TRUE(peer.Log("n" + std::to_string(i), static_cast<double>(i)).ok());
  }
  EXPECT_EQ(peer.Log("one_too_many", 1).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(peer.Log("val/loss", 0.0625).ok()) << "a kept name takes new values";
  Train(peer, x);
  ASSERT_TRUE(peer.Finish().ok());
  EXPECT_NE(final_report.find("\"scalars\""), std::string::npos) << final_report;
  EXPECT_NE(final_report.find("\"val/loss\":0.0625"), std::string::npos) << final_report;
  EXPECT_EQ(final_report.find("one_too_many"), std::string::npos) << final_report;
}

TEST(PeerHooksTest, TheConsensusFinishsAdoptionIsAReplacement) {
  std::vector<float> x(32, 0.0f);
  int replaced = 0;
  Hooks hooks;
  hooks.replaced = [&] { ++replaced; };
  auto p = Peer::Start(Lone(0.2), x, {}, hooks);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Train(**p, x);
  auto r = (*p)->Finish();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->finish, "averaged");
  EXPECT_EQ(replaced, 1);
}

// save_model: the buffer as the peer ends it, in a file `murmur train --init-from` reads (the
// model named by Hooks::model); a path whose directory is missing is refused at Start, before
// any training; one that becomes unwritable during the run makes Finish the save's error, not a
// log line (the model is still in the buffer).
TEST(PeerHooksTest, SaveModelWritesTheFinalBufferOrFinishSaysWhyNot) {
  TempDir dir;
  std::vector<float> x(32, 0.0f);
  Hooks hooks;
  hooks.model = "32 pulls toward 1";
  Config c = Lone(0.2);
  c["save_model"] = dir.path() + "/none/model.mck";
  auto refused = Peer::Start(c, x, {}, hooks);
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status();
  EXPECT_NE(refused.status().message().find("save_model '" + c["save_model"] + "'"),
            std::string_view::npos)
      << refused.status();

  std::filesystem::create_directory(dir.path() + "/out");
  c["save_model"] = dir.path() + "/out/model.mck";
  auto done = RunToEnd(c, x, hooks);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_GT(done->local_steps, 0);
  auto saved = node::LoadModel(c["save_model"], hooks.model, x.size());
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(*saved, x);

  std::vector<float> y(32, 0.0f);
  c["save_model"] = dir.path() + "/gone/model.mck";
  std::filesystem::create_directory(dir.path() + "/gone");
  auto q = Peer::Start(c, y, {}, hooks);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  std::filesystem::remove(dir.path() + "/gone");
  Train(**q, y);
  auto r = (*q)->Finish();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("save_model: "), std::string_view::npos) << r.status();
  EXPECT_GT(y[0], 0.0f) << "the buffer keeps the trained model";
}

}  // namespace
}  // namespace murmur::api
