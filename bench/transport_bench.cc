// Transport throughput and latency between two processes on loopback: murmur's
// ZmqTransport (I/O thread, queues, zero-copy frames) against raw cppzmq DEALER -> ROUTER sockets
// in the same run, for 4 KB, 64 KB and 4 MB messages, plus the round-trip latency of a small
// message. The receiver is a forked child; the sender reuses one frame for every message (the
// transport never copies it), so the figures measure the transport, not allocation.
//
// Usage: murmur_transport_bench [--seconds-per-case 2] [--repeats 3]

#include <CLI/CLI.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "gossip/transport/zmq_transport.h"

namespace {

using Clock = std::chrono::steady_clock;
using murmur::transport::Frame;
using murmur::transport::Message;

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Protocol: header byte 'D' data (counted; after `count` of them the receiver answers 'A'),
// 'P' ping (echoed), 'Q' quit. Bytes 1..8 of a 'D' header hold the expected count.
struct Link {
  virtual ~Link() = default;
  virtual void Send(char kind, uint64_t value, const Frame* payload) = 0;
  virtual char Receive(uint64_t* value) = 0;  // blocks
};

class MurmurLink : public Link {
 public:
  MurmurLink(const std::string& listen, std::string peer) : peer_(std::move(peer)) {
    murmur::transport::TransportOptions o;
    o.listen = listen;
    o.max_queued_messages = size_t{1} << 24;
    o.max_queued_bytes = size_t{1} << 50;  // the same frame is shared, nothing is copied
    o.max_inbox_messages = size_t{1} << 24;
    auto t = murmur::transport::CreateZmqTransport(o);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", t.status().ToString().c_str());
      std::exit(1);
    }
    t_ = std::move(*t);
  }
  void Send(char kind, uint64_t value, const Frame* payload) override {
    std::string h(9, kind);
    std::memcpy(h.data() + 1, &value, 8);
    Message m{Frame::FromString(h), {}, murmur::transport::Traffic::kUpdate, std::nullopt};
    if (payload != nullptr) m.frames.push_back(*payload);
    t_->Send(peer_, std::move(m));
  }
  char Receive(uint64_t* value) override {
    while (true) {
      auto m = t_->Receive(std::chrono::milliseconds(1000));
      if (!m) continue;
      std::memcpy(value, m->header.data() + 1, 8);
      return static_cast<char>(m->header.data()[0]);
    }
  }

 private:
  std::string peer_;
  std::unique_ptr<murmur::transport::Transport> t_;
};

void FreeNothing(void*, void*) {}

class RawLink : public Link {
 public:
  RawLink(const std::string& listen, const std::string& peer)
      : router_(ctx_, zmq::socket_type::router), dealer_(ctx_, zmq::socket_type::dealer) {
    router_.set(zmq::sockopt::rcvhwm, 0);
    dealer_.set(zmq::sockopt::sndhwm, 0);
    router_.bind(listen);
    dealer_.connect(peer);
  }
  void Send(char kind, uint64_t value, const Frame* payload) override {
    char h[9];
    h[0] = kind;
    std::memcpy(h + 1, &value, 8);
    dealer_.send(zmq::buffer(h, 9), payload ? zmq::send_flags::sndmore : zmq::send_flags::none);
    if (payload != nullptr) {
      // Zero-copy, as the murmur transport does; the frame outlives the benchmark.
      zmq::message_t m(const_cast<std::byte*>(payload->data()), payload->size(), &FreeNothing);
      dealer_.send(m, zmq::send_flags::none);
    }
  }
  char Receive(uint64_t* value) override {
    std::vector<zmq::message_t> parts;
    do {
      zmq::message_t m;
      (void)router_.recv(m);
      parts.push_back(std::move(m));
    } while (parts.back().more());
    std::memcpy(value, static_cast<const char*>(parts[1].data()) + 1, 8);
    return static_cast<const char*>(parts[1].data())[0];
  }

 private:
  zmq::context_t ctx_;
  zmq::socket_t router_;
  zmq::socket_t dealer_;
};

std::unique_ptr<Link> MakeLink(bool raw, int listen_port, int peer_port) {
  const std::string listen = "tcp://127.0.0.1:" + std::to_string(listen_port);
  const std::string peer = "tcp://127.0.0.1:" + std::to_string(peer_port);
  if (raw) return std::make_unique<RawLink>(listen, peer);
  return std::make_unique<MurmurLink>(listen, peer);
}

void Serve(bool raw, int listen_port, int peer_port) {
  auto link = MakeLink(raw, listen_port, peer_port);
  uint64_t seen = 0, value = 0;
  while (true) {
    const char kind = link->Receive(&value);
    if (kind == 'Q') return;
    if (kind == 'P') link->Send('P', value, nullptr);
    if (kind == 'D' && ++seen == value) {
      link->Send('A', seen, nullptr);
      seen = 0;
    }
  }
}

