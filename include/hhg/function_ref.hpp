// hhg/function_ref.hpp: a non-owning reference to a callable, the one type
// behind every callback of hhg (pair callbacks, query visitors, the executor's
// range functions).
#pragma once

#include <type_traits>

namespace hhg {

/// A non-owning reference to a callable `R(Args...)`, cheap to pass by value.
/// The referenced callable must outlive the call it is passed to.
template <class Sig>
class function_ref;
template <class R, class... Args>
class function_ref<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, function_ref> && std::is_invocable_r_v<R, F&, Args...>)
  function_ref(F&& f)
  noexcept  // NOLINT(google-explicit-constructor)
      : object_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, Args... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(static_cast<Args>(a)...);
        }) {}
  R operator()(Args... a) const { return call_(object_, static_cast<Args>(a)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace hhg
