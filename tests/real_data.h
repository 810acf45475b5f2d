// Real BGP data for unit tests (tests/data/real, or wherever meson's
// `testdata` option points; the test reads the folder from PETREL_TESTDATA).
//
// A test that needs a file calls real_data_path() and GTEST_SKIPs when it
// is empty. GoogleTest exits 0 when every test skipped, which meson would
// count as a pass; SkipExitListener turns "nothing ran, something skipped"
// into exit status 77, which meson's summary counts as skipped.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace petrel::testing {

// The path of `relative` inside the real-data folder, or "" if absent.
inline std::string real_data_path(std::string_view relative) {
  const char* dir = std::getenv("PETREL_TESTDATA");
  if (dir == nullptr || *dir == '\0') return {};
  std::filesystem::path p = std::filesystem::path(dir) / relative;
  return std::filesystem::exists(p) ? p.string() : std::string();
}

class SkipExitListener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    if (unit.skipped_test_count() > 0 && unit.successful_test_count() == 0 &&
        unit.failed_test_count() == 0) {
      std::fflush(stdout);
      std::_Exit(77);
    }
  }
};

// Registers SkipExitListener once, from a static initializer of the test
// file that needs it (gtest's main runs after static initialization).
inline bool register_skip_exit() {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SkipExitListener);
  return true;
}

}  // namespace petrel::testing
