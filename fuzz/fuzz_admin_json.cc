// libFuzzer target: the JSON body of PUT /straggler on the admin port
// (node/observe/admin_server.h ParseStraggleRequest). Properties: whatever parses is in range
// (slowdown >= 1, 0 <= drop < 1, no negative duration) and its canonical spec parses back.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "node/observe/admin_server.h"
#include "node/peer/straggler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto request = murmur::node::ParseStraggleRequest(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!request.ok()) return 0;
  const murmur::node::StragglerOptions& o = request->options;
  MURMUR_CHECK(o.slowdown >= 1 && o.drop >= 0 && o.drop < 1);
  MURMUR_CHECK(o.delay.count() >= 0 && o.exp_mean.count() >= 0 && o.send_delay.count() >= 0);
  MURMUR_CHECK(request->for_duration.count() >= 0);
  const std::string spec = murmur::node::StraggleSpec(o);
  auto back = murmur::node::ParseStraggle(spec);
  MURMUR_CHECK(back.ok()) << spec << ": " << back.status().ToString();
  return 0;
}