struct Result {
  double gbps[3];
  double rtt_median_us, rtt_p99_us;
};

Result Measure(bool raw, double seconds_per_case) {
  const int parent_port = FreePort(), child_port = FreePort();
  const pid_t pid = ::fork();
  if (pid == 0) {
    Serve(raw, child_port, parent_port);
    ::_exit(0);
  }
  auto link = MakeLink(raw, parent_port, child_port);
  uint64_t value = 0;
  link->Send('P', 0, nullptr);  // wait until connected both ways
  link->Receive(&value);
  Result r{};
  const size_t sizes[3] = {4096, 65536, 4 << 20};
  for (int s = 0; s < 3; ++s) {
    std::vector<std::byte> bytes(sizes[s]);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 131);
    const Frame payload = Frame::FromBytes(std::move(bytes));
    // Calibrate: a short batch, then one batch sized to last about seconds_per_case.
    uint64_t count = std::max<uint64_t>(8, (64u << 20) / sizes[s]);
    double best = 0;
    for (int round = 0; round < 2; ++round) {
      const auto t0 = Clock::now();
      for (uint64_t i = 0; i < count; ++i) link->Send('D', count, &payload);
      while (link->Receive(&value) != 'A') {
      }
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      best = static_cast<double>(count * sizes[s]) / dt / 1e9;
      if (round == 0) {
        count = std::max<uint64_t>(8, static_cast<uint64_t>(best * 1e9 * seconds_per_case / static_cast<double>(sizes[s])));
      }
    }
    r.gbps[s] = best;
  }
  std::vector<double> rtts;
  for (int i = 0; i < 5000; ++i) {
    const auto t0 = Clock::now();
    link->Send('P', static_cast<uint64_t>(i), nullptr);
    while (link->Receive(&value) != 'P') {
    }
    rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(rtts.begin(), rtts.end());
  r.rtt_median_us = rtts[rtts.size() / 2];
  r.rtt_p99_us = rtts[rtts.size() * 99 / 100];
  link->Send('Q', 0, nullptr);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("murmur transport benchmark: two processes on loopback TCP");
  double seconds = 1.5;
  int repeats = 3;
  app.add_option("--seconds-per-case", seconds, "target duration of each throughput batch");
  app.add_option("--repeats", repeats, "alternating murmur/raw rounds; medians are printed");
  CLI11_PARSE(app, argc, argv);

  std::vector<Result> murmur_runs, raw_runs;
  for (int i = 0; i < repeats; ++i) {
    raw_runs.push_back(Measure(true, seconds));
    murmur_runs.push_back(Measure(false, seconds));
    std::fprintf(stderr, "round %d/%d done\n", i + 1, repeats);
  }
  auto median = [](std::vector<Result>& runs, auto field) {
    std::vector<double> v;
    for (auto& r : runs) v.push_back(field(r));
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const char* names[3] = {"4 KB", "64 KB", "4 MB"};
  std::printf("transport: two processes, loopback TCP, medians of %d alternating rounds\n", repeats);
  std::printf("%-8s %14s %14s %10s\n", "message", "murmur GB/s", "raw zmq GB/s", "ratio");
  double four_mb = 0, worst_ratio = 1e9;
  for (int s = 0; s < 3; ++s) {
    const double m = median(murmur_runs, [&](const Result& r) { return r.gbps[s]; });
    const double z = median(raw_runs, [&](const Result& r) { return r.gbps[s]; });
    std::printf("%-8s %14.2f %14.2f %9.2fx\n", names[s], m, z, m / z);
    if (s == 2) four_mb = m;
    worst_ratio = std::min(worst_ratio, m / z);
  }
  const double m50 = median(murmur_runs, [](const Result& r) { return r.rtt_median_us; });
  const double z50 = median(raw_runs, [](const Result& r) { return r.rtt_median_us; });
  const double m99 = median(murmur_runs, [](const Result& r) { return r.rtt_p99_us; });
  const double z99 = median(raw_runs, [](const Result& r) { return r.rtt_p99_us; });
  std::printf("round trip (9-byte message): murmur median %.1f us, p99 %.1f us; raw zmq median "
              "%.1f us, p99 %.1f us (%.2fx)\n",
              m50, m99, z50, z99, m50 / z50);
  std::printf("goal: >= 1.5 GB/s for 4 MB frames: %.2f GB/s, %s\n", four_mb,
              four_mb >= 1.5 ? "met" : "MISSED");
  // raw ZeroMQ's speed.
  std::printf("goal: >= 0.9x raw ZeroMQ at every size: worst %.2fx, %s\n", worst_ratio,
              worst_ratio >= 0.9 ? "met" : "MISSED");
  std::printf("goal: round trip <= 1.2x raw ZeroMQ: %.2fx, %s\n", m50 / z50,
              m50 / z50 <= 1.2 ? "met" : "MISSED");
  return 0;
}
