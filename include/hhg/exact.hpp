// hhg/exact.hpp: exact signs of small polynomials in doubles, for the query
// predicates of hhg/queries.hpp and the neighbour searches.
//
// The predicates compare sums of squared differences (sphere, nearest order,
// neighbours) and quotients of differences (ray entry parameters). Computed in
// double these overflow beyond ~1e154, underflow below ~1e-154 and round near
// ties. Here every decision is exact for all finite doubles:
//
// - a fast path in double, scaled by a power of two (exact) chosen from the
//   largest magnitude, decides whenever the computed difference is clearly
//   away from zero (a forward error bound; relative 2^-48);
// - otherwise the sign is computed exactly with a small fixed-size unsigned
//   big integer (every double is m * 2^e; all inputs are aligned to the
//   smallest exponent, so sums and products of differences are integers of at
//   most ~4300 bits). Allocation free; a few microseconds in the worst case.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace hhg::exact {

/// A dyadic rational m * 2^e (m signed, |m| < 2^62).
struct dyadic {
  std::int64_t m = 0;
  int e = 0;
};

/// The double x (finite) as a dyadic with an odd mantissa (or 0).
inline dyadic to_dyadic(double x) noexcept {
  if (x == 0) return {0, 0};
  int e = 0;
  const double f = std::frexp(x, &e);  // |f| in [0.5, 1)
  auto m = static_cast<std::int64_t>(std::ldexp(f, 53));
  e -= 53;
  const int z = __builtin_ctzll(static_cast<unsigned long long>(m < 0 ? -m : m));
  return {m / (std::int64_t{1} << z), e + z};
}

namespace detail {

// Unsigned magnitude, 32-bit limbs, little endian.
struct ubig {
  static constexpr int N = 144;  // 4608 bits
  std::array<std::uint32_t, N> w;
  int n = 0;  // limbs in use (w[n-1] != 0 or n == 0)

  void trim() noexcept {
    while (n > 0 && w[static_cast<std::size_t>(n - 1)] == 0) --n;
  }
  // m << sh
  static ubig from(std::uint64_t m, int sh) noexcept {
    ubig r;
    r.n = 0;
    if (m == 0) return r;
    const int q = sh / 32, b = sh % 32;
    for (int i = 0; i < q; ++i) r.w[static_cast<std::size_t>(i)] = 0;
    // up to 96 bits after the shift
    const std::uint64_t lo = m << b, hi = b == 0 ? 0 : m >> (64 - b);
    r.w[static_cast<std::size_t>(q)] = static_cast<std::uint32_t>(lo);
    r.w[static_cast<std::size_t>(q + 1)] = static_cast<std::uint32_t>(lo >> 32);
    r.w[static_cast<std::size_t>(q + 2)] = static_cast<std::uint32_t>(hi);
    r.n = q + 3;
    r.trim();
    return r;
  }
};

inline int cmp(const ubig& a, const ubig& b) noexcept {
  if (a.n != b.n) return a.n < b.n ? -1 : 1;
  for (int i = a.n - 1; i >= 0; --i) {
    const auto x = a.w[static_cast<std::size_t>(i)], y = b.w[static_cast<std::size_t>(i)];
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

inline ubig add(const ubig& a, const ubig& b) noexcept {
  ubig r;
  const int n = std::max(a.n, b.n);
  std::uint64_t c = 0;
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    c += (i < a.n ? a.w[k] : 0u);
    c += (i < b.n ? b.w[k] : 0u);
    r.w[k] = static_cast<std::uint32_t>(c);
    c >>= 32;
  }
  r.n = n;
  if (c != 0) r.w[static_cast<std::size_t>(r.n++)] = static_cast<std::uint32_t>(c);
  return r;
}

// a - b, a >= b
inline ubig sub(const ubig& a, const ubig& b) noexcept {
  ubig r;
  std::int64_t c = 0;
  for (int i = 0; i < a.n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    c += static_cast<std::int64_t>(a.w[k]) - (i < b.n ? static_cast<std::int64_t>(b.w[k]) : 0);
    r.w[k] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(c));
    c = c < 0 ? -1 : 0;
  }
  r.n = a.n;
  r.trim();
  return r;
}

inline ubig mul(const ubig& a, const ubig& b) noexcept {
  ubig r;
  r.n = 0;
  if (a.n == 0 || b.n == 0) return r;
  r.n = a.n + b.n;
  for (int i = 0; i < r.n; ++i) r.w[static_cast<std::size_t>(i)] = 0;
  for (int i = 0; i < a.n; ++i) {
    std::uint64_t c = 0;
    const std::uint64_t x = a.w[static_cast<std::size_t>(i)];
    for (int j = 0; j < b.n; ++j) {
      const auto k = static_cast<std::size_t>(i + j);
      c += x * b.w[static_cast<std::size_t>(j)] + r.w[k];
      r.w[k] = static_cast<std::uint32_t>(c);
      c >>= 32;
    }
    r.w[static_cast<std::size_t>(i + b.n)] = static_cast<std::uint32_t>(c);
  }
  r.trim();
  return r;
}

struct sbig {
  ubig mag;
  int sign = 0;  // -1, 0, 1
};

inline sbig sadd(const sbig& a, const sbig& b) noexcept {
  if (a.sign == 0) return b;
  if (b.sign == 0) return a;
  if (a.sign == b.sign) return {add(a.mag, b.mag), a.sign};
  const int c = cmp(a.mag, b.mag);
  if (c == 0) {
    sbig z;
    z.mag.n = 0;
    return z;
  }
  return c > 0 ? sbig{sub(a.mag, b.mag), a.sign} : sbig{sub(b.mag, a.mag), b.sign};
}

inline sbig make(const dyadic& x, int base) noexcept {
  sbig r;
  r.mag.n = 0;
  if (x.m == 0) return r;
  r.sign = x.m < 0 ? -1 : 1;
  const std::uint64_t m = x.m < 0 ? static_cast<std::uint64_t>(-x.m) : static_cast<std::uint64_t>(x.m);
  r.mag = ubig::from(m, x.e - base);
  return r;
}

}  // namespace detail

