// A [[filter]] as the policy chain the daemon makes of it (config.h,
// resolve_policy): for tests written with filters.
#pragma once

#include <memory>
#include <vector>

#include "table/policy.h"

namespace petrel::table {

inline std::shared_ptr<const PolicyChain> chain(const Filter& f) {
  return PolicyChain::compile({policy_of_filter(f)});
}

// The same, kept alive for the test binary's length.
inline const PolicyChain* kept(const Filter& f) {
  static std::vector<std::shared_ptr<const PolicyChain>> keep;
  keep.push_back(chain(f));
  return keep.back().get();
}

}  // namespace petrel::table
