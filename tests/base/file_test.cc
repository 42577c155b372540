#include "base/file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

namespace murmur {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system's temporary one, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "murmur-file-test-XXXXXX").string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    const char* made = ::mkdtemp(buffer.data());
    EXPECT_NE(made, nullptr);
    path_ = made != nullptr ? made : "";
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The early check agrees with the write it stands for: where it passes, WriteFileAtomically
// succeeds; each refusal names the key and the path, and nothing is left behind.
TEST(FileTest, CheckWritableFilePathRefusesWhatTheWriteWouldFailOn) {
  TempDir dir;
  const std::string good = (dir.path() / "model.ckpt").string();
  // A file that already has the write's temporary name is left as it is.
  const std::byte stray[] = {std::byte{7}};
  ASSERT_TRUE(WriteFileAtomically(good + ".tmp", stray).ok());
  ASSERT_TRUE(CheckWritableFilePath(good, "save_model").ok());
  EXPECT_FALSE(fs::exists(good));
  EXPECT_EQ(fs::file_size(good + ".tmp"), 1u);
  fs::remove(good + ".tmp");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 0);
  const std::byte bytes[] = {std::byte{1}, std::byte{2}};
  ASSERT_TRUE(WriteFileAtomically(good, bytes).ok());
  // An existing file may be replaced.
  EXPECT_TRUE(CheckWritableFilePath(good, "save_model").ok());
  EXPECT_TRUE(fs::exists(good));

  const std::string missing = (dir.path() / "no-such-dir" / "model.ckpt").string();
  const fs::path file_as_dir = dir.path() / "plain";
  ASSERT_TRUE(WriteFileAtomically(file_as_dir.string(), bytes).ok());
  for (const std::string& bad : {missing, (file_as_dir / "model.ckpt").string(),
                                 dir.path().string(), dir.path().string() + "/", std::string()}) {
    SCOPED_TRACE("'" + bad + "'");
    const Status s = CheckWritableFilePath(bad, "save_model");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("save_model '" + bad + "'"), std::string_view::npos) << s;
    if (!bad.empty()) {
      EXPECT_FALSE(WriteFileAtomically(bad, bytes).ok());
    }
  }
  EXPECT_FALSE(fs::exists(dir.path() / "no-such-dir"));
}

}  // namespace
}  // namespace murmur
