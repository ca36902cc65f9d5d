//===- ConvTest.cpp - The runtime's convolution kernels -------------------===//
//
// Checks the CPU target's convolution kernels against reference loops that
// compute each output the way the compiler's loop nest does (one output at a
// time, terms in channel, kernel row, kernel column order, padding read as
// zero terms), on random geometries with strides, padding, dilation and
// groups. The forward and input-gradient kernels must match bit for bit;
// the weight gradient sums in another order and must match to rounding.
// oneDNN's primitives (f32, plain and blocked layouts) sum in their own
// order: all three must agree with the reference to a rounding bound on
// the same random geometries.
//
//===----------------------------------------------------------------------===//

#include "remat/ConvLibrary.h"
#include "remat/Runtime.h"

#include "gtest/gtest.h"

#include <cmath>
#include <optional>
#include <random>
#include <vector>

namespace {
struct Case {
  int64_t n, c, h, w, f, kh, kw, strideH, strideW, padH, padW, dilH, dilW,
      groups;
  int64_t oh() const {
    return (h + 2 * padH - dilH * (kh - 1) - 1) / strideH + 1;
  }
  int64_t ow() const {
    return (w + 2 * padW - dilW * (kw - 1) - 1) / strideW + 1;
  }
  int64_t cg() const { return c / groups; }
  int64_t fg() const { return f / groups; }
};

/// x[n, ci, ih, iw] when (ih, iw) lies inside, else nothing.
template <typename T>
bool inputAt(const Case &k, const std::vector<T> &x, int64_t n, int64_t ci,
             int64_t ih, int64_t iw, T &out) {
  if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w)
    return false;
  out = x[((n * k.c + ci) * k.h + ih) * k.w + iw];
  return true;
}

template <typename T>
std::vector<T> refForward(const Case &k, const std::vector<T> &x,
                          const std::vector<T> &w) {
  std::vector<T> y(k.n * k.f * k.oh() * k.ow());
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t f = 0; f < k.f; ++f)
      for (int64_t oh = 0; oh < k.oh(); ++oh)
        for (int64_t ow = 0; ow < k.ow(); ++ow) {
          T acc = 0;
          for (int64_t c = 0; c < k.cg(); ++c)
            for (int64_t kh = 0; kh < k.kh; ++kh)
              for (int64_t kw = 0; kw < k.kw; ++kw) {
                T v;
                int64_t ci = f / k.fg() * k.cg() + c;
                if (inputAt(k, x, n, ci, oh * k.strideH - k.padH + kh * k.dilH,
                            ow * k.strideW - k.padW + kw * k.dilW, v))
                  acc += v * w[((f * k.cg() + c) * k.kh + kh) * k.kw + kw];
              }
          y[((n * k.f + f) * k.oh() + oh) * k.ow() + ow] = acc;
        }
  return y;
}

template <typename T>
std::vector<T> refGradInput(const Case &k, const std::vector<T> &dy,
                            const std::vector<T> &w) {
  std::vector<T> dx(k.n * k.c * k.h * k.w);
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t ci = 0; ci < k.c; ++ci)
      for (int64_t ih = 0; ih < k.h; ++ih)
        for (int64_t iw = 0; iw < k.w; ++iw) {
          T acc = 0;
          int64_t group = ci / k.cg(), c = ci % k.cg();
          for (int64_t fl = 0; fl < k.fg(); ++fl)
            for (int64_t kh = 0; kh < k.kh; ++kh)
              for (int64_t kw = 0; kw < k.kw; ++kw) {
                int64_t f = group * k.fg() + fl;
                int64_t nh = ih + k.padH - kh * k.dilH,
                        nw = iw + k.padW - kw * k.dilW;
                if (nh < 0 || nw < 0 || nh % k.strideH || nw % k.strideW)
                  continue;
                int64_t oh = nh / k.strideH, ow = nw / k.strideW;
                if (oh >= k.oh() || ow >= k.ow())
                  continue;
                acc += dy[((n * k.f + f) * k.oh() + oh) * k.ow() + ow] *
                       w[((f * k.cg() + c) * k.kh + kh) * k.kw + kw];
              }
          dx[((n * k.c + ci) * k.h + ih) * k.w + iw] = acc;
        }
  return dx;
}

