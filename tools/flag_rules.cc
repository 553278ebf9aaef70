#include "flag_rules.h"

#include <algorithm>
#include <utility>

#include "comm/communicator.h"
#include "vdnn/error.h"

namespace vdnn::cli {
namespace {

// "a", "a or b", "a, b or c".
std::string or_list(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  return out;
}

}  // namespace

FlagRules& FlagRules::add(std::initializer_list<const char*> flags, const Condition& condition) {
  for (const char* flag : flags) {
    VDNN_CHECK(app_->get_option_no_throw(flag) != nullptr,
               "flag rule for " << flag << ", which `vdnn " << app_->get_name() << "` does not have");
    rules_.push_back({flag, condition});
  }
  return *this;
}

void FlagRules::check() const {
  for (const FlagRule& rule : rules_)
    if (app_->get_option(rule.flag)->count() > 0 && !rule.condition.holds())
      throw Error(message(rule, rule.condition.given()));
}

std::string FlagRules::message(const FlagRule& rule, const std::string& given) {
  return rule.flag + " applies only " + rule.condition.applies + "; it was given " + given;
}

Condition one_of(const char* flag, const std::string& value, std::vector<std::string> allowed, const std::string& why) {
  const std::string name = flag;
  std::string applies = "with " + name + " " + or_list(allowed) + (why.empty() ? "" : " (" + why + ")");
  return {std::move(applies),
          [&value, allowed] { return std::find(allowed.begin(), allowed.end(), value) != allowed.end(); },
          [&value, name] { return "with " + name + " " + value; }};
}

Condition with_flag(const CLI::App& app, const char* flag, const std::string& value_name) {
  const std::string name = flag;
  const CLI::Option* option = app.get_option(name);
  return {"with " + name + (value_name.empty() ? "" : " " + value_name), [option] { return option->count() > 0; },
          [name] { return "without " + name; }};
}

Condition under_mpirun() {
  return {"under mpirun (data-parallel ranks)", [] { return launched_by_mpi(); },
          [] { return std::string("without mpirun"); }};
}

}  // namespace vdnn::cli
