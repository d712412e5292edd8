// eval::source_entry names a source file exactly as the worker does (problem.read_source): the
// same text and the same source_hash, so a row recorded by the engine for a lost remote
// evaluation and a row the worker reported name one file alike. Each case is checked against the
// worker's own function, run by the system Python.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "eval/record.hpp"
#include "support/temp_dir.hpp"
#include "util/digest.hpp"
#include "util/paths.hpp"
#include "util/subprocess.hpp"

namespace {

namespace fs = std::filesystem;

// The worker's {"source", "source_hash"} of `file`, as one line of JSON.
nlohmann::json worker_entry(const fs::path& file) {
  const std::string script =
      "import json, sys\n"
      "sys.path.insert(0, sys.argv[1])\n"
      "from openkernel_worker.problem import read_source, SourceDefect\n"
      "import hashlib\n"
      "try:\n"
      "    text = read_source(sys.argv[2], 'candidate')\n"
      "    print(json.dumps({'source': text, 'source_hash': "
      "hashlib.sha256(text.encode()).hexdigest()}))\n"
      "except SourceDefect as e:\n"
      "    print(json.dumps({'source': '', 'source_hash': e.sha256}))\n";
  auto out = ok::util::run_capture({"/usr/bin/python3", "-c", script,
                                    (ok::util::resource_root() / "python").string(), file.string()},
                                   std::chrono::seconds(60), /*merge_stderr=*/false);
  EXPECT_TRUE(out) << (out ? "" : out.error().message);
  if (!out) return {};
  return nlohmann::json::parse(out->output);
}

TEST(SourceEntry, NamesEveryKindOfFileAsTheWorkerDoes) {
  ok::testing::TempDir dir("ok-source-entry");
  const std::string text = "import torch\nclass ModelNew: pass\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"plain.py", text},
      {"bom.py", "\xEF\xBB\xBF" + text},
      {"bom_only.py", "\xEF\xBB\xBF"},
      {"empty.py", ""},
      {"blank.py", " \n\t\n"},
      {"nul.py", text + std::string(1, '\0') + "x"},
      {"latin1.py", "x = '\xE9'\n"},
      {"bom_latin1.py", "\xEF\xBB\xBFx = '\xE9'\n"},
      {"huge.py", std::string((size_t{8} << 20) + 5, '#')},
  };
  for (const auto& [name, bytes] : cases) {
    const fs::path file = dir.path() / name;
    ASSERT_TRUE(ok::util::write_file(file, bytes));
    const auto ours = ok::eval::source_entry(file.string());
    const auto theirs = worker_entry(file);
    EXPECT_EQ(ours["source_hash"], theirs["source_hash"]) << name;
    EXPECT_EQ(ours["source"], theirs["source"]) << name;
  }
  // Defects carry no text and hash their raw bytes, the byte-order mark included.
  const auto defect = ok::eval::source_entry((dir.path() / "bom_latin1.py").string());
  EXPECT_EQ(defect["source"], "");
  EXPECT_EQ(defect["source_hash"], ok::util::sha256_hex("\xEF\xBB\xBFx = '\xE9'\n"));
}

TEST(Digest, Base64RoundTripsEveryLength) {
  std::string data;
  for (int i = 0; i < 300; ++i) {
    const auto back = ok::util::base64_decode(ok::util::base64_encode(data));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, data) << "length " << i;
    data += static_cast<char>(i * 37);
  }
  EXPECT_EQ(ok::util::base64_encode("hello"), "aGVsbG8=");
  EXPECT_FALSE(ok::util::base64_decode("a$b"));
  EXPECT_EQ(ok::util::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
