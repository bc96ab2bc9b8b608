// hhg/broad_phase.hpp: the contract every pair-finding method satisfies.
//
// A method stores boxes under handles and reports every overlapping pair
// (closed overlap, see box.hpp) exactly once. Tests, the command-line tool and
// the benchmark are written once against this contract.
#pragma once

#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "hhg/box.hpp"
#include "hhg/handle.hpp"

namespace hhg {

/// A non-owning reference to a callable `void(handle, handle)`, cheap to pass
/// by value. The referenced callable must outlive the call it is passed to.
class pair_callback {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, pair_callback> &&
             std::is_invocable_v<F&, handle, handle>)
  pair_callback(F&& f) noexcept  // NOLINT(google-explicit-constructor)
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, handle a, handle b) { (*static_cast<std::remove_reference_t<F>*>(o))(a, b); }) {}

  void operator()(handle a, handle b) const { call_(object_, a, b); }

 private:
  void* object_;
  void (*call_)(void*, handle, handle);
};

/// Dynamic use: insert, move, remove, then ask for the pairs.
template <class M>
concept dynamic_broad_phase = requires(M m, const M cm, const typename M::box_type& b, handle h,
                                       std::vector<handle_pair>& out, pair_callback cb) {
  typename M::box_type;
  { m.insert(b) } -> std::same_as<handle>;
  m.move(h, b);
  m.remove(h);
  m.find_pairs(out);
  m.for_each_pair(cb);
  { cm.size() } -> std::convertible_to<std::size_t>;
  { cm.contains(h) } -> std::same_as<bool>;
};

}  // namespace hhg
