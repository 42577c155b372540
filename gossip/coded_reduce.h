#pragma once
// CodedReduce aggregation (docs/algorithms.md §2.3) and the synchronous baselines, as sans-IO state
// machines: the driver feeds arrived messages and its own computed part (Step) and time
// (Tick), and takes an ordered list of actions (sends, compute requests, results, reports).
//
// TreeAggregator is one rank's role in a TreeLayout; the same machine runs
//   coded-tree  (n, L, s): parents decode after any n - s children;
//   tree        (n, L, 0): parents wait for every child;
//   gc          (N, 1, s): flat gradient coding, the root is the single aggregator.
// Per iteration t:
//   root:     StartIteration(t, model) sends the model to its children;
//   non-root: a model for t > current (from its parent) is first forwarded to its children,
//             then asked of the driver as Compute{t, model} (the forward-before-compute order of
//             §2.3 step 1); a leaf sends its own part straight up; a parent waits for its own part
//             and for a decodable set of children (the code says when: n - s of them, or one per
//             group for fractional repetition), decodes with the least-squares coefficients for
//             exactly the children that answered, and sends own + sum a_k M_k up;
//   root:     decodes its children the same way and emits Aggregated{t, gradient}.
// Answers for an older iteration are late: dropped and counted (`late_dropped`), never mixed
// in. A parent that cannot decode keeps waiting (correctness first) and emits one Report per
// iteration once it has waited `report_after` since its own part was ready. Partial sums are
// accumulated in double and sent as float32.
//
// RingAllReduce is one rank of a synchronous ring all-reduce (the `ring` baseline): N - 1
// reduce-scatter steps then N - 1 all-gather steps, one chunk of about d / N floats per step to
// the next rank; every rank ends with the bitwise-same sum. Messages from a later step or
// iteration wait in a buffer; older ones are late.
//
// Messages are gossip::CodedMessage headers plus one float vector. The driver maps ranks to
// peers and checks the vector's finiteness and length against the header before Step (both
// machines also reject a wrong length themselves and count it).
//
// Device: both machines keep their arithmetic on `Options::device` — a parent's own
// part, its children's answers and the decoded sum Σ a_k M_k, a ring's vector and the chunks it
// adds. Messages arrive and leave in host memory (one copy up per answer or chunk received, one
// copy down per vector sent); OwnPart and Aggregated are in the device's memory. On the CPU
// device the copies are memcpy. A failed device operation is a CHECK (the buffers were sized
// when the machine was built; what is left is a device fault).
// Thread safety: none; one driver thread per machine.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "coding/coded_tree.h"
#include "coding/gradient_code.h"
#include "gossip/envelope.h"
#include "kernels/device.h"
#include "kernels/memory.h"

namespace murmur::gossip {

struct CodedSend {
  int64_t to = 0;  // rank
  CodedMessage header;
  std::vector<float> vector;
  // When not empty, the frame as it goes (a compressed update, coding/update_codec.h) instead
  // of `vector` encoded dense.
  std::vector<std::byte> encoded = {};
};
// The driver computes this rank's own weighted partial gradient at `model` and steps it in as
// an OwnPart.
struct ComputeRequest {
  uint64_t iteration = 0;
  std::vector<float> model;
};
// The root's decoded full gradient (sum over all samples), or a ring's reduced sum: in the
// memory of the machine's device, valid until the machine's next input.
struct Aggregated {
  uint64_t iteration = 0;
  std::span<const float> gradient;
  // The step's gradient is weight × gradient; 0: 1 / B, the mean over the iteration's positions.
  // A parameter server's (param_server.h) also says how many positions it holds and its slice.
  double weight = 0;
  size_t offset = 0;  // where `gradient` begins in the model
  // The vector already carries its momentum (a DANA server's worker velocity, param_server.h):
  // the node steps θ -= lr · weight · vector with no velocity of its own.
  bool with_momentum = false;
};
struct CodedReport {
  uint64_t iteration = 0;
  std::string text;
};
// This rank's own part of an iteration (a tree rank's weighted partial gradient, a ring rank's
// local vector), in the memory of the machine's device: an input, like a message.
struct OwnPart {
  uint64_t iteration = 0;
  std::span<const float> partial;
};
using CodedAction = std::variant<CodedSend, ComputeRequest, Aggregated, CodedReport>;

struct CodedStats {
  uint64_t iterations = 0;         // iterations this rank completed (sent up / aggregated)
  uint64_t decodes = 0;            // parents: decodes done
  uint64_t children_waited = 0;    // parents: children answers used by the decodes
  uint64_t children_ignored = 0;   // parents: children of the iteration not waited for
  uint64_t late_dropped = 0;       // answers or models for an iteration already done
  uint64_t stale_own = 0;          // an own part for an iteration no longer current
  uint64_t duplicates = 0;         // a second answer from the same child for an iteration
  uint64_t rejected = 0;           // wrong sender, kind, length, or a future iteration
  uint64_t undecodable_waits = 0;  // iterations reported as waiting for more than s children
  // Parameter servers (param_server.h): gradients applied, their staleness (server updates since
  // the version they were computed on: sum and max), replies held by the SSP bound.
  uint64_t applied = 0;
  uint64_t staleness_sum = 0;
  uint64_t staleness_max = 0;
  uint64_t gated = 0;
};

class TreeAggregator {
 public:
  struct Options {
    int64_t rank = 0;
    uint32_t dimension = 0;
    Duration report_after = std::chrono::seconds(5);
    kernels::Device device = kernels::Device::Cpu();
  };
  // `layout` and `code` must outlive the aggregator; code.n() == layout.n().
  TreeAggregator(const coding::TreeLayout& layout, const coding::GradientCode& code,
                 Options options);

