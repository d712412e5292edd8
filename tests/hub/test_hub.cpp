// Unit tests of src/hub's pure parts: object ids, base64, repository names, dataset configs and
// problem folders. The protocol itself is tested against the loopback Hub and the official client
// (hub_cross.test.mjs, hub_commands.test.mjs).
#include <gtest/gtest.h>

#include "hub/cards.hpp"
#include "hub/client.hpp"
#include "hub/oid.hpp"
#include "util/digest.hpp"

namespace ok::hub {
namespace {

TEST(HubOid, KnownDigests) {
  EXPECT_EQ(util::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // `printf 'hello\n' | git hash-object --stdin`
  EXPECT_EQ(git_blob_sha1("hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(git_blob_sha1(""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  EXPECT_EQ(lfs_pointer("ab", 3),
            "version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 3\n");
}

TEST(HubOid, Base64RoundTripsAndRefusesForeignCharacters) {
  const std::vector<std::string> samples = {
      "", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xff\x10", 3)};
  for (const auto& s : samples) EXPECT_EQ(util::base64_decode(util::base64_encode(s)), s);
  EXPECT_EQ(util::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(util::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(util::base64_decode("Zm9v\nYmFy"), "foobar");
  EXPECT_FALSE(util::base64_decode("Zm9v*"));
}

TEST(HubRepo, NamesAreChecked) {
  EXPECT_TRUE(parse_repo("my-org/kernels_v1.2", RepoType::kModel));
  for (const char* bad : {"", "org", "/name", "org/", "org/na me", "org/a/b", "org/..x", "-org/n",
                          "org/n.", "org/n?x"})
    EXPECT_FALSE(parse_repo(bad, RepoType::kDataset)) << bad;
  EXPECT_EQ(parse_repo("o", RepoType::kModel).error().kind, util::ErrorKind::kUsage);
}

TEST(HubCards, ConfigsFollowThePaths) {
  const auto configs = data_configs(
      {"raw/2026-11/session_a.parquet", "raw/2026-12/session_b.parquet",
       "processed/training_pairs_v1.parquet", "processed/critic_accuracy_v1/part-0.jsonl",
       "metadata/schema.json", "metadata/stats.json", "level1.tsv", "notes.txt", "README.md"});
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(configs[0].name, "critic_accuracy_v1");
  EXPECT_EQ(configs[0].paths, std::vector<std::string>{"processed/critic_accuracy_v1/**/*.jsonl"});
  EXPECT_EQ(configs[1].name, "level1");
  EXPECT_EQ(configs[1].paths, std::vector<std::string>{"level1.tsv"});
  EXPECT_EQ(configs[2].name, "raw");
  EXPECT_EQ(configs[2].paths, std::vector<std::string>{"raw/**/*.parquet"});
  EXPECT_EQ(configs[3].name, "training_pairs_v1");
  const std::string card =
      dataset_card("o/n", "d", {"processed/training_pairs_v1.parquet", "a.csv"});
  EXPECT_NE(card.find("- config_name: training_pairs_v1\n  default: true\n"), std::string::npos);
  EXPECT_EQ(card.find("- config_name: a\n  default"), std::string::npos);
  EXPECT_TRUE(card.starts_with("---\nconfigs:\n"));
}

TEST(HubCards, ProblemFolders) {
  EXPECT_EQ(problem_folder("19_ReLU"), "19_ReLU");
  EXPECT_EQ(problem_folder("level 1/19 ReLU+x"), "level_1_19_ReLU_x");
  EXPECT_EQ(problem_folder(""), "_");
}

}  // namespace
}  // namespace ok::hub
