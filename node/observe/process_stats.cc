#include "node/observe/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace murmur::node {

uint64_t PeakResidentBytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // kilobytes on Linux
}

ProcessFigures ReadProcess() {
  ProcessFigures f;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (std::getline(stat, line)) {
    // The command name (field 2) is in parentheses and may hold spaces: parse after the last ')'.
    const size_t close = line.rfind(')');
    if (close != std::string::npos) {
      std::istringstream rest(line.substr(close + 2));
      std::vector<std::string> fields;  // fields[0] is field 3 (state)
      std::string field;
      while (rest >> field) fields.push_back(field);
      auto at = [&](size_t number) { return number - 3 < fields.size() ? std::stod(fields[number - 3]) : 0.0; };
      f.cpu_seconds = (at(14) + at(15)) / ticks;
      f.threads = at(20);
      f.virtual_bytes = at(23);
      f.resident_bytes = at(24) * page;
      std::ifstream boot("/proc/stat");
      std::string key;
      double btime = 0;
      while (boot >> key) {
        if (key == "btime") {
          boot >> btime;
          break;
        }
      }
      f.start_time_seconds = btime + at(22) / ticks;
    }
  }
  if (DIR* dir = opendir("/proc/self/fd")) {
    int n = 0;
    while (const dirent* e = readdir(dir)) n += e->d_name[0] != '.';
    closedir(dir);
    f.open_fds = n - 1;  // the directory stream itself
  }
  f.peak_resident_bytes = static_cast<double>(PeakResidentBytes());
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) f.max_fds = static_cast<double>(limit.rlim_cur);
  return f;
}

}  // namespace murmur::node
