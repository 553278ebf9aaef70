// The names a source file keeps to itself stay unique within its library, so that the unity build
// (-DVDNN_UNITY_BUILD=ON, which scripts/test.sh compiles: a library's files glued together a batch
// at a time) means what the separate files mean.
//
// Model: in a unity batch the anonymous namespaces of its files are one namespace. Two files that
// both define `constexpr double kWidth` fail to compile, which is loud; but two files that define
// `place(const Graph&)` and `place(const std::vector<Block>&)` compile, and a call in one may bind
// to the other's overload where it matches better, which is silent. So every name declared at the
// top of an anonymous namespace — function, variable, class, alias — must be declared there by one
// file of its library (src/<folder>, or tools/) only. Aliases of the same type in two files are
// allowed (C++ allows the redeclaration). Test files keep their helpers in a namespace named after
// the file (tests/README.md), so they are not scanned.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace test_unity_names {

namespace fs = std::filesystem;

// The text of a source file with comments, string and character literals blanked (kept as spaces,
// so braces inside them do not count).
std::string code_only(const std::string& text) {
  std::string out = text;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out.compare(i, 2, "//") == 0) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      const size_t end = out.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? out.size() : end + 2;
      for (; i < stop; ++i)
        if (out[i] != '\n') out[i] = ' ';
      --i;
    } else if (out.compare(i, 2, "R\"") == 0) {  // raw string R"delim( ... )delim"
      const size_t open = out.find('(', i);
      const std::string close = ")" + out.substr(i + 2, open - i - 2) + "\"";
      const size_t end = out.find(close, open);
      const size_t stop = end == std::string::npos ? out.size() : end + close.size();
      for (; i < stop; ++i)
        if (out[i] != '\n') out[i] = ' ';
      --i;
    } else if (out[i] == '"' || (out[i] == '\'' && !(i > 0 && std::isxdigit(out[i - 1])))) {
      const char quote = out[i];
      out[i++] = ' ';
      while (i < out.size() && out[i] != quote) {
        if (out[i] == '\\') out[i++] = ' ';
        if (i < out.size() && out[i] != '\n') out[i] = ' ';
        ++i;
      }
      if (i < out.size()) out[i] = ' ';
    }
  }
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\n") - a + 1);
}

// The identifier that ends just before position `end` of `s` (skipping spaces).
std::string identifier_before(const std::string& s, size_t end) {
  while (end > 0 && std::isspace(static_cast<unsigned char>(s[end - 1]))) --end;
  size_t start = end;
  while (start > 0 && (std::isalnum(static_cast<unsigned char>(s[start - 1])) || s[start - 1] == '_')) --start;
  return s.substr(start, end - start);
}

