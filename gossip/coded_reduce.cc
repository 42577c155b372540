#include "gossip/coded_reduce.h"

#include <algorithm>
#include <bit>
#include <fmt/format.h>

#include "base/check.h"
#include "kernels/compress_ops.h"
#include "kernels/gossip_ops.h"

namespace murmur::gossip {
namespace {

template <typename T>
kernels::Buffer<T> Allocate(const kernels::Device& device, size_t size) {
  auto b = kernels::Buffer<T>::Create(device, size);
  MURMUR_CHECK_OK(b.status());
  return *std::move(b);
}

}  // namespace

// ---- TreeAggregator ----

TreeAggregator::TreeAggregator(const coding::TreeLayout& layout, const coding::GradientCode& code,
                               Options options)
    : layout_(layout),
      code_(code),
      options_(options),
      root_(options.rank == 0),
      leaf_(layout.IsLeaf(options.rank)) {
  MURMUR_CHECK_EQ(code.n(), layout.n());
  MURMUR_CHECK(options.rank >= 0 && options.rank < layout.size());
  if (leaf_) return;
  sum_ = Allocate<double>(options.device, options.dimension);
  result_ = Allocate<float>(options.device, options.dimension);
  for (int k = 0; k < layout.n(); ++k) answers_.push_back(Allocate<float>(options.device, options.dimension));
}

void TreeAggregator::Send(int64_t to, CodedMessage::Kind kind, const kernels::Device& where,
                          std::span<const float> vector) {
  CodedSend send;
  send.to = to;
  send.header = {.kind = kind,
                 .iteration = current_,
                 .tree_position = static_cast<uint32_t>(options_.rank),
                 .dimension = options_.dimension};
  send.vector.resize(vector.size());
  MURMUR_CHECK_OK(kernels::Copy<float>(kernels::Device::Cpu(), send.vector, where, vector));
  actions_.emplace_back(std::move(send));
}

void TreeAggregator::StartIteration(uint64_t iteration, std::span<const float> model,
                                    TimePoint now) {
  MURMUR_CHECK(root_);
  MURMUR_CHECK(!has_iteration_ || iteration > current_);
  MURMUR_CHECK_EQ(model.size(), options_.dimension);
  Begin(iteration, model, now);
}

void TreeAggregator::Begin(uint64_t iteration, std::span<const float> model, TimePoint now) {
  has_iteration_ = true;
  current_ = iteration;
  done_ = false;
  own_ready_ = false;
  reported_ = false;
  answered_ = 0;
  // Forward first, then compute (§2.3 step 1): the subtree starts while this rank computes.
  if (!leaf_) {
    for (int k = 0; k < layout_.n(); ++k) {
      Send(layout_.FirstChild(options_.rank) + k, CodedMessage::Kind::kModel,
           kernels::Device::Cpu(), model);
    }
  }
  if (root_) {
    MURMUR_CHECK_OK(sum_.Zero());  // the root holds no data
    own_ready_ = true;
    own_ready_at_ = now;
    TryFinish();
    return;
  }
  actions_.emplace_back(ComputeRequest{iteration, std::vector<float>(model.begin(), model.end())});
}

void TreeAggregator::Step(int64_t from, const CodedMessage& header, std::span<const float> vector,
                          TimePoint now) {
  if (vector.size() != options_.dimension || header.dimension != options_.dimension ||
      header.tree_position != from) {
    ++stats_.rejected;
    return;
  }
  if (header.kind == CodedMessage::Kind::kModel) {
    if (root_ || from != layout_.Parent(options_.rank)) {
      ++stats_.rejected;
      return;
    }
    if (has_iteration_ && header.iteration <= current_) {
      ++stats_.late_dropped;
      return;
    }
    Begin(header.iteration, vector, now);
    return;
  }
  const int64_t first = layout_.FirstChild(options_.rank);
  if (leaf_ || from < first || from >= first + layout_.n()) {
    ++stats_.rejected;
    return;
  }
  if (!has_iteration_ || header.iteration > current_) {
    ++stats_.rejected;  // a child cannot be ahead of the model it was sent
    return;
  }
  if (header.iteration < current_ || done_) {
    ++stats_.late_dropped;
    return;
  }
  const auto k = static_cast<size_t>(from - first);
  if (answered_ >> k & 1) {
    ++stats_.duplicates;
    return;
  }
  answered_ |= uint64_t{1} << k;
  MURMUR_CHECK_OK(answers_[k].CopyFromHost(vector));
  TryFinish();
}

void TreeAggregator::Step(const OwnPart& own, TimePoint now) {
  const uint64_t iteration = own.iteration;
  const std::span<const float> partial = own.partial;
  if (!has_iteration_ || iteration != current_ || done_ || own_ready_ || root_) {
    ++stats_.stale_own;
    return;
  }
  MURMUR_CHECK_EQ(partial.size(), options_.dimension);
  own_ready_ = true;
  own_ready_at_ = now;
  if (leaf_) {
    Send(layout_.Parent(options_.rank), CodedMessage::Kind::kPartialGradient, options_.device,
         partial);
    done_ = true;
    ++stats_.iterations;
    return;
  }
  MURMUR_CHECK_OK(sum_.Zero());
  MURMUR_CHECK_OK(kernels::AccumulateScaled(options_.device, 1.0, partial, sum_.span()));
  TryFinish();
}

void TreeAggregator::TryFinish() {
  if (done_ || !own_ready_ || !code_.Decodable(answered_)) return;
  StatusOr<std::vector<double>> a = code_.Decode(answered_);
  if (!a.ok()) {
    // Only a sampled-and-unverified responder set can get here; more answers may fix it.
    if (!reported_) {
      reported_ = true;
      actions_.emplace_back(CodedReport{current_, fmt::format("rank {} iteration {}: {}",
                                                              options_.rank, current_,
                                                              a.status().message())});
    }
    return;
  }
  for (int k = 0; k < layout_.n(); ++k) {
    const double coefficient = (*a)[static_cast<size_t>(k)];
    if (coefficient == 0) continue;
    MURMUR_CHECK_OK(kernels::AccumulateScaled(options_.device, coefficient,
                                              answers_[static_cast<size_t>(k)].span(), sum_.span()));
  }
  ++stats_.decodes;
  stats_.children_waited += static_cast<uint64_t>(std::popcount(answered_));
  stats_.children_ignored += static_cast<uint64_t>(layout_.n() - std::popcount(answered_));
  MURMUR_CHECK_OK(kernels::DivideInto(options_.device, sum_.span(), 1.0, result_.span()));
  done_ = true;
  ++stats_.iterations;
  if (root_) {
    actions_.emplace_back(Aggregated{current_, result_.span()});
  } else {
    Send(layout_.Parent(options_.rank), CodedMessage::Kind::kPartialGradient, options_.device,
         result_.span());
  }
}

void TreeAggregator::Tick(TimePoint now) {
  if (!has_iteration_ || done_ || !own_ready_ || reported_ || leaf_) return;
  if (now - own_ready_at_ < options_.report_after) return;
  reported_ = true;
  const bool decodable = code_.Decodable(answered_);
  if (!decodable) ++stats_.undecodable_waits;
  std::string missing;
  const int64_t first = layout_.FirstChild(options_.rank);
  for (int k = 0; k < layout_.n(); ++k) {
    if (!(answered_ >> k & 1)) missing += (missing.empty() ? "" : ",") + std::to_string(first + k);
  }
  actions_.emplace_back(CodedReport{
      current_,
      fmt::format("rank {} iteration {}: {} of {} children answered after {:.1f} s (missing ranks "
                  "{}); {} tolerates {} missing, still waiting",
                  options_.rank, current_, std::popcount(answered_), layout_.n(),
                  ToSeconds(now - own_ready_at_), missing, coding::CodeSchemeName(code_.scheme()),
                  code_.s())});
}

std::vector<CodedAction> TreeAggregator::TakeOutput() { return std::exchange(actions_, {}); }

// ---- RingAllReduce ----

RingAllReduce::RingAllReduce(Options options) : options_(options) {
  MURMUR_CHECK(options.size >= 1);
  MURMUR_CHECK(options.rank >= 0 && options.rank < options.size);
  data_ = Allocate<float>(options.device, options.dimension);
  size_t widest = 0;
  for (int64_t c = 0; c < options.size; ++c) {
    auto [b, e] = Chunk(c);
    widest = std::max(widest, e - b);
  }
  chunk_ = Allocate<float>(options.device, widest);
}

std::pair<size_t, size_t> RingAllReduce::Chunk(int64_t chunk) const {
  const auto d = static_cast<size_t>(options_.dimension);
  const auto n = static_cast<size_t>(options_.size);
  const auto c = static_cast<size_t>(chunk);
  return {d * c / n, d * (c + 1) / n};
}

size_t RingAllReduce::ExpectedLength(uint32_t step) const {
  const int64_t n = options_.size;
  if (n == 1 || step >= 2 * (n - 1)) return 0;
  const int64_t chunk = step < n - 1 ? Mod(options_.rank - step - 1)
                                     : Mod(options_.rank - (step - (n - 1)));
  auto [b, e] = Chunk(chunk);
  return e - b;
}

void RingAllReduce::Step(const OwnPart& own) {
  const uint64_t iteration = own.iteration;
  const std::span<const float> local = own.partial;
  MURMUR_CHECK(!active_);
  MURMUR_CHECK(!started_ || iteration > iteration_);
  MURMUR_CHECK_EQ(local.size(), options_.dimension);
  started_ = true;
  active_ = true;
  iteration_ = iteration;
  next_step_ = 0;
  MURMUR_CHECK_OK(kernels::Copy<float>(options_.device, data_.span(), options_.device, local));
  // Buffered messages of older iterations can never be used.
  for (auto it = early_.begin(); it != early_.end();) {
    if (it->first.first < iteration) {
      ++stats_.late_dropped;
      it = early_.erase(it);
    } else {
      ++it;
    }
  }
  if (options_.size == 1) {
    active_ = false;
    ++stats_.iterations;
    actions_.emplace_back(Aggregated{iteration_, data_.span()});
    return;
  }
  SendStep(0);
  Drain();
}

void RingAllReduce::SendStep(uint32_t step) {
  const int64_t n = options_.size;
  // Reduce-scatter step k sends chunk rank - k; all-gather step k' sends chunk rank + 1 - k'.
  // Either way it is the chunk this rank updated last.
  const int64_t chunk = step < n - 1 ? Mod(options_.rank - step)
                                     : Mod(options_.rank + 1 - (step - (n - 1)));
  auto [b, e] = Chunk(chunk);
  CodedSend send;
  send.to = Mod(options_.rank + 1);
  send.header = {.kind = CodedMessage::Kind::kPartialGradient,
                 .iteration = iteration_,
                 .tree_position = step,
                 .dimension = options_.dimension};
  send.vector.resize(e - b);
  MURMUR_CHECK_OK(kernels::Copy<float>(kernels::Device::Cpu(), send.vector, options_.device,
                                       data_.span().subspan(b, e - b)));
  actions_.emplace_back(std::move(send));
}

void RingAllReduce::Step(int64_t from, const CodedMessage& header, std::span<const float> vector) {
  const int64_t n = options_.size;
  const auto steps = static_cast<uint32_t>(2 * (n - 1));
  if (n == 1 || from != Mod(options_.rank - 1) ||
      header.kind != CodedMessage::Kind::kPartialGradient ||
      header.dimension != options_.dimension || header.tree_position >= steps) {
    ++stats_.rejected;
    return;
  }
  const uint32_t step = header.tree_position;
  // The chunk this step carries: reduce-scatter receives rank - k - 1, all-gather rank - k'.
  const int64_t chunk = step < n - 1 ? Mod(options_.rank - step - 1)
                                     : Mod(options_.rank - (step - (n - 1)));
  auto [b, e] = Chunk(chunk);
  if (vector.size() != e - b) {
    ++stats_.rejected;
    return;
  }
  if (started_ && (header.iteration < iteration_ ||
                   (header.iteration == iteration_ && (!active_ || step < next_step_)))) {
    ++stats_.late_dropped;
    return;
  }
  if (active_ && header.iteration == iteration_ && step == next_step_) {
    Apply(step, vector);
    Drain();
    return;
  }
  // Early: the previous rank is ahead. At most one iteration's worth can be ahead of us.
  if (early_.size() >= 2 * static_cast<size_t>(steps)) {
    ++stats_.rejected;
    return;
  }
  auto [it, inserted] = early_.try_emplace({header.iteration, step}, vector.begin(), vector.end());
  if (!inserted) ++stats_.duplicates;
}

void RingAllReduce::Apply(uint32_t step, std::span<const float> vector) {
  const int64_t n = options_.size;
  const bool reduce = step < n - 1;
  const int64_t chunk = reduce ? Mod(options_.rank - step - 1) : Mod(options_.rank - (step - (n - 1)));
  const std::span<float> target = data_.span().subspan(Chunk(chunk).first, vector.size());
  if (reduce) {
    const std::span<float> received = chunk_.span().first(vector.size());
    MURMUR_CHECK_OK(kernels::Copy<float>(options_.device, received, kernels::Device::Cpu(), vector));
    MURMUR_CHECK_OK(kernels::Axpy(options_.device, 1.0f, received, target));
  } else {
    MURMUR_CHECK_OK(kernels::Copy<float>(options_.device, target, kernels::Device::Cpu(), vector));
  }
  ++next_step_;
  if (next_step_ == static_cast<uint32_t>(2 * (n - 1))) {
    active_ = false;
    ++stats_.iterations;
    actions_.emplace_back(Aggregated{iteration_, data_.span()});
    return;
  }
  SendStep(next_step_);
}

void RingAllReduce::Drain() {
  while (active_) {
    auto it = early_.find({iteration_, next_step_});
    if (it == early_.end()) return;
    std::vector<float> v = std::move(it->second);
    early_.erase(it);
    Apply(next_step_, v);
  }
}

std::vector<CodedAction> RingAllReduce::TakeOutput() { return std::exchange(actions_, {}); }

}  // namespace murmur::gossip