/// One term (a - b) * (c - d) of a sum whose sign is wanted.
struct term {
  dyadic a, b, c, d;
};

inline term make_term(double a, double b, double c, double d) noexcept {
  return {to_dyadic(a), to_dyadic(b), to_dyadic(c), to_dyadic(d)};
}

/// The exact sign (-1, 0, 1) of sum_k (a_k - b_k)(c_k - d_k). Every input
/// must satisfy |value| < 2^1026 and exponent >= -1140 (every finite double,
/// midpoints between doubles included); at most 8 terms.
inline int sign_of_sum(const term* t, int count) noexcept {
  int base = std::numeric_limits<int>::max();
  for (int k = 0; k < count; ++k)
    for (const dyadic* x : {&t[k].a, &t[k].b, &t[k].c, &t[k].d})
      if (x->m != 0) base = std::min(base, x->e);
  if (base == std::numeric_limits<int>::max()) return 0;
  detail::sbig sum;
  sum.mag.n = 0;
  for (int k = 0; k < count; ++k) {
    detail::sbig u = detail::make(t[k].a, base), v = detail::make(t[k].b, base);
    v.sign = -v.sign;
    const detail::sbig x = detail::sadd(u, v);
    detail::sbig p = detail::make(t[k].c, base), q = detail::make(t[k].d, base);
    q.sign = -q.sign;
    const detail::sbig y = detail::sadd(p, q);
    if (x.sign == 0 || y.sign == 0) continue;
    detail::sbig prod;
    prod.mag = detail::mul(x.mag, y.mag);
    prod.sign = x.sign * y.sign;
    sum = detail::sadd(sum, prod);
  }
  return sum.sign;
}

