// The usage examples in header comments compile against the current API: tests/docs/
// header_examples.cpp holds them, one block per header, and is compiled here (-fsyntax-only);
// every line of a block that is not marked `// (adapted)` must be a line of that header's
// example, so an example edited without its block (or an API changed under both) fails here.
// Every header of src/util, src/memory, src/core, src/io, src/rewrites, src/data, src/comm and
// src/planning that has an example has a block; of src/plan, src/runtime and src/device, those not
// being reworked in issue 16 have one.
// Found stale when written: core/layer.h, core/layer_kind.h, plan/program.h, plan/simulator.h.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"

namespace vdnn::test {
namespace test_header_examples {

namespace fs = std::filesystem;
const fs::path kRoot = VDNN_SOURCE_DIR;
const fs::path kExamples = kRoot / "tests/docs/header_examples.cpp";

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << file;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// White space folded to one blank, none at the ends.
std::string folded(const std::string& line) {
  std::istringstream words(line);
  std::string out;
  for (std::string w; words >> w;) out += (out.empty() ? "" : " ") + w;
  return out;
}

// A header's example: its comment lines indented three blanks or more, before `#pragma once`,
// folded and without a trailing comment.
std::set<std::string> example_lines(const fs::path& header) {
  std::set<std::string> lines;
  for (const std::string& line : lines_of(header)) {
    if (line.rfind("#pragma once", 0) == 0) break;
    if (line.rfind("//   ", 0) != 0) continue;
    lines.insert(folded(std::regex_replace(line.substr(2), std::regex(R"(\s//.*$)"), "")));
  }
  lines.erase("");
  return lines;
}

// header (under src/) -> the lines of its block that must stand in its example (a block ends at
// the next one or at a line that is not indented).
std::map<std::string, std::vector<std::string>> blocks() {
  std::map<std::string, std::vector<std::string>> out;
  std::string header;
  for (const std::string& line : lines_of(kExamples)) {
    const std::string f = folded(line);
    if (f.rfind("// == ", 0) == 0) {
      header = f.substr(6);
      out[header];
    } else if (!line.empty() && line[0] != ' ') {
      header.clear();  // out of the function the blocks are in
    } else if (!header.empty() && f != "{" && f != "}" && !f.empty() && f.find("// (adapted)") == std::string::npos) {
      out[header].push_back(f);
    }
  }
  return out;
}

TEST(HeaderExamples, CompileAgainstTheCurrentApi) {
  const CliRun r =
      run_command("timeout 120 c++ -std=gnu++20 -fsyntax-only -fopenmp -w -I" + (kRoot / "include").string() + " -I" +
                  (kRoot / "src").string() + " " + kExamples.string());
  EXPECT_EQ(r.exit_code, 0) << "a header example no longer compiles (fix the example in the header and in " << kExamples
                            << "):\n"
                            << r.output;
}

TEST(HeaderExamples, EachBlockIsItsHeadersExample) {
  const auto all = blocks();
  ASSERT_GT(all.size(), 30u);  // the blocks were read
  for (const auto& [header, lines] : all) {
    const std::set<std::string> example = example_lines(kRoot / "src" / header);
    EXPECT_FALSE(example.empty()) << header << " has no example";
    for (const std::string& line : lines)
      EXPECT_TRUE(example.count(line)) << header << "'s example has no line `" << line << "` (edit both, or mark "
                                       << "the block's line // (adapted) when it stands in for pseudo-code)";
  }
}

TEST(HeaderExamples, EveryExampleInTheBaseFoldersHasABlock) {
  const auto all = blocks();
  for (const char* folder : {"util", "memory", "core", "io", "rewrites", "data", "comm", "planning"})
    for (const auto& entry : fs::directory_iterator(kRoot / "src" / folder)) {
      if (entry.path().extension() != ".h" || example_lines(entry.path()).empty()) continue;
      const std::string header = std::string(folder) + "/" + entry.path().filename().string();
      EXPECT_TRUE(all.count(header)) << header << " has a usage example but no block in " << kExamples;
    }
}

}  // namespace test_header_examples
}  // namespace vdnn::test
