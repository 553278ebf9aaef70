// tests/scoped_env.h — sets (or unsets) an environment variable for one scope, then restores it.
//   { test::ScopedEnv env("VDNN_DATA_DIR", "/tmp/x"); load_model("m"); }   // back as it was here
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace vdnn::test {

class ScopedEnv {
 public:
  // `value` nullopt: unset it for the scope.
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace vdnn::test