namespace detail {

// s = a + b exactly as s + err (a, b, s finite).
inline double two_sum_err(double a, double b, double s) noexcept {
  const double bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

}  // namespace detail

/// The exact sign of sum_i (x_i - y_i)^2 - sum_j (u_j - v_j)^2 for finite
/// doubles (n, m <= 4). A zero-length group is zero.
inline int compare_sum_squares(const double* x, const double* y, int n, const double* u, const double* v,
                               int m) noexcept {
  {
    // plain double sums: when the larger is in [2^-960, 2^1000] (no overflow,
    // underflow far below its last bit) each has a relative error below
    // 2^-50, so a separation by 2^-45 decides
    double p1 = 0, p2 = 0;
    for (int i = 0; i < n; ++i) {
      const double e = x[i] - y[i];
      p1 += e * e;
    }
    for (int j = 0; j < m; ++j) {
      const double e = u[j] - v[j];
      p2 += e * e;
    }
    const double mx = std::max(p1, p2);
    if (mx >= 0x1p-960 && mx <= 0x1p1000) {
      if (p1 > p2 * (1 + 0x1p-45)) return 1;
      if (p1 < p2 * (1 - 0x1p-45)) return -1;
    }
  }
  std::array<double, 8> d{};
  double big = 0;
  bool finite = true;
  for (int i = 0; i < n; ++i) {
    d[static_cast<std::size_t>(i)] = x[i] - y[i];
    big = std::max(big, std::fabs(d[static_cast<std::size_t>(i)]));
  }
  for (int j = 0; j < m; ++j) {
    d[static_cast<std::size_t>(n + j)] = u[j] - v[j];
    big = std::max(big, std::fabs(d[static_cast<std::size_t>(n + j)]));
  }
  finite = big <= std::numeric_limits<double>::max();
  bool prescaled = false;
  if (!finite) {  // a difference overflows: the differences of the inputs / 4
    prescaled = true;
    big = 0;
    for (int i = 0; i < n + m; ++i) {
      const auto z = static_cast<std::size_t>(i);
      d[z] = i < n ? x[i] * 0.25 - y[i] * 0.25 : u[i - n] * 0.25 - v[i - n] * 0.25;
      big = std::max(big, std::fabs(d[z]));
    }
    finite = true;  // |x / 4 - y / 4| < 2^1023
  }
  if (finite) {
    if (big == 0) return 0;
    const int k = std::ilogb(big);  // scaled magnitudes below 2
    // multiplying by 2^-k is ldexp (exact unless the result underflows)
    const bool mul = k >= -1000 && k <= 1000;
    const double down = mul ? std::ldexp(1.0, -k) : 0, up = mul ? std::ldexp(1.0, k) : 0;
    double s1 = 0, s2 = 0;
    // every operation below exact: the sign is the answer (not with the
    // prescaling, which may round inputs below 2^-1020; then the bound
    // decides, as the largest difference is above 2^1020)
    bool exact = !prescaled;
    for (int i = 0; i < n + m; ++i) {
      const auto z = static_cast<std::size_t>(i);
      const double a = mul ? d[z] * down : std::ldexp(d[z], -k);
      const double sq = a * a;
      if (exact) {
        const double xi = i < n ? x[i] : u[i - n], yi = i < n ? y[i] : v[i - n];
        exact = detail::two_sum_err(xi, -yi, d[z]) == 0 && (mul ? a * up : std::ldexp(a, k)) == d[z] &&
                std::fma(a, a, -sq) == 0 && (a == 0 || sq >= 0x1p-1000);
      }
      if (i < n) {
        const double s = s1 + sq;
        if (exact) exact = detail::two_sum_err(s1, sq, s) == 0;
        s1 = s;
      } else {
        const double s = s2 + sq;
        if (exact) exact = detail::two_sum_err(s2, sq, s) == 0;
        s2 = s;
      }
    }
    const double diff = s1 - s2;
    if (exact && detail::two_sum_err(s1, -s2, diff) == 0) return diff > 0 ? 1 : (diff < 0 ? -1 : 0);
    // s1 + s2 >= 1 (the largest scaled difference is in [1, 2)); errors are
    // below 8 ulps relative plus underflow far below 2^-1000
    const double bound = (s1 + s2) * 0x1p-48 + 0x1p-1000;
    if (diff > bound) return 1;
    if (diff < -bound) return -1;
  }
  std::array<term, 8> t{};
  for (int i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = make_term(x[i], y[i], x[i], y[i]);
  for (int j = 0; j < m; ++j) t[static_cast<std::size_t>(n + j)] = make_term(u[j], v[j], v[j], u[j]);
  return sign_of_sum(t.data(), n + m);
}

/// Exact closed distance test: sum_i (a_i - b_i)^2 <= r^2, finite inputs, r >= 0.
template <std::size_t D>
inline bool within_exact(const std::array<double, D>& a, const std::array<double, D>& b, double r) noexcept {
  const double zero = 0;
  return compare_sum_squares(a.data(), b.data(), static_cast<int>(D), &r, &zero, 1) <= 0;
}

}  // namespace hhg::exact