/// The weight gradient and, per element, the sum of its terms' magnitudes
/// (what bounds the rounding difference of a reordered sum).
template <typename T>
std::pair<std::vector<double>, std::vector<double>>
refGradWeight(const Case &k, const std::vector<T> &x,
              const std::vector<T> &dy) {
  std::vector<double> dw(k.f * k.cg() * k.kh * k.kw), mag(dw.size());
  for (int64_t f = 0; f < k.f; ++f)
    for (int64_t c = 0; c < k.cg(); ++c)
      for (int64_t kh = 0; kh < k.kh; ++kh)
        for (int64_t kw = 0; kw < k.kw; ++kw) {
          double acc = 0, abs = 0;
          for (int64_t n = 0; n < k.n; ++n)
            for (int64_t oh = 0; oh < k.oh(); ++oh)
              for (int64_t ow = 0; ow < k.ow(); ++ow) {
                T v;
                int64_t ci = f / k.fg() * k.cg() + c;
                if (!inputAt(k, x, n, ci, oh * k.strideH - k.padH + kh * k.dilH,
                             ow * k.strideW - k.padW + kw * k.dilW, v))
                  continue;
                double term =
                    double(v) * dy[((n * k.f + f) * k.oh() + oh) * k.ow() + ow];
                acc += term;
                abs += std::fabs(term);
              }
          size_t i = ((f * k.cg() + c) * k.kh + kh) * k.kw + kw;
          dw[i] = acc;
          mag[i] = abs;
        }
  return {dw, mag};
}

template <typename T> std::vector<T> random(size_t size, std::mt19937 &rng) {
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<T> v(size);
  for (T &e : v)
    e = static_cast<T>(d(rng));
  return v;
}

template <typename T>
void conv(int32_t kind, const Case &k, const std::vector<T> &a,
          std::vector<int64_t> aShape, const std::vector<T> &b,
          std::vector<int64_t> bShape, std::vector<T> &out,
          std::vector<int64_t> outShape) {
  const int64_t window[7] = {k.strideH, k.strideW, k.padH,  k.padW,
                             k.dilH,    k.dilW,    k.groups};
  if constexpr (std::is_same_v<T, float>)
    remat_rt_conv2d_f32(kind, window, a.data(), aShape.data(), b.data(),
                        bShape.data(), out.data(), outShape.data());
  else
    remat_rt_conv2d_f64(kind, window, a.data(), aShape.data(), b.data(),
                        bShape.data(), out.data(), outShape.data());
}

template <typename T> void checkCase(const Case &k, std::mt19937 &rng) {
  SCOPED_TRACE(testing::Message()
               << "n" << k.n << " c" << k.c << " " << k.h << "x" << k.w << " f"
               << k.f << " k" << k.kh << "x" << k.kw << " s" << k.strideH << ","
               << k.strideW << " p" << k.padH << "," << k.padW << " d" << k.dilH
               << "," << k.dilW << " g" << k.groups);
  std::vector<int64_t> xs = {k.n, k.c, k.h, k.w},
                       ws = {k.f, k.cg(), k.kh, k.kw},
                       ys = {k.n, k.f, k.oh(), k.ow()};
  std::vector<T> x = random<T>(k.n * k.c * k.h * k.w, rng),
                 w = random<T>(k.f * k.cg() * k.kh * k.kw, rng),
                 dy = random<T>(k.n * k.f * k.oh() * k.ow(), rng);
  // Poison the outputs: the kernels must overwrite every element.
  std::vector<T> y(dy.size(), T(7)), dx(x.size(), T(7)), dw(w.size(), T(7));
  conv<T>(0, k, x, xs, w, ws, y, ys);
  conv<T>(1, k, dy, ys, w, ws, dx, xs);
  conv<T>(2, k, x, xs, dy, ys, dw, ws);
  std::vector<T> yRef = refForward(k, x, w), dxRef = refGradInput(k, dy, w);
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(y[i], yRef[i]) << "forward, element " << i;
  for (size_t i = 0; i < dx.size(); ++i)
    ASSERT_EQ(dx[i], dxRef[i]) << "input gradient, element " << i;
  auto [dwRef, mag] = refGradWeight(k, x, dy);
  double eps = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  for (size_t i = 0; i < dw.size(); ++i)
    ASSERT_NEAR(dw[i], dwRef[i], eps * (mag[i] + 1e-30) * 4)
        << "weight gradient, element " << i;
}

/// A random geometry with strides, padding, dilation and groups, or none
/// when the draw has no output.
std::optional<Case> randomCase(std::mt19937 &rng) {
  std::uniform_int_distribution<int64_t> small(1, 3), size(1, 11);
  Case k;
  k.groups = small(rng);
  k.n = small(rng);
  k.c = k.groups * small(rng);
  k.f = k.groups * small(rng);
  k.h = size(rng), k.w = size(rng);
  k.kh = small(rng), k.kw = small(rng);
  k.strideH = small(rng), k.strideW = small(rng);
  k.padH = small(rng) - 1, k.padW = small(rng) - 1;
  k.dilH = small(rng), k.dilW = small(rng);
  if (k.oh() < 1 || k.ow() < 1 || k.h + 2 * k.padH < k.dilH * (k.kh - 1) + 1 ||
      k.w + 2 * k.padW < k.dilW * (k.kw - 1) + 1)
    return std::nullopt;
  return k;
}

