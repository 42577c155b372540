#pragma once
// The program of `murmur local --exec`: which interpreter runs a Python program.

#include <filesystem>
#include <string>

namespace murmur::node {

// `command` (an --exec program) with a first word `python3` or `python` replaced by the
// interpreter murmur's Python module is for: $MURMUR_PYTHON (set by the package's `murmur`
// command and `python -m murmur.run` to the interpreter that runs them), else this build's
// (`python/interpreter` beside the executable `exe`); `interpreter` says which, "" when the
// command is left as it is (another program, or neither is known: PATH's, as bash finds it).
std::string WithInterpreter(const std::string& command, const std::filesystem::path& exe,
                            std::string* interpreter);

}  // namespace murmur::node
