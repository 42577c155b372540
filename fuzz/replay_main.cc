// Runs a fuzz target over files instead of under libFuzzer: what the normal (GCC) build does
// with the seed corpora and the regression inputs of every finding, so they are checked on
// every test run even where clang is absent. Usage: fuzz_NAME_replay FILE_OR_DIR...
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t inputs = 0;
  auto run = [&](const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++inputs;
  };
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path root(argv[i]);
    if (std::filesystem::is_directory(root)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
        if (entry.is_regular_file()) run(entry.path());
      }
    } else if (std::filesystem::exists(root)) {
      run(root);
    }
  }
  std::printf("%zu inputs ran without a failure\n", inputs);
  return inputs > 0 ? 0 : 1;
}