/// The shapes of the example models' layers: wide rows that take the
/// vectorized paths, strided and depthwise ones.
const Case kModelLayers[] = {
    {2, 16, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {2, 16, 32, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {2, 16, 32, 32, 32, 1, 1, 2, 2, 0, 0, 1, 1, 1},
    {2, 32, 16, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32},
    {1, 3, 40, 40, 8, 7, 7, 2, 2, 3, 3, 1, 1, 1},
    {1, 8, 24, 24, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2},
};

TEST(Conv, MatchesTheLoopNestOnRandomGeometries) {
  std::mt19937 rng(12345);
  int checked = 0;
  while (checked < 300) {
    std::optional<Case> drawn = randomCase(rng);
    if (!drawn)
      continue;
    const Case &k = *drawn;
    if (checked % 2)
      checkCase<float>(k, rng);
    else
      checkCase<double>(k, rng);
    if (HasFatalFailure())
      return;
    ++checked;
  }
}

// The kernels split their work over threads by output planes; every output
// is still computed by one thread in one order, so the bits do not depend
// on the thread count.
TEST(Conv, ResultsDoNotDependOnTheThreadCount) {
  std::mt19937 rng(99);
  const Case cases[] = {
      {4, 16, 24, 24, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {3, 8, 20, 20, 12, 3, 3, 2, 2, 1, 1, 1, 1, 2},
      {2, 12, 16, 16, 12, 3, 3, 1, 1, 1, 1, 1, 1, 12},
  };
  for (const Case &k : cases) {
    std::vector<int64_t> xs = {k.n, k.c, k.h, k.w},
                         ws = {k.f, k.cg(), k.kh, k.kw},
                         ys = {k.n, k.f, k.oh(), k.ow()};
    std::vector<float> x = random<float>(k.n * k.c * k.h * k.w, rng),
                       w = random<float>(k.f * k.cg() * k.kh * k.kw, rng),
                       dy = random<float>(k.n * k.f * k.oh() * k.ow(), rng);
    std::vector<std::vector<float>> outs[2];
    for (int threads : {1, 3}) {
      remat_rt_set_num_threads(threads);
      ASSERT_EQ(remat_rt_num_threads(), threads);
      std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
      conv<float>(0, k, x, xs, w, ws, y, ys);
      conv<float>(1, k, dy, ys, w, ws, dx, xs);
      conv<float>(2, k, x, xs, dy, ys, dw, ws);
      outs[threads == 1 ? 0 : 1] = {y, dx, dw};
    }
    remat_rt_set_num_threads(0);
    for (int kind = 0; kind < 3; ++kind)
      EXPECT_EQ(outs[0][kind], outs[1][kind]) << "kind " << kind;
  }
}

TEST(Conv, MatchesTheLoopNestOnModelLayers) {
  std::mt19937 rng(7);
  for (const Case &k : kModelLayers) {
    checkCase<float>(k, rng);
    if (HasFatalFailure())
      return;
  }
}
/// One oneDNN convolution into `out`, in a workspace of the size the
/// compiler would plan (poisoned, so that nothing reads it before writing).
bool library(int32_t kind, const Case &k, const std::vector<float> &a,
             const std::vector<int64_t> &aShape, const std::vector<float> &b,
             const std::vector<int64_t> &bShape, std::vector<float> &out,
             const std::vector<int64_t> &outShape, int threads,
             remat::ConvLayout layout) {
  remat::ConvDesc d{
      kind, {k.strideH, k.strideW, k.padH, k.padW, k.dilH, k.dilW, k.groups},
      {},   {},
      {},   layout};
  std::copy(aShape.begin(), aShape.end(), d.a);
  std::copy(bShape.begin(), bShape.end(), d.b);
  std::copy(outShape.begin(), outShape.end(), d.out);
  int64_t bytes = remat::convLibraryWorkspace(d, threads);
  EXPECT_GE(bytes, 0) << "kind " << kind;
  std::vector<float> workspace(bytes / sizeof(float) + 1, 7.0f);
  // A workspace one byte short is refused without touching the output.
  if (bytes > 0) {
    std::vector<float> before = out;
    EXPECT_FALSE(remat::runConvLibrary(d, threads, a.data(), b.data(),
                                       out.data(), workspace.data(),
                                       bytes - 1));
    EXPECT_EQ(out, before);
  }
  return remat::runConvLibrary(d, threads, a.data(), b.data(), out.data(),
                               workspace.data(), bytes);
}

/// Each oneDNN result against the reference: within a few roundings of the
/// sum of its terms' magnitudes.
void checkLibraryCase(const Case &k, std::mt19937 &rng, int threads,
                      remat::ConvLayout layout) {
  SCOPED_TRACE(testing::Message()
               << "n" << k.n << " c" << k.c << " " << k.h << "x" << k.w << " f"
               << k.f << " k" << k.kh << "x" << k.kw << " s" << k.strideH << ","
               << k.strideW << " p" << k.padH << "," << k.padW << " d" << k.dilH
               << "," << k.dilW << " g" << k.groups << " threads " << threads
               << " layout " << int(layout));
  std::vector<int64_t> xs = {k.n, k.c, k.h, k.w},
                       ws = {k.f, k.cg(), k.kh, k.kw},
                       ys = {k.n, k.f, k.oh(), k.ow()};
  std::vector<float> x = random<float>(k.n * k.c * k.h * k.w, rng),
                     w = random<float>(k.f * k.cg() * k.kh * k.kw, rng),
                     dy = random<float>(k.n * k.f * k.oh() * k.ow(), rng);
  std::vector<float> y(dy.size(), 7.0f), dx(x.size(), 7.0f), dw(w.size(), 7.0f);
  ASSERT_TRUE(library(0, k, x, xs, w, ws, y, ys, threads, layout));
  ASSERT_TRUE(library(1, k, dy, ys, w, ws, dx, xs, threads, layout));
  ASSERT_TRUE(library(2, k, x, xs, dy, ys, dw, ws, threads, layout));
  // The references in double, and the same sums over |terms| for bounds.
  std::vector<double> xd(x.begin(), x.end()), wd(w.begin(), w.end()),
      dyd(dy.begin(), dy.end());
  std::vector<double> yRef = refForward(k, xd, wd),
                      dxRef = refGradInput(k, dyd, wd);
  std::vector<double> absX(xd.size()), absW(wd.size()), absDy(dyd.size());
  for (size_t i = 0; i < xd.size(); ++i)
    absX[i] = std::fabs(xd[i]);
  for (size_t i = 0; i < wd.size(); ++i)
    absW[i] = std::fabs(wd[i]);
  for (size_t i = 0; i < dyd.size(); ++i)
    absDy[i] = std::fabs(dyd[i]);
  std::vector<double> yMag = refForward(k, absX, absW),
                      dxMag = refGradInput(k, absDy, absW);
  constexpr double eps = 1e-6;
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], yRef[i], eps * (yMag[i] + 1e-30) * 4)
        << "forward, element " << i;
  for (size_t i = 0; i < dx.size(); ++i)
    ASSERT_NEAR(dx[i], dxRef[i], eps * (dxMag[i] + 1e-30) * 4)
        << "input gradient, element " << i;
  auto [dwRef, mag] = refGradWeight(k, x, dy);
  for (size_t i = 0; i < dw.size(); ++i)
    ASSERT_NEAR(dw[i], dwRef[i], eps * (mag[i] + 1e-30) * 4)
        << "weight gradient, element " << i;
}

TEST(ConvLibrary, MatchesTheReferenceOnRandomGeometries) {
  if (!remat::haveConvLibrary())
    GTEST_SKIP() << "the runtime was built without oneDNN";
  std::mt19937 rng(2468);
  int checked = 0;
  while (checked < 150) {
    std::optional<Case> drawn = randomCase(rng);
    if (!drawn)
      continue;
    const Case &k = *drawn;
    checkLibraryCase(k, rng, 1 + checked % 2,
                     remat::ConvLayout(checked / 2 % 2));
    if (HasFatalFailure())
      return;
    ++checked;
  }
}

// Model layers (blocked layouts and their reorders), and the same bits on
// a second run of the same primitive: a recomputed convolution must
// reproduce its first result.
TEST(ConvLibrary, MatchesTheReferenceOnModelLayersAndRepeats) {
  if (!remat::haveConvLibrary())
    GTEST_SKIP() << "the runtime was built without oneDNN";
  std::mt19937 rng(8);
  for (const Case &k : kModelLayers) {
    for (auto layout : {remat::ConvLayout::Plain, remat::ConvLayout::Blocked})
      checkLibraryCase(k, rng, 2, layout);
    if (HasFatalFailure())
      return;
    std::vector<int64_t> xs = {k.n, k.c, k.h, k.w},
                         ws = {k.f, k.cg(), k.kh, k.kw},
                         ys = {k.n, k.f, k.oh(), k.ow()};
    std::vector<float> x = random<float>(k.n * k.c * k.h * k.w, rng),
                       dy = random<float>(k.n * k.f * k.oh() * k.ow(), rng);
    std::vector<float> first(k.f * k.cg() * k.kh * k.kw), again(first.size());
    ASSERT_TRUE(
        library(2, k, x, xs, dy, ys, first, ws, 2, remat::ConvLayout::Blocked));
    ASSERT_TRUE(
        library(2, k, x, xs, dy, ys, again, ws, 2, remat::ConvLayout::Blocked));
    EXPECT_EQ(first, again);
  }
}
} // namespace
