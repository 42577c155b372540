// LocalCluster, the processes of `murmur local`: a child that exits is reaped by the Poll that
// is waiting, not by a later one. The children here are --exec programs (bash -c), so the test
// needs no cluster.

#include "cli/local_cluster.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

namespace murmur::node {
namespace {

std::filesystem::path FreshDir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The program closes its report descriptor at once, then exits a moment later: once the first
// Poll has read the end of its reports, only its exit can end a wait. Before children had a
// pidfd in the poll set, that wait ran out its whole length (murmur local spent 20-50 ms so
// after its last node had gone), here 60 s.
TEST(LocalClusterTest, APollWakesWhenAChildExits) {
  const auto dir = FreshDir("murmur-local-cluster-test");
  LocalClusterOptions o;
  o.nodes = 2;
  o.admin = false;
  o.exec = "exec 3>&-; sleep 0.3";
  LocalCluster cluster(o, dir);
  ASSERT_TRUE(cluster.Spawn().ok());
  const auto start = std::chrono::steady_clock::now();
  auto exited = [&] {
    for (const Child& c : cluster.children()) {
      if (!c.exited) return false;
    }
    return true;
  };
  for (int polls = 0; polls < 8 && !exited(); ++polls) cluster.Poll(std::chrono::seconds(60));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(exited());
  EXPECT_LT(waited, 30.0) << "a Poll waited out its time after the children had exited";
  for (const Child& c : cluster.children()) {
    EXPECT_TRUE(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) << "status " << c.status;
    EXPECT_EQ(c.exit_fd, -1) << "the pidfd of a reaped child stays open";
  }
  EXPECT_EQ(cluster.Stop(std::chrono::milliseconds(100)), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace murmur::node