// Splits `s` at the commas outside (), [], {} and <>.
std::vector<std::string> top_level_parts(const std::string& s) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : s) {
    if (c == '(' || c == '[' || c == '{' || c == '<') ++depth;
    if (c == ')' || c == ']' || c == '}' || c == '>') --depth;
    if (c == ',' && depth == 0)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

struct Declared {
  std::string name;
  std::string alias_of;  // for `using name = ...;`: what it names
};

// The names one declaration at namespace scope declares (its text up to its `{` or `;`).
std::vector<Declared> names_of(std::string decl) {
  decl = trim(decl);
  if (decl.rfind("template", 0) == 0) {  // drop `template <...>`
    int depth = 0;
    size_t i = decl.find('<');
    for (; i < decl.size(); ++i) {
      if (decl[i] == '<') ++depth;
      if (decl[i] == '>' && --depth == 0) break;
    }
    decl = trim(decl.substr(i + 1));
  }
  std::istringstream words(decl);
  std::string first, second;
  words >> first >> second;
  if (first.empty() || first == "namespace" || decl.rfind("static_assert", 0) == 0 ||
      decl.find("operator") != std::string::npos)
    return {};
  if (first == "using") {
    const size_t eq = decl.find('=');
    if (eq == std::string::npos) return {};  // a using-declaration or -directive
    return {{identifier_before(decl, eq), trim(decl.substr(eq + 1))}};
  }
  if (first == "class" || first == "struct" || first == "union" || first == "enum") {
    std::string name = second == "class" || second == "struct" ? "" : second;
    if (name.empty()) words >> name;
    const size_t cut = name.find_first_of(":{");
    return {{name.substr(0, cut), ""}};
  }
  const size_t paren = decl.find('('), eq = decl.find('=');
  if (paren != std::string::npos && (eq == std::string::npos || paren < eq))
    return {{identifier_before(decl, paren), ""}};  // a function
  std::vector<Declared> out;                        // variables: `constexpr double a = 1, b = 2`
  for (const std::string& part : top_level_parts(decl)) {
    const size_t end = part.find_first_of("={[");
    out.push_back({identifier_before(part, end == std::string::npos ? part.size() : end), ""});
  }
  return out;
}

// Every name declared directly inside an anonymous namespace of the file `text`.
std::vector<Declared> anonymous_names(const std::string& text) {
  const std::string code = code_only(text);
  std::vector<Declared> found;
  std::vector<bool> anonymous;  // per open brace: does it open an anonymous namespace?
  std::string statement;        // the text since the last `;`, `{` or `}` at this level
  for (size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '#') {  // a preprocessor line: not a declaration
      while (i < code.size() && code[i] != '\n') i += code[i] == '\\' ? 2 : 1;
      continue;
    }
    if (c == '{') {
      const std::string s = trim(statement);
      const bool is_anonymous = s == "namespace";
      const bool in_anonymous = !anonymous.empty() && anonymous.back();
      if (in_anonymous && !is_anonymous)
        for (Declared& d : names_of(s)) found.push_back(d);
      anonymous.push_back(is_anonymous);
      statement.clear();
      // Skip to the matching brace unless it opens a namespace, whose contents are declarations.
      if (s.rfind("namespace", 0) != 0) anonymous.back() = false;
      continue;
    }
    if (c == '}') {
      if (!anonymous.empty()) anonymous.pop_back();
      statement.clear();
      continue;
    }
    if (c == ';') {
      if (!anonymous.empty() && anonymous.back())
        for (Declared& d : names_of(statement)) found.push_back(d);
      statement.clear();
      continue;
    }
    statement += c;
  }
  return found;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(UnityNames, TheScannerFindsWhatAnAnonymousNamespaceDeclares) {
  const std::string text = R"(
namespace vdnn {
namespace {
// void not_this(int);
constexpr double kWidth = 1000, kMargin = 20;
using flags = dnnl::normalization_flags;
template <typename T>
std::vector<T> place(const std::vector<T>& blocks, size_t base) {
  if (base) { return {}; }
  const char* s = "}{";
  return blocks;
}
class Search : public Base {
 public:
  void run();
};
struct Row { int a; };
}  // namespace
void public_function() {}
}  // namespace vdnn
)";
  std::set<std::string> names;
  for (const Declared& d : anonymous_names(text)) names.insert(d.name);
  EXPECT_EQ(names, (std::set<std::string>{"kWidth", "kMargin", "flags", "place", "Search", "Row"}));
}

TEST(UnityNames, NamesPrivateToAFileAreUniqueWithinItsLibrary) {
  const fs::path root = VDNN_SOURCE_DIR;
  std::map<std::string, std::vector<fs::path>> libraries;  // src/plan, src/backends/cpu, tools
  for (const fs::path dir : {root / "src", root / "tools"})
    for (const auto& entry : fs::recursive_directory_iterator(dir))
      if (entry.path().extension() == ".cc")
        libraries[fs::relative(entry.path().parent_path(), root).string()].push_back(entry.path());
  ASSERT_GT(libraries.size(), 10u);
  size_t scanned = 0;
  for (const auto& [library, files] : libraries) {
    std::map<std::string, std::map<std::string, std::string>> where;  // name -> file -> alias target
    for (const fs::path& file : files)
      for (const Declared& d : anonymous_names(read(file))) {
        where[d.name][file.filename().string()] = d.alias_of;
        ++scanned;
      }
    for (const auto& [name, files_of] : where) {
      if (files_of.size() < 2) continue;
      std::set<std::string> targets;
      std::string list;
      for (const auto& [file, alias_of] : files_of) {
        targets.insert(alias_of);
        list += " " + file;
      }
      if (targets.size() == 1 && !targets.begin()->empty()) continue;  // `using x = T;` twice
      ADD_FAILURE() << library << ": '" << name << "' is declared in the anonymous namespace of" << list
                    << "; in a unity batch they are one namespace: give each its own name";
    }
  }
  EXPECT_GT(scanned, 300u) << "the scanner found too few names to be reading the sources";
}

}  // namespace test_unity_names
