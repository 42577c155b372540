// The C++ side of bench/binding_bench.py: one api::Peer alone on loopback runs `--steps` turns
// (Next, then Done: murmur's round on a flat buffer of `--dim` floats) with no computation of
// its own in between, so what is timed is murmur's per-step work; `--touch` adds one pass
// x *= 0.999 over the buffer. Prints {"us_per_step": ...} over the turns after `--warmup`.
// binding_bench.py runs the same loop through the Python module.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <vector>

#include "api/peer.h"

int main(int argc, char** argv) {
  CLI::App app("murmur api bench: per-step time of a library peer on a flat buffer");
  int64_t dim = 1 << 20;
  int steps = 300, warmup = 30;
  std::string compress = "topk:0.01,values=fp16";
  app.add_option("--dim", dim, "floats in the buffer");
  app.add_option("--steps", steps, "timed steps");
  app.add_option("--warmup", warmup, "steps before timing");
  app.add_option("--compress", compress, "compression operator");
  bool touch = false;
  app.add_flag("--touch", touch, "a step writes the buffer once (x *= 0.999)");
  CLI11_PARSE(app, argc, argv);
  std::vector<float> x(static_cast<size_t>(dim), 1.0f);
  auto peer = murmur::api::Peer::Start({{"plaintext", "true"},
                                        {"log_level", "error"},
                                        {"expect_members", "1"},
                                        {"time_limit_s", "3600"},
                                        {"compress", compress},
                                        {"finish_wait_s", "1"}},
                                       x);
  if (!peer.ok()) {
    std::fprintf(stderr, "%s\n", peer.status().ToString().c_str());
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (i == warmup) t0 = std::chrono::steady_clock::now();
    if (i == warmup + steps) break;
    auto turn = (*peer)->Next();
    if (!turn.ok() || !turn->step) {
      std::fprintf(stderr, "the run ended early\n");
      return 1;
    }
    if (touch) {
      for (float& v : x) v *= 0.999f;
    }
    if (!(*peer)->Done(0.0, 64).ok()) return 1;
  }
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      steps;
  (*peer)->Stop();
  while (true) {
    auto turn = (*peer)->Next();
    if (!turn.ok() || !turn->step) break;
    if (!(*peer)->Done(0.0, 0).ok()) break;
  }
  (void)(*peer)->Finish();
  std::printf("{\"us_per_step\": %.2f}\n", us);
  return 0;
}
