#include "gossip/param_server.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/check.h"
#include "base/spec.h"

namespace murmur::gossip {

StatusOr<PsSyncSpec> ParsePsSync(std::string_view text) {
  if (text == "full") return PsSyncSpec{PsSync::kFull, 0};
  if (text == "async") return PsSyncSpec{PsSync::kAsync, 0};
  if (text.starts_with("ssp:")) {
    if (const StatusOr<int64_t> s = ParseNumber<int64_t>(text.substr(4), "bound");
        s.ok() && *s >= 0) {
      return PsSyncSpec{PsSync::kSsp, *s};
    }
    return InvalidArgumentError(
        fmt::format("'{}': the staleness bound after 'ssp:' must be an integer >= 0", text));
  }
  return InvalidArgumentError(fmt::format(
      "'{}': expected full (bulk synchronous), async, or ssp:S (stale-synchronous: a worker at "
      "most S gradients ahead of the slowest)",
      text));
}

std::string PsDescription(const PsOptions& o) {
  std::string out = o.sync == PsSync::kFull    ? "full"
                    : o.sync == PsSync::kAsync ? "async"
                                               : fmt::format("ssp:{}", o.ssp_bound);
  if (o.sync == PsSync::kFull && o.backup > 0) out += fmt::format(", {} backup", o.backup);
  if (o.sync != PsSync::kFull && o.staleness_lr) out += ", staleness-scaled lr";
  if (o.sync != PsSync::kFull) {
    out += o.momentum == PsMomentum::kDana ? ", DANA momentum" : ", server momentum";
  }
  return out;
}

Status ValidatePs(const PsOptions& o, int64_t workers) {
  if (o.servers < 1 || o.servers > 64) {
    return InvalidArgumentError(fmt::format("servers = {}: must be in [1, 64]", o.servers));
  }
  if (o.backup < 0 || o.backup >= workers) {
    return InvalidArgumentError(fmt::format(
        "backup = {}: must be in [0, N) = [0, {}) (the server steps with N - backup gradients)",
        o.backup, workers));
  }
  if (o.backup > 0 && o.sync != PsSync::kFull) {
    return InvalidArgumentError(
        "backup workers are for ps_sync full (async and ssp never wait "
        "for every worker)");
  }
  if (o.staleness_lr && o.sync == PsSync::kFull) {
    return InvalidArgumentError(
        "staleness_lr is for ps_sync async or ssp:S (a synchronous "
        "server's gradients are never stale)");
  }
  if (o.momentum == PsMomentum::kDana && o.sync == PsSync::kFull) {
    return InvalidArgumentError(
        "ps_momentum dana is for ps_sync async or ssp:S (a synchronous server steps once per "
        "iteration with one velocity)");
  }
  if (o.ssp_bound < 0) return InvalidArgumentError("the SSP bound must be >= 0");
  return OkStatus();
}

std::pair<size_t, size_t> PsSlice(size_t dimension, int64_t servers, int64_t server) {
  const auto k = static_cast<size_t>(server), K = static_cast<size_t>(servers);
  return {dimension * k / K, dimension * (k + 1) / K};
}

// ---- PsServer ----

PsServer::PsServer(Options options, std::span<const float> slice)
    : options_(options),
      range_(PsSlice(options.dimension, options.ps.servers, options.server)),
      model_(slice.begin(), slice.end()),
      pushes_(static_cast<size_t>(options.workers), 0) {
  MURMUR_CHECK(model_.size() == range_.second - range_.first) << "the server's slice";
  for (int64_t w = 0; w < options_.workers; ++w) live_.insert(w);
  sum_.assign(model_.size(), 0.0);
  rounded_.resize(model_.size());
  auto buffer = kernels::Buffer<float>::Create(options_.device, model_.size());
  MURMUR_CHECK_OK(buffer.status());
  result_ = *std::move(buffer);
  if (options_.ps.momentum == PsMomentum::kDana && options_.ps.sync != PsSync::kFull) {
    velocities_.assign(static_cast<size_t>(options_.workers), std::vector<float>(model_.size()));
    reply_.resize(model_.size());
  }
}

StatusOr<PsServer> PsServer::Create(Options options, std::span<const float> slice) {
  const size_t bytes = static_cast<size_t>(options.workers) * slice.size() * sizeof(float);
  if (options.ps.momentum == PsMomentum::kDana && options.ps.sync != PsSync::kFull &&
      bytes > kMaxDanaBytes) {
    return InvalidArgumentError(fmt::format(
        "ps_momentum dana: {} workers' velocities of a {}-value slice take {} MiB, over the "
        "server's {} MiB: use more --servers or --ps-momentum server",
        options.workers, slice.size(), bytes >> 20, kMaxDanaBytes >> 20));
  }
  return PsServer(options, slice);
}

int64_t PsServer::Positions(int64_t worker) const {
  const int64_t b = options_.batch, n = options_.workers;
  return b * (worker + 1) / n - b * worker / n;
}

void PsServer::Step(int64_t from, const CodedMessage& h, std::span<const float> v) {
  const int64_t w = Worker(from);
  if (w < 0 || w >= options_.workers || h.kind != CodedMessage::Kind::kPartialGradient ||
      h.tree_position != static_cast<uint32_t>(options_.server) || v.size() != model_.size() ||
      h.dimension != options_.dimension || h.iteration > version_ || applying_) {
    ++stats_.rejected;
    return;
  }
  if (!live_.count(w)) {  // dropped by the membership: its gradients no longer count
    ++stats_.late_dropped;
    return;
  }
  if (options_.ps.sync == PsSync::kFull) {
    if (h.iteration < version_) {
      ++stats_.late_dropped;  // a backup worker's answer after the cut
      return;
    }
    if (!got_.insert(w).second) {
      ++stats_.duplicates;
      return;
    }
    for (size_t i = 0; i < v.size(); ++i) sum_[i] += v[i];
    positions_ += Positions(w);
    ++pushes_[static_cast<size_t>(w)];
    return TryCut();
  }
  if (deferred_.count(w)) {  // pushed again before its reply: not the protocol
    ++stats_.rejected;
    return;
  }
  const uint64_t staleness = version_ - h.iteration;
  stats_.staleness_sum += staleness;
  stats_.staleness_max = std::max(stats_.staleness_max, staleness);
  ++stats_.applied;
  ++pushes_[static_cast<size_t>(w)];
  const double scale =
      options_.ps.staleness_lr ? 1.0 / static_cast<double>(std::max<uint64_t>(1, staleness)) : 1.0;
  applying_ = true;
  answer_ = w;
  if (!dana()) {
    MURMUR_CHECK_OK(result_.CopyFromHost(v));
    actions_.emplace_back(Aggregated{version_, result_.span(),
                                     scale / static_cast<double>(options_.batch), range_.first});
    return;
  }
  // DANA-Zero §4: v_w = μ v_w + g / B, Σ v kept in double; the node steps θ -= lr v_w.
  std::vector<float>& velocity = velocities_[static_cast<size_t>(w)];
  const auto mu = static_cast<float>(options_.momentum);
  const auto c = static_cast<float>(scale / static_cast<double>(options_.batch));
  for (size_t i = 0; i < v.size(); ++i) {
    const float next = mu * velocity[i] + c * v[i];
    sum_[i] += static_cast<double>(next) - static_cast<double>(velocity[i]);
    velocity[i] = next;
  }
  MURMUR_CHECK_OK(result_.CopyFromHost(velocity));
  actions_.emplace_back(
      Aggregated{version_, result_.span(), 1.0, range_.first, /*with_momentum=*/true});
}

void PsServer::TryCut() {
  if (got_.empty() || applying_) return;
  const auto need = static_cast<size_t>(
      std::max<int64_t>(1, static_cast<int64_t>(live_.size()) - options_.ps.backup));
  if (got_.size() < need) return;
  std::transform(sum_.begin(), sum_.end(), rounded_.begin(),
                 [](double v) { return static_cast<float>(v); });
  MURMUR_CHECK_OK(result_.CopyFromHost(rounded_));
  stats_.applied += got_.size();
  stats_.children_waited += got_.size();
  stats_.children_ignored += live_.size() - std::min(live_.size(), got_.size());
  applying_ = true;
  actions_.emplace_back(
      Aggregated{version_, result_.span(), 1.0 / static_cast<double>(positions_), range_.first});
}

void PsServer::Applied(std::span<const float> slice, double lr) {
  MURMUR_CHECK(applying_ && slice.size() == model_.size()) << "Applied answers an Aggregated";
  applying_ = false;
  lr_ = lr;
  std::copy(slice.begin(), slice.end(), model_.begin());
  ++version_;
  ++stats_.iterations;
  if (options_.ps.sync == PsSync::kFull) {
    std::fill(sum_.begin(), sum_.end(), 0.0);
    got_.clear();
    positions_ = 0;
    for (int64_t w : live_) Reply(w);
    return;
  }
  const int64_t w = *answer_;
  answer_.reset();
  if (MayProceed(w)) {
    Reply(w);
  } else {
    deferred_.insert(w);
    ++stats_.gated;
  }
  Release();
}

bool PsServer::MayProceed(int64_t w) const {
  if (options_.ps.sync != PsSync::kSsp) return true;
  int64_t slowest = pushes_[static_cast<size_t>(w)];
  for (int64_t v : live_) slowest = std::min(slowest, pushes_[static_cast<size_t>(v)]);
  return pushes_[static_cast<size_t>(w)] - slowest <= options_.ps.ssp_bound;
}

void PsServer::Release() {
  for (auto it = deferred_.begin(); it != deferred_.end();) {
    if (MayProceed(*it)) {
      Reply(*it);
      it = deferred_.erase(it);
    } else {
      ++it;
    }
  }
}

void PsServer::Reply(int64_t w) {
  const CodedMessage header{CodedMessage::Kind::kModel, version_,
                            static_cast<uint32_t>(options_.server), options_.dimension};
  if (!dana()) {
    actions_.emplace_back(CodedSend{w + options_.ps.servers, header, model_});
    return;
  }
  // DANA-Zero's look-ahead: θ - lr μ Σ_w v_w.
  const double step = lr_ * options_.momentum;
  for (size_t i = 0; i < model_.size(); ++i) {
    reply_[i] = static_cast<float>(static_cast<double>(model_[i]) - step * sum_[i]);
  }
  actions_.emplace_back(CodedSend{w + options_.ps.servers, header, reply_});
}

void PsServer::DropWorker(int64_t rank) {
  const int64_t w = Worker(rank);
  if (!live_.erase(w)) return;
  deferred_.erase(w);
  if (dana()) {  // its momentum no longer moves the model
    std::vector<float>& velocity = velocities_[static_cast<size_t>(w)];
    for (size_t i = 0; i < velocity.size(); ++i) sum_[i] -= velocity[i];
    velocity.assign(velocity.size(), 0.0f);
  }
  if (got_.erase(w)) {
    // Its gradient stays out of a sum it can no longer be counted in consistently.
    positions_ = 0;
    std::fill(sum_.begin(), sum_.end(), 0.0);
    got_.clear();
    // The others' gradients of this iteration are lost with it: they compute it again.
    for (int64_t v : live_) Reply(v);
    return;
  }
  if (!applying_) {
    TryCut();
    Release();
  }
}

std::vector<CodedAction> PsServer::TakeOutput() { return std::exchange(actions_, {}); }

// ---- PsWorker ----

PsWorker::PsWorker(Options options, std::vector<float> initial_model)
    : options_(options),
      model_(std::move(initial_model)),
      version_(static_cast<size_t>(options.ps.servers), 0) {}

StatusOr<PsWorker> PsWorker::Create(Options options, std::vector<float> initial_model) {
  PsWorker worker(options, std::move(initial_model));
  if (options.compress) {
    for (int64_t k = 0; k < options.ps.servers; ++k) {
      const auto [begin, end] = PsSlice(worker.model_.size(), options.ps.servers, k);
      MURMUR_ASSIGN_OR_RETURN(coding::Compressor c,
                              coding::Compressor::Create(*options.compress, end - begin));
      worker.compressors_.push_back(std::move(c));
    }
  }
  return worker;
}

void PsWorker::Start() { actions_.emplace_back(ComputeRequest{0, model_}); }

void PsWorker::Step(int64_t from, const CodedMessage& h, std::span<const float> v) {
  const auto k = static_cast<size_t>(from);
  const auto [begin, end] = PsSlice(model_.size(), options_.ps.servers, from);
  if (from < 0 || from >= options_.ps.servers || h.kind != CodedMessage::Kind::kModel ||
      h.tree_position != k || v.size() != end - begin || h.dimension != model_.size()) {
    ++stats_.rejected;
    return;
  }
  if (h.iteration <= version_[k]) {
    ++stats_.late_dropped;
    return;
  }
  std::copy(v.begin(), v.end(), model_.begin() + static_cast<std::ptrdiff_t>(begin));
  version_[k] = h.iteration;
  answered_ |= uint64_t{1} << k;
  const uint64_t all =
      options_.ps.servers == 64 ? ~uint64_t{0} : (uint64_t{1} << options_.ps.servers) - 1;
  if (options_.ps.sync == PsSync::kFull) {
    const uint64_t next = *std::min_element(version_.begin(), version_.end());
    if (next <= current_) return;
    current_ = next;
  } else {
    if (answered_ != all) return;
    current_ = clock_;
  }
  answered_ = 0;
  actions_.emplace_back(ComputeRequest{current_, model_});
}

void PsWorker::Step(const OwnPart& own, const kernels::Device& device) {
  if (own.iteration != current_ || own.partial.size() != model_.size()) {
    ++stats_.stale_own;  // a newer model came while it was computed (backup workers' cut)
    return;
  }
  gradient_.resize(own.partial.size());
  MURMUR_CHECK_OK(kernels::Copy<float>(kernels::Device::Cpu(), gradient_, device, own.partial));
  ++clock_;
  ++stats_.iterations;
  answered_ = 0;
  for (int64_t k = 0; k < options_.ps.servers; ++k) {
    const auto [begin, end] = PsSlice(model_.size(), options_.ps.servers, k);
    const std::span<const float> slice(gradient_.data() + begin, end - begin);
    CodedSend send{
        k,
        CodedMessage{CodedMessage::Kind::kPartialGradient, version_[static_cast<size_t>(k)],
                     static_cast<uint32_t>(k), options_.dimension},
        {},
        {}};
    if (compressors_.empty()) {
      send.vector.assign(slice.begin(), slice.end());
    } else {
      // The gradient is finite (SyncNode checks it first): compressing cannot fail.
      MURMUR_CHECK_OK(compressors_[static_cast<size_t>(k)].Compress(slice, update_, send.encoded));
    }
    actions_.emplace_back(std::move(send));
  }
}

std::vector<float> PsWorker::residual() const {
  std::vector<float> out;
  for (const coding::Compressor& c : compressors_) {
    out.insert(out.end(), c.residual().begin(), c.residual().end());
  }
  return out;
}

std::vector<CodedAction> PsWorker::TakeOutput() { return std::exchange(actions_, {}); }

}  // namespace murmur::gossip
