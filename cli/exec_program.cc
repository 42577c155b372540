#include "cli/exec_program.h"

#include <cstdlib>
#include <fstream>

namespace murmur::node {

std::string WithInterpreter(const std::string& command, const std::filesystem::path& exe,
                            std::string* interpreter) {
  std::string word = command.substr(0, command.find_first_of(" \t"));
  if (word != "python3" && word != "python") return command;
  if (const char* env = std::getenv("MURMUR_PYTHON"); env != nullptr && *env != '\0') {
    *interpreter = std::string(env) + " (MURMUR_PYTHON, the interpreter that launched murmur)";
    return std::string(env) + command.substr(word.size());
  }
  std::ifstream file(exe.parent_path() / "python" / "interpreter");
  std::string built;
  if (file && std::getline(file, built) && !built.empty()) {
    *interpreter = built + " (the one this build's murmur module is for)";
    return built + command.substr(word.size());
  }
  return command;
}

}  // namespace murmur::node
