#pragma once
// What the process uses, read from /proc and getrlimit (Linux): the process_* metrics that the
// Prometheus client libraries export by convention.

#include <cstdint>

namespace murmur::node {

struct ProcessFigures {
  double cpu_seconds = 0;
  double resident_bytes = 0;
  double peak_resident_bytes = 0;  // the resident set's high-water mark (getrusage ru_maxrss)
  double virtual_bytes = 0;
  double threads = 0;
  double open_fds = 0;
  double max_fds = 0;
  double start_time_seconds = 0;
};
// Zeros for what cannot be read.
ProcessFigures ReadProcess();
// The resident set's high-water mark alone (one getrusage call); 0 when it cannot be read.
uint64_t PeakResidentBytes();

}  // namespace murmur::node
