#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "config/config.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using ok::config::Config;
using ok::util::ErrorKind;

namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.path();
    path_ = dir_ / "config.toml";
  }
  void write(const std::string& content) const {
    std::ofstream out(path_);
    out << content;
  }
  std::string read() const {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  mode_t mode() const {
    struct stat st {};
    EXPECT_EQ(::stat(path_.c_str(), &st), 0);
    return st.st_mode & 0777;
  }

  ok::testing::TempDir temp_{"ok-config"};
  fs::path dir_;
  fs::path path_;
};

// Sets an environment variable for the life of the object, then restores it.
using ok::testing::ScopedEnv;

}  // namespace

TEST_F(ConfigTest, MissingFileIsAnEmptyConfig) {
  auto c = ok::config::load(dir_ / "does-not-exist.toml");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_FALSE(c->model || c->api_key || c->base_url || c->python || c->kernelbench_dir || c->db);
}

TEST_F(ConfigTest, ReadsEveryKey) {
  write(
      "model = \"m\"\napi_key = \"k\"\nbase_url = \"https://example.invalid\"\n"
      "python = \"/usr/bin/python3\"\nkernelbench_dir = \"/kb\"\ndb = \"/tmp/x.db\"\n"
      "unknown = 3\n");
  auto c = ok::config::load(path_);
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->model, "m");
  EXPECT_EQ(c->api_key, "k");
  EXPECT_EQ(c->base_url, "https://example.invalid");
  EXPECT_EQ(c->python, "/usr/bin/python3");
  EXPECT_EQ(c->kernelbench_dir, "/kb");
  EXPECT_EQ(c->db, "/tmp/x.db");
}

TEST_F(ConfigTest, EmptyFileIsAnEmptyConfig) {
  write("");
  auto c = ok::config::load(path_);
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->model.has_value());
}

TEST_F(ConfigTest, MalformedFileNamesTheLine) {
  write("model = \"m\"\n\npython = = broken\n");
  auto c = ok::config::load(path_);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(c.error().message.find("line 3"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find(path_.string()), std::string::npos) << c.error().message;
}

TEST_F(ConfigTest, UnterminatedStringIsMalformed) {
  write("model = \"m\nkey = 1\n");
  auto c = ok::config::load(path_);
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("line 1"), std::string::npos) << c.error().message;
}

TEST_F(ConfigTest, DuplicateKeyIsMalformed) {
  write("model = \"a\"\nmodel = \"b\"\n");
  auto c = ok::config::load(path_);
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("line 2"), std::string::npos) << c.error().message;
}

TEST_F(ConfigTest, SaveCreatesFileAndParentWithMode0600) {
  path_ = dir_ / "nested" / "dir" / "config.toml";
  Config c;
  c.api_key = "secret";
  auto r = ok::config::save(path_, c);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(mode(), 0600u);
  auto back = ok::config::load(path_);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->api_key, "secret");
  EXPECT_FALSE(fs::exists(path_.string() + ".tmp"));
}

TEST_F(ConfigTest, SaveTightensModeOfAnExistingFile) {
  write("model = \"m\"\n");
  ::chmod(path_.c_str(), 0644);
  Config c;
  c.api_key = "secret";
  ASSERT_TRUE(ok::config::save(path_, c).has_value());
  EXPECT_EQ(mode(), 0600u);
}

TEST_F(ConfigTest, SaveMergesIntoExistingKeysAndKeepsUnknownOnes) {
  write("model = \"old-model\"\nbase_url = \"https://a.invalid\"\ncustom = \"kept\"\n");
  Config c;
  c.model = "new-model";
  c.python = "/opt/py";
  ASSERT_TRUE(ok::config::save(path_, c).has_value());
  auto back = ok::config::load(path_);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->model, "new-model");
  EXPECT_EQ(back->base_url, "https://a.invalid");
  EXPECT_EQ(back->python, "/opt/py");
  EXPECT_FALSE(back->api_key.has_value());
  EXPECT_NE(read().find("custom"), std::string::npos) << read();
}

TEST_F(ConfigTest, SuccessiveSavesAccumulate) {
  Config a;
  a.model = "m";
  Config b;
  b.db = "/tmp/store.db";
  ASSERT_TRUE(ok::config::save(path_, a).has_value());
  ASSERT_TRUE(ok::config::save(path_, b).has_value());
  auto back = ok::config::load(path_);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->model, "m");
  EXPECT_EQ(back->db, "/tmp/store.db");
}

TEST_F(ConfigTest, SaveValueWithQuotesRoundTrips) {
  Config c;
  c.api_key = "a\"b\\c\nd";
  ASSERT_TRUE(ok::config::save(path_, c).has_value());
  auto back = ok::config::load(path_);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->api_key, "a\"b\\c\nd");
}

TEST_F(ConfigTest, SaveRefusesToOverwriteAMalformedFile) {
  write("this is = = not toml\n");
  Config c;
  c.model = "m";
  auto r = ok::config::save(path_, c);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(read(), "this is = = not toml\n");
}

TEST(ConfigPaths, DefaultPathFollowsOverrideThenXdg) {
  {
    ScopedEnv cfg("OPENKERNEL_CONFIG", "/tmp/explicit.toml");
    EXPECT_EQ(ok::config::default_path(), fs::path("/tmp/explicit.toml"));
  }
  ScopedEnv cfg("OPENKERNEL_CONFIG", std::nullopt);
  ScopedEnv xdg("XDG_CONFIG_HOME", "/tmp/ok-xdg");
  EXPECT_EQ(ok::config::default_path(), fs::path("/tmp/ok-xdg/openkernel/config.toml"));
  ScopedEnv no_xdg("XDG_CONFIG_HOME", std::nullopt);
  ScopedEnv home("HOME", "/tmp/ok-home");
  EXPECT_EQ(ok::config::default_path(), fs::path("/tmp/ok-home/.config/openkernel/config.toml"));
}

TEST_F(ConfigTest, LoadDefaultReadsOpenkernelConfig) {
  write("model = \"from-env\"\n");
  ScopedEnv cfg("OPENKERNEL_CONFIG", path_.string());
  auto c = ok::config::load_default();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->model, "from-env");
}
