#include "gossip/choco.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/check.h"
#include "base/log.h"
#include "coding/vector_ops.h"
#include "gossip/node_io.h"
#include "kernels/compress_ops.h"
#include "kernels/gossip_ops.h"

namespace murmur::gossip {

StatusOr<std::unique_ptr<ChocoGossip>> ChocoGossip::Create(const ChocoOptions& options,
                                                           std::span<const float> public_copy,
                                                           std::span<const float> initial_model,
                                                           bool from_initial) {
  MURMUR_RETURN_IF_ERROR(options.Validate());
  if (public_copy.size() != options.dimension || initial_model.size() != options.dimension) {
    return InvalidArgumentError("CHOCO: public copy of " + std::to_string(public_copy.size()) +
                                " and initial model of " + std::to_string(initial_model.size()) +
                                " values for a model of " + std::to_string(options.dimension));
  }
  if (!coding::AllFinite(public_copy)) {
    return InvalidArgumentError("CHOCO: the initial public copy holds a NaN or infinity");
  }
  coding::CompressorOptions compressor = options.compressor;
  compressor.error_feedback = false;
  std::unique_ptr<ChocoGossip> g(new ChocoGossip(options));
  if (options.device_compressor || options.device.is_cuda()) {
    MURMUR_ASSIGN_OR_RETURN(g->device_compressor_, coding::DeviceCompressor::Create(
                                                       compressor, options.dimension, options.device));
  } else {
    MURMUR_ASSIGN_OR_RETURN(g->host_compressor_,
                            coding::Compressor::Create(compressor, options.dimension));
  }
  MURMUR_ASSIGN_OR_RETURN(g->public_, g->Upload(public_copy));
  MURMUR_ASSIGN_OR_RETURN(g->initial_, g->Upload(initial_model));
  if (g->device_compressor_) {  // the host compressor reads x − x̂ without it
    MURMUR_ASSIGN_OR_RETURN(g->diff_,
                            kernels::Buffer<float>::Create(options.device, options.dimension));
  }
  if (!options.device.is_cpu()) {  // the host's consensus step needs no scratch
    MURMUR_ASSIGN_OR_RETURN(g->terms_,
                            kernels::Buffer<float>::Create(options.device, options.dimension));
  }
  g->from_initial_ = from_initial;
  g->public_norm_ = std::sqrt(coding::SquaredL2Norm(public_copy));
  return g;
}

ChocoGossip::ChocoGossip(const ChocoOptions& options)
    : options_(options),
      device_(options.device),
      gamma_(options.gamma > 0 ? options.gamma : DefaultGamma(options.compressor)),
      snapshots_served_(options.snapshots_per_s, options.snapshot_burst) {}

StatusOr<kernels::Buffer<float>> ChocoGossip::Upload(std::span<const float> host) const {
  return kernels::Buffer<float>::FromHost(device_, host);
}

void ChocoGossip::Assign(kernels::Buffer<float>& dst, std::span<const float> src) const {
  if (dst.size() != src.size()) {
    auto fresh = kernels::Buffer<float>::Create(device_, src.size());
    MURMUR_CHECK_OK(fresh.status());
    dst = std::move(*fresh);
  }
  MURMUR_CHECK_OK(kernels::Copy<float>(device_, dst.span(), device_, src));
}

void ChocoGossip::Add(const coding::Update& update, std::span<float> x) {
  MURMUR_CHECK_OK(coding::AddTo(device_, update, 1.0f, x, staging_));
}

std::vector<float> ChocoGossip::PublicCopyOnHost() const {
  std::vector<float> host(public_.size());
  MURMUR_CHECK_OK(public_.CopyToHost(host));
  return host;
}

RoundPeers ChocoGossip::Peers(const std::vector<NodeId>& view, uint64_t round) const {
  if (!std::binary_search(view.begin(), view.end(), options_.self)) return {};
  if (options_.sampling.topology == Topology::kExponential) {
    return PeersFor(options_.sampling, view, options_.self, round);
  }
  // A ring, and the random graph (drawn once per view, round 0), change only with the view:
  // built once per view instead of on every step's gate and every round (PeersFor builds the
  // whole graph).
  if (!peers_view_.has_value() || *peers_view_ != view) {
    peers_ = PeersFor(options_.sampling, view, options_.self, 0);
    peers_view_ = view;
  }
  return peers_;
}

std::vector<NodeId> ChocoGossip::Trackers(const std::vector<NodeId>& view, uint64_t round) const {
  std::vector<NodeId> out = Peers(view, round).send_to;
  if (options_.sampling.topology == Topology::kExponential && view.size() > 2) {
    const int period = static_cast<int>(std::ceil(std::log2(static_cast<double>(view.size()))));
    for (int r = 1; r < period; ++r) {
      for (NodeId id : Peers(view, round + r).send_to) out.push_back(id);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void ChocoGossip::RequestSnapshot(NodeId id, Copy& copy, TimePoint now) {
  copy.ready = false;
  if (copy.requested && now - copy.requested_at < options_.snapshot_retry) return;
  copy.requested = true;
  copy.snapshots_asked = std::min(copy.snapshots_asked + 1, 8);
  copy.requested_at = now;
  output_.push_back({id, SnapshotRequest{copy.valid ? copy.version : 0, false, copy.valid}, nullptr});
}

void ChocoGossip::Log(const UpdateHeader& header, std::shared_ptr<const std::vector<std::byte>> bytes) {
  // Never more than a dense snapshot (4 bytes a value): a longer replay would cost more than it.
  const size_t bound = sizeof(float) * static_cast<size_t>(options_.dimension);
  log_bytes_ += bytes->size();
  log_.push_back({header, std::move(bytes)});
  while (!log_.empty() && log_bytes_ > bound) {
    log_bytes_ -= log_.front().bytes->size();
    log_.pop_front();
  }
}

ChocoStepResult ChocoGossip::ServeRequest(const ChocoIncoming& m, const SnapshotRequest& request,
                                          TimePoint now) {
  if (request.model) {
    return {ChocoVerdict::kRejected,
            InvalidArgumentError("model snapshots are served by the node, not by CHOCO"),
            coding::DecodeFailure::kNone};
  }
  if (!snapshots_served_.Take(now)) {
    return {ChocoVerdict::kRateLimited, ResourceExhaustedError("public-copy snapshots beyond the rate"),
            coding::DecodeFailure::kNone};
  }
  // The log holds versions (version_ − log_.size(), version_]: a replay from f needs f + 1 in it.
  const uint64_t first_logged = version_ - log_.size() + 1;
  if (request.replay && request.from_sequence < version_ && request.from_sequence + 1 >= first_logged) {
    for (const Logged& entry : log_) {
      if (entry.header.round > request.from_sequence) {
        output_.push_back({m.from, entry.header, entry.bytes});
      }
    }
    return {ChocoVerdict::kReplayServed, OkStatus(), coding::DecodeFailure::kNone};
  }
  auto bytes = std::make_shared<std::vector<std::byte>>();
  if (device_.is_cpu()) {
    coding::EncodeDense(public_.span(), *bytes);
  } else {
    coding::EncodeDense(PublicCopyOnHost(), *bytes);
  }
  output_.push_back({m.from, SnapshotReply{version_, options_.dimension, false}, std::move(bytes)});
  return {ChocoVerdict::kSnapshotServed, OkStatus(), coding::DecodeFailure::kNone};
}

ChocoStepResult ChocoGossip::Step(const ChocoIncoming& m, TimePoint now) {
  if (m.from == options_.self) {
    return {ChocoVerdict::kRejected, InvalidArgumentError("a CHOCO message from this node's own id"),
            coding::DecodeFailure::kNone};
  }
  if (const auto* request = std::get_if<SnapshotRequest>(&m.payload)) {
    return ServeRequest(m, *request, now);
  }
  if (closed_) return {ChocoVerdict::kClosed, OkStatus(), coding::DecodeFailure::kNone};
  auto it = copies_.find(m.from);
  if (it == copies_.end() && !CanAdmit(m.from)) {
    return {ChocoVerdict::kNotTracked,
            ResourceExhaustedError(std::to_string(copies_.size()) + " copies held (max_copies) and " +
                                   "the sender is not a mixing peer"),
            coding::DecodeFailure::kNone};
  }
  if (it != copies_.end() && m.incarnation < it->second.incarnation) {
    return {ChocoVerdict::kStaleIncarnation, OkStatus(), coding::DecodeFailure::kNone};
  }
  // A new sender, or a sender's new incarnation (a restart), starts its copy afresh: staged, and
  // committed (with an eviction to make room) only when the message is not refused, so that a
  // refused message changes no copy this node tracks.
  const bool fresh = it == copies_.end() || m.incarnation > it->second.incarnation;
  Copy staged;
  staged.incarnation = m.incarnation;
  Copy& copy = fresh ? staged : it->second;
  ChocoStepResult result = OnCopyMessage(m, copy, now);
  if (!ChocoRefusal(result).empty()) return result;
  copy.last_update = ++update_counter_;
  if (fresh) {
    if (it == copies_.end()) MURMUR_CHECK(MakeRoom(m.from)) << "CanAdmit held a place";
    copies_.insert_or_assign(m.from, std::move(staged));
  }
  return result;
}

ChocoStepResult ChocoGossip::OnCopyMessage(const ChocoIncoming& m, Copy& copy, TimePoint now) {
  if (const auto* h = std::get_if<UpdateHeader>(&m.payload)) return OnUpdate(m, *h, copy, now);
  if (const auto* h = std::get_if<SnapshotReply>(&m.payload)) {
    if (h->model) {
      return {ChocoVerdict::kRejected,
              InvalidArgumentError("model snapshots are taken by the node, not by CHOCO"),
              coding::DecodeFailure::kNone};
    }
    return OnSnapshot(m, *h, copy);
  }
  return {ChocoVerdict::kRejected, InvalidArgumentError("not a CHOCO message"),
          coding::DecodeFailure::kNone};
}

ChocoStepResult ChocoGossip::OnUpdate(const ChocoIncoming& m, const UpdateHeader& h, Copy& copy,
                                      TimePoint now) {
  if (h.dimension != options_.dimension) {
    return {ChocoVerdict::kRejected,
            InvalidArgumentError("update for a model of " + std::to_string(h.dimension) +
                                 " parameters; this model has " + std::to_string(options_.dimension)),
            coding::DecodeFailure::kWrongDimension};
  }
  if (h.round != h.base_sequence + 1) {
    return {ChocoVerdict::kRejected,
            InvalidArgumentError("update from version " + std::to_string(h.base_sequence) + " to " +
                                 std::to_string(h.round) + ": a stream advances by one"),
            coding::DecodeFailure::kNone};
  }
  if (copy.valid && h.round <= copy.version) {
    return {ChocoVerdict::kDuplicate, OkStatus(), coding::DecodeFailure::kNone};
  }
  if (!copy.valid && h.from_initial && !initial_.empty()) {
    // Version 0 of this stream is the seeded initial model, which this node holds: a stream
    // joined late needs only the updates after it (a replay).
    Assign(copy.values, initial_.span());
    copy.version = 0;
    copy.valid = true;
  }
  if (!copy.valid || h.base_sequence != copy.version) {
    if (copy.requested && now - copy.requested_at < options_.snapshot_retry) {
      copy.ready = false;
      return {ChocoVerdict::kAwaitingSnapshot, OkStatus(), coding::DecodeFailure::kNone};
    }
    RequestSnapshot(m.from, copy, now);
    return {ChocoVerdict::kGap, OkStatus(), coding::DecodeFailure::kNone};
  }
  coding::DecodeFailure failure = coding::DecodeFailure::kNone;
  if (Status s = coding::DecodeUpdate(m.frame, options_.dimension, update_, &failure); !s.ok()) {
    // The stream now has a hole: the next update will not fit and brings a snapshot.
    return {ChocoVerdict::kRejected, s, failure};
  }
  const double norm = std::sqrt(coding::SquaredL2Norm(update_.values));
  // Before any norm is known (a stream's first update before this node's first round: with H
  // local steps, or an outer optimizer's, that is H steps long) half of ‖x̂_i‖ alone bounds it.
  if (options_.outlier_factor > 0 && (copy.norms > 0 || own_norms_ > 0 || public_norm_ > 0)) {
    const double reference = copy.norms > 0 ? copy.norm_average
                             : own_norms_ > 0 ? own_norm_average_
                                              : 0.0;
    const double bound = std::max(options_.outlier_factor * reference, 0.5 * public_norm_);
    if (!(norm <= bound)) {
      return {ChocoVerdict::kOutlier,
              InvalidArgumentError("update norm " + std::to_string(norm) + " is beyond " +
                                   std::to_string(bound) + " (" +
                                   std::to_string(options_.outlier_factor) +
                                   " x the recent update norms, and half the public copy's)"),
              coding::DecodeFailure::kNone};
    }
  }
  copy.norm_average = copy.norms == 0 ? norm : 0.9 * copy.norm_average + 0.1 * norm;
  ++copy.norms;
  // Invariant: a tracked copy moves one version at a time, and only from the version the update
  // names (the checks above refused every other update), so it equals its owner's x̂ at that
  // version.
  MURMUR_CHECK_EQ(h.round, copy.version + 1);
  Add(update_, copy.values.span());
  copy.version = h.round;
  copy.ready = true;
  copy.requested = false;
  return {ChocoVerdict::kApplied, OkStatus(), coding::DecodeFailure::kNone};
}

ChocoStepResult ChocoGossip::OnSnapshot(const ChocoIncoming& m, const SnapshotReply& h, Copy& copy) {
  coding::DecodeFailure failure = coding::DecodeFailure::kNone;
  if (h.dimension != options_.dimension) {
    return {ChocoVerdict::kRejected,
            InvalidArgumentError("snapshot of a model of " + std::to_string(h.dimension) +
                                 " parameters; this model has " + std::to_string(options_.dimension)),
            coding::DecodeFailure::kWrongDimension};
  }
  if (Status s = coding::DecodeUpdate(m.frame, options_.dimension, update_, &failure); !s.ok()) {
    return {ChocoVerdict::kRejected, s, failure};
  }
  if (!update_.dense) {
    return {ChocoVerdict::kRejected, InvalidArgumentError("a public-copy snapshot must be dense"),
            coding::DecodeFailure::kBadHeader};
  }
  if (copy.snapshots_asked == 0) {
    return {ChocoVerdict::kRejected, InvalidArgumentError("a snapshot that was not asked for"),
            coding::DecodeFailure::kNone};
  }
  --copy.snapshots_asked;
  if (copy.valid && h.round <= copy.version) {
    return {ChocoVerdict::kDuplicate, OkStatus(), coding::DecodeFailure::kNone};
  }
  // Staged in the buffer a previous snapshot left behind (swapped out below), so a stream's
  // snapshots cost no allocation after the first.
  if (incoming_.size() != update_.values.size()) {
    auto staged = Upload(update_.values);
    MURMUR_CHECK_OK(staged.status());
    incoming_ = std::move(*staged);
  } else {
    MURMUR_CHECK_OK(incoming_.CopyFromHost(update_.values));
  }
  if (options_.snapshot_distance > 0 && public_norm_ > 0) {
    double d2 = 0;
    MURMUR_CHECK_OK(kernels::SquaredDistance(device_, incoming_.span(), public_.span(), &d2));
    const double bound = options_.snapshot_distance * public_norm_;
    if (!(std::sqrt(d2) <= bound)) {
      return {ChocoVerdict::kOutlier,
              InvalidArgumentError("snapshot at distance " + std::to_string(std::sqrt(d2)) +
                                   " from this node's public copy (bound " +
                                   std::to_string(bound) + ")"),
              coding::DecodeFailure::kNone};
    }
  }
  copy.norms = 0;  // a new start of the stream's history
  std::swap(copy.values, incoming_);
  copy.version = h.round;
  copy.valid = true;
  copy.ready = true;
  copy.requested = false;
  return {ChocoVerdict::kApplied, OkStatus(), coding::DecodeFailure::kNone};
}

StatusOr<ChocoRoundStats> ChocoGossip::Round(std::span<float> x, const std::vector<NodeId>& view,
                                             uint64_t round,
                                             const std::function<double(NodeId)>& damping) {
  MURMUR_ASSIGN_OR_RETURN(ChocoRoundStats stats, Publish(x, view, round));
  Mix(x, view, round, damping, stats);
  return stats;
}

StatusOr<ChocoRoundStats> ChocoGossip::Publish(std::span<float> x, const std::vector<NodeId>& view,
                                               uint64_t round) {
  MURMUR_CHECK(!closed_) << "a CHOCO round after Close";
  const size_t d = options_.dimension;
  if (x.size() != d) {
    return InvalidArgumentError("CHOCO round with a model of " + std::to_string(x.size()) +
                                " values; expected " + std::to_string(d));
  }
  ChocoRoundStats stats;
  auto bytes = std::make_shared<std::vector<std::byte>>();
  bool encoded = false;
  if (device_compressor_) {
    int64_t bad = 0;
    MURMUR_RETURN_IF_ERROR(kernels::CountNonFinite(device_, x, &bad));
    if (bad > 0) {
      return InvalidArgumentError("CHOCO round skipped: " + std::to_string(bad) +
                                  " model entries are not finite");
    }
    MURMUR_RETURN_IF_ERROR(kernels::Subtract(device_, x, public_.span(), diff_.span()));
    MURMUR_RETURN_IF_ERROR(device_compressor_->Compress(diff_.span(), update_));
  } else {
    // One pass over x and x̂ for top-k (the difference is not written); the wire bytes in the
    // same pass for the dense operators. A refusal changes nothing; a non-finite x is named.
    if (Status s = host_compressor_->CompressDifference(x, public_.span(), update_, *bytes);
        !s.ok()) {
      if (auto bad = coding::FirstNonFinite(x)) {
        return InvalidArgumentError("CHOCO round skipped: model entry " + std::to_string(*bad) +
                                    " is not finite");
      }
      return s;
    }
    encoded = true;
  }
  Add(update_, public_.span());
  ++version_;  // Invariant: the own stream advances by one per round; its updates name version − 1.
  const double own_norm = std::sqrt(coding::SquaredL2Norm(update_.values));
  own_norm_average_ = own_norms_ == 0 ? own_norm : 0.9 * own_norm_average_ + 0.1 * own_norm;
  ++own_norms_;
  stats.sent_values = update_.count();
  const std::vector<NodeId> trackers = Trackers(view, round);
  stats.trackers = trackers.size();
  // Encoded with no tracker too: the update stays in the replay log for a reader that comes later.
  stats.encoded_bytes = encoded ? bytes->size() : coding::EncodeUpdate(update_, *bytes);
  const UpdateHeader header{version_, version_ - 1, options_.dimension, update_.dense,
                            from_initial_};
  for (NodeId to : trackers) output_.push_back({to, header, bytes});
  Log(header, std::move(bytes));
  MaybeReleaseInitial();
  return stats;
}

void ChocoGossip::MaybeReleaseInitial() {
  if (initial_.empty() || log_.empty() || log_.front().header.base_sequence == 0) return;
  for (NodeId id : mixing_) {
    auto it = copies_.find(id);
    if (it == copies_.end() || !it->second.valid) return;
  }
  initial_ = {};
}

std::map<NodeId, ChocoGossip::Copy>::const_iterator ChocoGossip::Victim() const {
  auto victim = copies_.end();
  for (auto it = copies_.begin(); it != copies_.end(); ++it) {
    if (std::binary_search(mixing_.begin(), mixing_.end(), it->first)) continue;
    if (victim == copies_.end() || it->second.last_update < victim->second.last_update) victim = it;
  }
  return victim;
}

bool ChocoGossip::CanAdmit(NodeId from) const {
  if (copies_.size() < std::max<size_t>(1, options_.max_copies)) return true;
  return std::binary_search(mixing_.begin(), mixing_.end(), from) && Victim() != copies_.end();
}

bool ChocoGossip::MakeRoom(NodeId from) {
  if (!CanAdmit(from)) return false;
  if (copies_.size() < std::max<size_t>(1, options_.max_copies)) return true;
  copies_.erase(Victim());
  return true;
}

void ChocoGossip::Mix(std::span<float> x, const std::vector<NodeId>& view, uint64_t round,
                      const std::function<double(NodeId)>& damping, ChocoRoundStats& stats) {
  MURMUR_CHECK(!closed_) << "a CHOCO mix after Close";
  const size_t d = options_.dimension;
  MURMUR_CHECK_EQ(x.size(), d);
  const RoundPeers peers = Peers(view, round);
  mixing_.clear();
  for (const Neighbor& n : peers.receive_from) mixing_.push_back(n.id);
  std::sort(mixing_.begin(), mixing_.end());
  mix_copies_.clear();
  mix_weights_.clear();
  mix_ids_.clear();
  for (const Neighbor& n : peers.receive_from) {
    auto it = copies_.find(n.id);
    if (it == copies_.end() || !it->second.ready) {
      ++stats.missing;
      continue;
    }
    mix_ids_.push_back(n.id);
    mix_copies_.push_back(it->second.values.span());
    mix_weights_.push_back(n.weight * std::clamp(damping ? damping(n.id) : 1.0, 0.0, 1.0));
    ++stats.mixed;
  }
  Clip(stats);
  // One pass over the vectors on the CPU (kernels::ConsensusStep), with the round's norms.
  kernels::ConsensusSquares squares;
  MURMUR_CHECK_OK(kernels::ConsensusStep(device_, gamma_, mix_copies_, mix_weights_, public_.span(),
                                         x, terms_.span(), &squares));
  const double mix_norm = squares.mix;
  public_norm_ = std::sqrt(squares.public_copy);
  stats.residual_norm = std::sqrt(squares.residual);
  stats.consensus_distance = std::sqrt(mix_norm) / std::max(public_norm_, 1e-12);
  if (stats.mixed > 0) stats.gamma_halved = Guard(std::sqrt(mix_norm), stats.consensus_distance);
  if (stats.gamma_halved) {
    MURMUR_LOG_WARN("node {}: consensus distance grew for {} checks in a row ({:.3g} relative): "
                    "halving the consensus step to {:.4g} (set --gamma lower to avoid this)",
                    options_.self, options_.guard_checks, stats.consensus_distance, gamma_);
  }
}

void ChocoGossip::Clip(ChocoRoundStats& stats) {
  const size_t m = mix_copies_.size();
  if (options_.clip_fraction <= 0 || m < 2) return;  // one peer: no second opinion
  mix_distances_.clear();
  double total = 0;
  for (size_t j = 0; j < m; ++j) {
    double d2 = 0;
    MURMUR_CHECK_OK(kernels::SquaredDistance(device_, mix_copies_[j], public_.span(), &d2));
    mix_distances_.emplace_back(std::sqrt(d2), j);
    total += mix_weights_[j];
  }
  if (!(total > 0)) return;
  std::sort(mix_distances_.begin(), mix_distances_.end());
  // τ: the distance at which the nearer peers hold 1 − clip_fraction of the weight.
  const double keep = (1 - options_.clip_fraction) * total;
  double held = 0;
  double radius = mix_distances_.back().first;
  for (const auto& [distance, j] : mix_distances_) {
    held += mix_weights_[j];
    if (held >= keep * (1 - 1e-12)) {
      radius = distance;
      break;
    }
  }
  for (const auto& [distance, j] : mix_distances_) {
    if (!(distance > radius)) continue;
    mix_weights_[j] *= radius / distance;
    ++stats.clipped;
    if (distance > 4 * radius) {
      ++stats.far_clipped;
      ++far_clipped_[mix_ids_[j]];
    }
  }
  clipped_terms_ += stats.clipped;
}

bool ChocoGossip::Guard(double distance, double relative) {
  // Growth is judged on the absolute distance: when the iteration diverges the models blow up
  // with it, so the relative distance stays flat.
  window_sum_ += distance;
  window_relative_ += relative;
  if (++window_rounds_ < options_.guard_window) return false;
  const double mean = window_sum_ / window_rounds_;
  const double mean_relative = window_relative_ / window_rounds_;
  window_sum_ = 0;
  window_relative_ = 0;
  window_rounds_ = 0;
  const bool growing = previous_window_ >= 0 && mean > previous_window_ &&
                       mean_relative > options_.guard_floor;
  previous_window_ = mean;
  growing_windows_ = growing ? growing_windows_ + 1 : 0;
  if (growing_windows_ < options_.guard_checks || gamma_ <= options_.min_gamma) return false;
  gamma_ = std::max(gamma_ / 2, options_.min_gamma);
  growing_windows_ = 0;
  ++gamma_halvings_;
  return true;
}

bool ChocoGossip::DensityScalable() const { return gossip::DensityScalable(options_.compressor); }

void ChocoGossip::SetDensityFactor(int factor) {
  MURMUR_CHECK(factor == 1 || (factor == 2 && DensityScalable())) << "density factor " << factor;
  if (factor == density_factor_) return;
  density_factor_ = factor;
  coding::CompressorOptions scaled = options_.compressor;
  scaled.ratio = std::min(1.0, scaled.ratio * factor);
  if (host_compressor_.has_value()) host_compressor_->SetRatio(scaled.ratio);
  if (device_compressor_.has_value()) device_compressor_->SetRatio(scaled.ratio);
  if (options_.gamma <= 0) {
    gamma_ = std::max(std::ldexp(DefaultGamma(scaled), -static_cast<int>(gamma_halvings_)),
                      options_.min_gamma);
  }
}

std::vector<ChocoOutgoing> ChocoGossip::TakeOutput() {
  std::vector<ChocoOutgoing> out;
  out.swap(output_);
  return out;
}

bool ChocoGossip::NeighbourAverage(const std::vector<NodeId>& view, std::span<float> out) {
  MURMUR_CHECK_EQ(out.size(), public_.size());
  const RoundPeers peers = Peers(view, 0);
  mix_copies_.clear();
  mix_weights_.clear();
  double total = 0;
  for (const Neighbor& n : peers.receive_from) {
    auto it = copies_.find(n.id);
    if (it == copies_.end() || !it->second.ready) continue;
    mix_copies_.push_back(it->second.values.span());
    mix_weights_.push_back(n.weight);
    total += n.weight;
  }
  if (total <= 0) return false;
  // out = c_1 + Σ_j (w_j / total)(c_j − c_1) = Σ_j (w_j / total) c_j: the consensus step's kernel
  // with γ = 1 around the first copy, in float and with no dense scratch of its own (a sum in
  // doubles held two models' bytes for this alone).
  for (double& w : mix_weights_) w /= total;
  MURMUR_CHECK_OK(kernels::Copy<float>(device_, out, device_, mix_copies_.front()));
  kernels::ConsensusSquares squares;
  MURMUR_CHECK_OK(kernels::ConsensusStep(device_, 1.0, mix_copies_, mix_weights_,
                                         mix_copies_.front(), out, terms_.span(), &squares));
  return true;
}

void ChocoGossip::AddMemory(MemoryUse& memory) const {
  const auto floats = [](const kernels::Buffer<float>& b) -> uint64_t {
    return b.size() * sizeof(float);
  };
  memory.Add("choco_public", floats(public_));
  memory.Add("initial_model", floats(initial_));
  uint64_t copies = 0;
  for (const auto& [id, copy] : copies_) copies += floats(copy.values);
  memory.Add("choco_copies", copies);
  memory.Add("replay_log", log_bytes_);
  memory.Add("round_scratch",
             floats(diff_) + floats(terms_) + floats(incoming_) + staging_.bytes());
  memory.Add("update", update_.HeldBytes());
  // Close() frees both compressors.
  memory.Add("compressor", host_compressor_     ? host_compressor_->HeldBytes()
                           : device_compressor_ ? device_compressor_->HeldBytes()
                                                : 0);
}

void ChocoGossip::Forget(NodeId id) {
  copies_.erase(id);
  far_clipped_.erase(id);
}

void ChocoGossip::Close() {
  closed_ = true;
  copies_.clear();
  initial_ = {};
  diff_ = {};
  terms_ = {};
  incoming_ = {};
  staging_ = {};
  update_ = {};
  host_compressor_.reset();
  device_compressor_.reset();
}

std::span<const float> ChocoGossip::CopyOf(NodeId id) const {
  auto it = copies_.find(id);
  if (it == copies_.end() || !it->second.ready) return {};
  return it->second.values.span();
}

uint64_t ChocoGossip::CopyVersion(NodeId id) const {
  auto it = copies_.find(id);
  return it == copies_.end() ? 0 : it->second.version;
}

}  // namespace murmur::gossip
