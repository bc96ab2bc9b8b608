// hhg/error.hpp: the one exception type hhg throws for bad input.
//
// Errors come in three tiers (see docs/architecture.md):
//  1. bad input at the API boundary (NaN, min > max, stale handle, bad
//     configuration) throws hhg::error and leaves the structure unchanged;
//  2. misuse throws hhg::error with its own code: a change to a structure from
//     inside its own detection callback (reentrant_call), a call on a moved-from
//     structure (moved_from); the structure stays valid;
//  3. broken internal invariants are caught by validate(), which checks every
//     invariant on demand (the tests call it after every step) and throws
//     std::logic_error. There are no debug-only assertions.
// The library never prints.
#pragma once

#include <stdexcept>
#include <string>

namespace hhg {

enum class errc {
  nan_coordinate,  ///< a box coordinate is NaN
  inverted_box,    ///< min > max on some axis
  invalid_handle,  ///< null, stale, unknown or already removed handle
  bad_config,      ///< a configuration value outside its documented range
  capacity,        ///< more objects than the structure can address
  unknown_method,  ///< a method name that is not in hhg/methods.hpp
  reentrant_call,  ///< the structure was changed, or a detection started, from inside its own callback or visitor
  moved_from,      ///< the structure was moved from (only assignment and destruction are allowed)
  out_of_domain,   ///< a box a periodic domain cannot hold (infinite on a periodic axis, or too many periods away)
};

class error : public std::invalid_argument {
 public:
  error(errc code, const std::string& what) : std::invalid_argument(what), code_(code) {}
  errc code() const noexcept { return code_; }

 private:
  errc code_;
};

}  // namespace hhg
