// `murmur experiment` and `murmur report`: the researcher's loop lives in Python
// (experiment/, with Debian's python3-matplotlib for the figures); these commands find it and
// hand over every argument. The scripts print their own --help and exit codes (2: a bad
// scenario, flag or directory).

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/config.h"
#include "cli/command.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;

class ScriptCommand : public Command {
 public:
  ScriptCommand(CLI::App& app, const std::string& name, const std::string& description,
                std::string script)
      : Command(app, name, description), script_(std::move(script)) {
    subcommand()->prefix_command();  // every argument goes to the script, --help too
    subcommand()->set_help_flag();
  }

  int Run() override {
    const fs::path exe = fs::read_symlink("/proc/self/exe");
    const char* env_dir = std::getenv("MURMUR_EXPERIMENT_DIR");
    std::vector<fs::path> dirs;
    if (env_dir != nullptr && *env_dir != '\0') dirs.emplace_back(env_dir);
    dirs.push_back(exe.parent_path().parent_path() / "share" / "murmur" / "experiment");
    dirs.push_back(fs::path(MURMUR_SOURCE_DIR) / "experiment");
    fs::path script;
    for (const auto& d : dirs) {
      if (fs::is_regular_file(d / script_)) {
        script = d / script_;
        break;
      }
    }
    const std::string name = subcommand()->get_name();
    if (script.empty()) {
      std::fprintf(stderr,
                   "murmur %s: cannot find experiment/%s (looked in $MURMUR_EXPERIMENT_DIR, "
                   "%s and %s)\n",
                   name.c_str(), script_.c_str(), dirs[dirs.size() - 2].c_str(),
                   dirs.back().c_str());
      return 2;
    }
    // Debian's interpreter, where python3-matplotlib is installed (not a virtualenv's python3).
    const char* env_python = std::getenv("MURMUR_PYTHON");
    const std::string python =
        env_python != nullptr && *env_python != '\0' ? env_python : "/usr/bin/python3";
    if (::access(python.c_str(), X_OK) != 0) {
      std::fprintf(stderr,
                   "murmur %s: needs %s (Debian's python3 with python3-matplotlib; "
                   "ops/install-deps.sh installs them, MURMUR_PYTHON names another)\n",
                   name.c_str(), python.c_str());
      return 2;
    }
    ::setenv("MURMUR_BIN", exe.c_str(), 1);
    std::vector<std::string> args = {python, script.string()};
    for (const std::string& a : subcommand()->remaining()) args.push_back(a);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    ::execv(python.c_str(), argv.data());
    std::perror(("murmur " + name + ": " + python).c_str());
    return 2;
  }

 private:
  std::string script_;
};

}  // namespace

std::unique_ptr<Command> MakeExperimentCommand(CLI::App& app) {
  return std::make_unique<ScriptCommand>(
      app, "experiment",
      "Run a scenario's grid of local runs (modes x stragglers x sizes x seeds) with progress "
      "and resume, and write its CSV, figures and HTML report (murmur experiment --help)",
      "experiment.py");
}

std::unique_ptr<Command> MakeReportCommand(CLI::App& app) {
  return std::make_unique<ScriptCommand>(
      app, "report",
      "Write the CSV, figures and HTML report of a run directory (murmur local --run-dir) or "
      "an experiment directory",
      "report.py");
}

}  // namespace murmur::node
