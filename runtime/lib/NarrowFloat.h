//===- NarrowFloat.h - f16 and bf16 bits from and to float ----------------===//
//
// Shared by remat-run (filling and reading narrow tensors) and the runtime
// (__truncsfbf2, which compiled bf16 steps may call).
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_RUNTIME_NARROWFLOAT_H
#define REMAT_RUNTIME_NARROWFLOAT_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace remat::narrow {

/// IEEE binary16 and bfloat16 from and to float, rounding to nearest even
/// (the runtime needs no compiler support for either type).
inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t toBF16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN stays NaN
    return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
inline float fromBF16(uint16_t h) { return bitsFloat(uint32_t(h) << 16); }
inline uint16_t toF16(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return sign | 0x7e00; // NaN
  if (a >= 0x477ff000u)   // rounds to or beyond 65520: infinity
    return sign | 0x7c00;
  if (a < 0x38800000u) { // subnormal or zero: scale into the 2^-24 grid
    float m = bitsFloat(a) * 16777216.0f; // exact; rounding happens below
    return sign | static_cast<uint16_t>(std::nearbyint(m));
  }
  // Normal: rebias the exponent, round the 13 dropped bits to even.
  uint32_t r = a - 0x38000000u;
  r += 0xfffu + ((r >> 13) & 1);
  return sign | static_cast<uint16_t>(r >> 13);
}
inline float fromF16(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1f,
           m = h & 0x3ffu;
  if (e == 0) // zero or subnormal: m * 2^-24
    return bitsFloat(sign) + (sign ? -1.0f : 1.0f) * m * (1.0f / 16777216.0f);
  if (e == 31)
    return bitsFloat(sign | 0x7f800000u | (m << 13));
  return bitsFloat(sign | ((e + 112) << 23) | (m << 13));
}

} // namespace remat::narrow

#endif // REMAT_RUNTIME_NARROWFLOAT_H