  // Root only: begin iteration t (> every earlier one) with `model`.
  void StartIteration(uint64_t iteration, std::span<const float> model, TimePoint now);
  // A message from rank `from`.
  void Step(int64_t from, const CodedMessage& header, std::span<const float> vector,
            TimePoint now);
  // This rank's own weighted partial gradient (the answer to ComputeRequest).
  void Step(const OwnPart& own, TimePoint now);
  void Tick(TimePoint now);

  std::vector<CodedAction> TakeOutput();
  const CodedStats& stats() const { return stats_; }
  uint64_t current_iteration() const { return current_; }
  bool has_iteration() const { return has_iteration_; }

 private:
  void Begin(uint64_t iteration, std::span<const float> model, TimePoint now);
  void TryFinish();
  // `vector` is in the memory of `where` (the host for a model, the device for a partial sum).
  void Send(int64_t to, CodedMessage::Kind kind, const kernels::Device& where,
            std::span<const float> vector);

  const coding::TreeLayout& layout_;
  const coding::GradientCode& code_;
  const Options options_;
  const bool root_;
  const bool leaf_;
  bool has_iteration_ = false;
  uint64_t current_ = 0;
  bool done_ = false;  // sent up / aggregated for current_
  bool own_ready_ = false;
  TimePoint own_ready_at_{};
  bool reported_ = false;
  // On the device (non-leaf ranks): the own part, then the decoded children added, in double;
  // its float32 rounding; each child's answer for current_ (allocated at its first answer).
  kernels::Buffer<double> sum_;
  kernels::Buffer<float> result_;
  std::vector<kernels::Buffer<float>> answers_;
  uint64_t answered_ = 0;    // bitmask over child indices
  std::vector<CodedAction> actions_;
  CodedStats stats_;
};

class RingAllReduce {
 public:
  struct Options {
    int64_t rank = 0;
    int64_t size = 1;
    uint32_t dimension = 0;
    kernels::Device device = kernels::Device::Cpu();
  };
  explicit RingAllReduce(Options options);

  // Begin all-reducing this rank's part for its iteration (> every earlier one; the previous one
  // must be done). With one rank the sum is ready at once.
  void Step(const OwnPart& own);
  void Step(int64_t from, const CodedMessage& header, std::span<const float> vector);
  std::vector<CodedAction> TakeOutput();
  const CodedStats& stats() const { return stats_; }
  bool busy() const { return active_; }
  // [begin, end) of chunk c.
  std::pair<size_t, size_t> Chunk(int64_t chunk) const;
  // Floats a message of `step` from the previous rank carries (0 for a step out of range).
  size_t ExpectedLength(uint32_t step) const;

 private:
  void Apply(uint32_t step, std::span<const float> vector);
  void SendStep(uint32_t step);
  void Drain();
  int64_t Mod(int64_t x) const { return ((x % options_.size) + options_.size) % options_.size; }

  const Options options_;
  bool active_ = false;
  bool started_ = false;
  uint64_t iteration_ = 0;
  uint32_t next_step_ = 0;  // the step whose message is expected next
  kernels::Buffer<float> data_;   // on the device: the vector being all-reduced
  kernels::Buffer<float> chunk_;  // on the device: a received reduce-scatter chunk
  std::map<std::pair<uint64_t, uint32_t>, std::vector<float>> early_;  // host, as received
  std::vector<CodedAction> actions_;
  CodedStats stats_;
};

}  // namespace murmur::gossip
