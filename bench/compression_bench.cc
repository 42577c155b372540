// Throughput and wire size of every compression operator, against baselines measured in the same
// run: memcpy of the dense vector (the memory-speed ceiling) and std::nth_element on magnitudes
// (the textbook top-k). One thread. For each d it prints one row per operator:
//   encode  = Compressor::Compress(input, update, bytes), error feedback off (the operator alone):
//             the update and its wire bytes, as gossip publishes them
//   +ef     = the same with error feedback (residual add, subtract what was sent), on inputs of
//             alternating sign so that the residual stays bounded
//   decode  = DecodeUpdate (all validation included) + AddTo into a dense vector
// in GB/s of dense fp32 input (d * 4 bytes per second), the ratio to memcpy, and the encoded
// bytes per value sent. Medians over --repeats runs; inputs are N(0, 1), seeded.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "coding/compressor.h"
#include "coding/update_codec.h"

using namespace murmur;
using namespace murmur::coding;

namespace {

double Seconds(const std::function<void()>& fn, int repeats) {
  fn();  // warm: page faults, caches, allocations
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

struct Goal {
  std::string what;
  double value;
  double target;
  bool at_least;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("murmur compression operators: encode/decode throughput and wire size");
  std::vector<size_t> sizes = {1u << 20, 16u << 20};
  int repeats = 7;
  uint64_t seed = 1;
  app.add_option("--sizes", sizes, "vector lengths d")->expected(1, -1);
  app.add_option("--repeats", repeats, "timed repeats per figure (median)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "input seed");
  // Threshold 2.576 sends ~1 % of N(0, 1) entries, the same density as top-1 %.
  std::vector<std::string> specs = {"none",
                                    "fp16",
                                    "topk:0.01",
                                    "topk:0.01,values=fp16",
                                    "dgc:0.01",
                                    "dgc:0.01,values=fp16",
                                    "threshold:2.576",
                                    "threshold:2.576,values=fp16",
                                    "onebit:2.576",
                                    "qsgd:16,rescale=on",
                                    "int8"};
  app.add_option("--operators", specs, "operator specs to run (default: all of the above)")
      ->expected(1, -1);
  CLI11_PARSE(app, argc, argv);
  for (const std::string& spec : specs) {
    // Both columns need the operator with and without error feedback (unbiased qsgd refuses it
    // without rescale=on at most sizes).
    auto options = ParseCompressorSpec(spec);
    Status status = options.status();
    for (const size_t d : sizes) {
      for (const bool ef : {false, true}) {
        if (!status.ok()) break;
        options->error_feedback = ef;
        status = Compressor::Create(*options, d).status();
      }
    }
    if (!status.ok()) {
      std::fprintf(stderr, "--operators: %s: %s\n", spec.c_str(), status.ToString().c_str());
      return 2;
    }
  }
  std::printf("seed %llu, %d repeats (median), one thread\n\n",
              static_cast<unsigned long long>(seed), repeats);
  std::vector<Goal> goals;
  for (size_t d : sizes) {
    std::vector<float> input(d);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    for (float& x : input) x = normal(rng);
    const double gigabytes = static_cast<double>(d) * sizeof(float) / 1e9;
    std::vector<float> negated(d);
    for (size_t i = 0; i < d; ++i) negated[i] = -input[i];

    std::vector<float> copy(d);
    const double memcpy_s =
        Seconds([&] { std::memcpy(copy.data(), input.data(), d * sizeof(float)); }, repeats);
    const double memcpy_gbs = gigabytes / memcpy_s;
    const size_t k = static_cast<size_t>(std::ceil(0.01 * static_cast<double>(d)));
    std::vector<float> magnitudes(d);
    const double nth_s = Seconds(
        [&] {
          for (size_t i = 0; i < d; ++i) magnitudes[i] = std::fabs(input[i]);
          std::nth_element(magnitudes.begin(), magnitudes.begin() + static_cast<ptrdiff_t>(k - 1),
                           magnitudes.end(), std::greater<>());
        },
        repeats);

    std::printf("d = %zu (%.1f MB): memcpy %.2f GB/s; nth_element top-1 %% of |v| %.2f GB/s "
                "(%.2f ms)\n",
                d, gigabytes * 1e3, memcpy_gbs, gigabytes / nth_s, nth_s * 1e3);
    std::printf("  %-30s %9s %7s %6s | %7s %6s | %7s %6s | %7s %6s\n", "operator", "sent",
                "coding", "B/nnz", "encode", "xcopy", "+ef", "xcopy", "decode", "xcopy");
    for (const std::string& spec : specs) {
      auto options = *ParseCompressorSpec(spec);
      options.error_feedback = false;
      Compressor plain = *Compressor::Create(options, d);
      options.error_feedback = true;
      Compressor with_ef = *Compressor::Create(options, d);
      Update update;
      std::vector<std::byte> bytes;
      const double encode_s = Seconds([&] { (void)plain.Compress(input, update, bytes); }, repeats);
      // Alternating signs keep the residual bounded; the same input over and over would grow it
      // until nearly everything passes a threshold.
      bool flip = false;
      const double ef_s = Seconds(
          [&] {
            (void)with_ef.Compress(flip ? negated : input, update, bytes);
            flip = !flip;
          },
          repeats);
      // Decode the operator's plain output (error feedback changes what is selected over time).
      (void)plain.Compress(input, update);
      EncodeUpdate(update, bytes);
      Update decoded;
      std::vector<float> target(d, 0.0f);
      const double decode_s = Seconds(
          [&] {
            if (!DecodeUpdate(bytes, static_cast<uint32_t>(d), decoded).ok()) std::abort();
            AddTo(decoded, 1.0f, target);
          },
          repeats);
      const double per_nnz = BytesPerNonZero(update);
      std::printf("  %-30s %9zu %7s %6.3f | %7.2f %6.2f | %7.2f %6.2f | %7.2f %6.2f\n",
                  spec.c_str(), update.count(),
                  std::string(IndexCodingName(ChooseIndexCoding(update))).c_str(), per_nnz,
                  gigabytes / encode_s, memcpy_s / encode_s, gigabytes / ef_s, memcpy_s / ef_s,
                  gigabytes / decode_s, memcpy_s / decode_s);
      const std::string& s = spec;
      const std::string at = " (d=" + std::to_string(d) + ")";
      // Codecs at memory speed: at 16 M every operator's encode >= 0.5x memcpy and
      // >= 0.35x with error feedback; at 1 M (cache-resident) >= 0.3x.
      if (d >= (16u << 20)) {
        goals.push_back({s + " encode, x memcpy" + at, memcpy_s / encode_s, 0.5, true});
        goals.push_back({s + " +ef encode, x memcpy" + at, memcpy_s / ef_s, 0.35, true});
      } else if (d >= (1u << 20)) {
        goals.push_back({s + " encode, x memcpy" + at, memcpy_s / encode_s, 0.3, true});
      }
      if (s == "topk:0.01") {
        goals.push_back({"topk:0.01 encode, x nth_element speed" + at, nth_s / encode_s, 2.0, true});
        goals.push_back({"topk:0.01 fp32 bytes per non-zero" + at, per_nnz, 5.0, false});
      }
      if (s == "topk:0.01,values=fp16") {
        goals.push_back({"topk:0.01 fp16 bytes per non-zero" + at, per_nnz, 3.0, false});
      }
    }
    std::printf("\n");
  }
  std::printf("goals:\n");
  for (const Goal& g : goals) {
    const bool met = g.at_least ? g.value >= g.target : g.value <= g.target;
    std::printf("  %-62s %6.2f %s %.2f  %s\n", g.what.c_str(), g.value,
                g.at_least ? ">=" : "<=", g.target, met ? "met" : "MISSED");
  }
  return 0;
}
