//===- Conv.cpp - 2-D convolutions for compiled CPU steps -----------------===//
//
// remat-conv-to-runtime replaces the loop nests of train.conv2d and its two
// gradients (a scalar accumulation per output element, windows read through
// clamped indices) with calls to these kernels. They allocate no tensor
// memory (their scratch is a few KB of padding masks and the list of work
// pieces), so the step's allocations and peak are unchanged. The forward
// and input-gradient kernels add each output's terms in the loop nest's
// order (channel, then kernel row, then kernel column), a padding term as
// (w x) 0, which adds nothing: their results are the loop nest's bit for
// bit wherever the input is finite. They get their speed from running each
// kernel tap over a whole plane or row of outputs (a vectorizable
// multiply-add over contiguous memory) instead of gathering one output's
// terms, and from splitting output planes over threads. The weight
// gradient's sums are dot products accumulated in 16 lanes: a different
// order of the same terms. The file is built with -ffp-contract=off so
// that no multiply-add is fused (that would round once instead of twice).
//
//===----------------------------------------------------------------------===//

#include "remat/Runtime.h"

#include "MemRef.h"
#include "remat/ConvLibrary.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <type_traits>
#include <vector>

namespace {
enum Kind : int32_t { Forward = 0, GradInput = 1, GradWeight = 2 };

/// One convolution's geometry: input N x C x H x W, weight F x Cg x KH x KW
/// (Cg = C / groups input channels per group), output N x F x OH x OW.
struct Geometry {
  int64_t n, c, h, w, f, cg, kh, kw, oh, ow;
  int64_t strideH, strideW, padH, padW, dilH, dilW, groups;
  int64_t fg() const { return f / groups; }

  /// The input row that output row `o` reads at kernel row `k`, or -1 when
  /// that falls in the padding.
  int64_t inputRow(int64_t o, int64_t k) const {
    int64_t i = o * strideH - padH + k * dilH;
    return i >= 0 && i < h ? i : -1;
  }
  /// The output columns [lo, hi) whose input column at kernel column `k`
  /// (ow * strideW - padW + k * dilW) lies inside the input.
  std::pair<int64_t, int64_t> columns(int64_t k) const {
    int64_t shift = k * dilW - padW; // input column of output column 0
    // lo: the first ow with ow * strideW + shift >= 0.
    int64_t lo = shift >= 0 ? 0 : (-shift + strideW - 1) / strideW;
    // hi: one past the last ow with ow * strideW + shift <= w - 1.
    int64_t last = w - 1 - shift;
    int64_t hi = last < 0 ? 0 : last / strideW + 1;
    return {std::min(lo, ow), std::clamp(hi, int64_t(0), ow)};
  }
};

[[noreturn]] void fail(const char *what) {
  std::fflush(stdout);
  std::fprintf(stderr, "remat-run: error: convolution kernel: %s\n", what);
  std::_Exit(1);
}

/// A run of one kernel tap (kh, kw): output positions out + k of a plane
/// read input positions in + k * step, for k < count; where `mask` is set,
/// only the k with mask[k] lie inside the input (the rest read padding).
template <typename T> struct Run {
  int64_t out, in, step, count;
  /// 1 inside the input, 0 in the padding (null: all inside).
  const T *mask;
};

/// How the taps of a convolution are walked. With unit strides and rows
/// of equal length (OW = W, "same" convolutions), a tap reads the input
/// plane at a constant offset from the output plane: one run over all rows
/// at once, the padding columns masked, long enough to vectorize well even
/// on small planes. Otherwise one run per output row.
template <typename T> class Taps {
public:
  explicit Taps(const Geometry &g)
      : g(g), flat(g.strideH == 1 && g.strideW == 1 && g.ow == g.w) {
    if (!flat)
      return;
    // The padding columns repeat every row, so one mask of `chunk`
    // positions (whole rows, at least kChunk) plus a row serves a run of
    // any length in pieces, starting anywhere in a row: a few KB whatever
    // the plane.
    chunk = ((kChunk + g.ow - 1) / g.ow) * g.ow;
    stride = chunk + g.ow;
    masks.resize(g.kw * stride);
    for (int64_t kw = 0; kw < g.kw; ++kw) {
      auto [lo, hi] = g.columns(kw);
      for (int64_t i = 0; i < stride; ++i) {
        int64_t ow = i % g.ow;
        masks[kw * stride + i] = ow >= lo && ow < hi ? T(1) : T(0);
      }
    }
  }

  template <typename Fn> void forEach(int64_t kh, int64_t kw, Fn fn) const {
    auto [lo, hi] = g.columns(kw);
    int64_t shift = kw * g.dilW - g.padW;
    if (!flat) {
      for (int64_t oh = 0; oh < g.oh; ++oh)
        if (int64_t ih = g.inputRow(oh, kh); ih >= 0 && hi > lo)
          fn(Run<T>{oh * g.ow + lo, ih * g.w + lo * g.strideW + shift,
                    g.strideW, hi - lo, nullptr});
      return;
    }
    int64_t rowShift = kh * g.dilH - g.padH;
    int64_t first = std::max<int64_t>(0, -rowShift),
            last = std::min(g.oh, g.h - rowShift);
    int64_t offset = rowShift * g.w + shift;
    // Clip to positions whose input index is inside the plane: what is cut
    // lies in padding columns at the plane's corners.
    int64_t begin = std::max(first * g.ow, -offset),
            end = std::min(last * g.ow, g.h * g.w - offset);
    if (end <= begin || hi <= lo)
      return;
    if (lo == 0 && hi == g.ow) {
      fn(Run<T>{begin, begin + offset, 1, end - begin, nullptr});
      return;
    }
    for (int64_t at = begin; at < end; at += chunk)
      fn(Run<T>{at, at + offset, 1, std::min(chunk, end - at),
                masks.data() + kw * stride + at % g.ow});
  }

private:
  /// Positions a masked run covers at most.
  static constexpr int64_t kChunk = 512;
  const Geometry &g;
  bool flat;
  int64_t chunk = 0, stride = 0;
  /// masks[kw * stride + i]: whether position i of a row-aligned chunk
  /// reads inside the input at kernel column kw, as 1 or 0.
  std::vector<T> masks;
};

// The kernels below work on blocks of up to kBlock planes that read the
// same run: output channels of a group (forward, weight gradient) or input
// channels of a group (input gradient). Each plane still gets its own terms
// in its own order; the block only shares the loads and the run set-up,
// which dominate on small planes.
constexpr int kBlock = 4;

/// How a run reads its second operand: all of a contiguous run, a
/// contiguous run with padding masked off, or every step-th element.
enum Access { Contiguous, Masked, Strided };

/// y_b[k] += v_b * x[k * step] for the block's planes b < B (unused ones
/// are null). A masked-off term is (v x) 0, which adds nothing: the same
/// bits as skipping it wherever x is finite, and free of branches. Plain
/// loops over parameters: GCC honours `restrict` on parameters only, and
/// reloads pointers captured by a lambda instead of vectorizing.
template <int B, Access A, typename T>
inline void gatherLoop(T *__restrict y0, T *__restrict y1, T *__restrict y2,
                       T *__restrict y3, const T *__restrict x,
                       const T *__restrict mask, int64_t count, int64_t step,
                       T v0, T v1, T v2, T v3) {
  for (int64_t k = 0; k < count; ++k) {
    T xv = A == Strided ? x[k * step] : x[k];
    T t0 = v0 * xv, t1 = v1 * xv, t2 = v2 * xv, t3 = v3 * xv;
    if constexpr (A == Masked) {
      t0 *= mask[k], t1 *= mask[k], t2 *= mask[k], t3 *= mask[k];
    }
    y0[k] += t0;
    if constexpr (B > 1)
      y1[k] += t1;
    if constexpr (B > 2)
      y2[k] += t2;
    if constexpr (B > 3)
      y3[k] += t3;
  }
}

/// dx_b[k * step] += v_b * dy[k] for the block's planes b < B.
template <int B, Access A, typename T>
inline void scatterLoop(T *__restrict d0, T *__restrict d1, T *__restrict d2,
                        T *__restrict d3, const T *__restrict dy,
                        const T *__restrict mask, int64_t count, int64_t step,
                        T v0, T v1, T v2, T v3) {
  for (int64_t k = 0; k < count; ++k) {
    int64_t at = A == Strided ? k * step : k;
    T g = dy[k];
    T t0 = v0 * g, t1 = v1 * g, t2 = v2 * g, t3 = v3 * g;
    if constexpr (A == Masked) {
      t0 *= mask[k], t1 *= mask[k], t2 *= mask[k], t3 *= mask[k];
    }
    d0[at] += t0;
    if constexpr (B > 1)
      d1[at] += t1;
    if constexpr (B > 2)
      d2[at] += t2;
    if constexpr (B > 3)
      d3[at] += t3;
  }
}

template <int B, typename T>
inline void gather(const std::array<T *, 4> &y, const T *x, const Run<T> &r,
                   const T *v) {
  T v1 = B > 1 ? v[1] : T(0), v2 = B > 2 ? v[2] : T(0),
    v3 = B > 3 ? v[3] : T(0);
  if (r.mask)
    gatherLoop<B, Masked>(y[0], y[1], y[2], y[3], x, r.mask, r.count, 1, v[0],
                          v1, v2, v3);
  else if (r.step == 1)
    gatherLoop<B, Contiguous>(y[0], y[1], y[2], y[3], x, r.mask, r.count, 1,
                              v[0], v1, v2, v3);
  else
    gatherLoop<B, Strided>(y[0], y[1], y[2], y[3], x, r.mask, r.count, r.step,
                           v[0], v1, v2, v3);
}

template <int B, typename T>
inline void scatter(const std::array<T *, 4> &dx, const T *dy, const Run<T> &r,
                    const T *v) {
  T v1 = B > 1 ? v[1] : T(0), v2 = B > 2 ? v[2] : T(0),
    v3 = B > 3 ? v[3] : T(0);
  if (r.mask)
    scatterLoop<B, Masked>(dx[0], dx[1], dx[2], dx[3], dy, r.mask, r.count, 1,
                           v[0], v1, v2, v3);
  else if (r.step == 1)
    scatterLoop<B, Contiguous>(dx[0], dx[1], dx[2], dx[3], dy, r.mask, r.count,
                               1, v[0], v1, v2, v3);
  else
    scatterLoop<B, Strided>(dx[0], dx[1], dx[2], dx[3], dy, r.mask, r.count,
                            r.step, v[0], v1, v2, v3);
}

/// The block's planes at `offset` as four pointers, null past B.
template <int B, typename T>
std::array<T *, 4> planesAt(T *const *planes, int64_t offset) {
  std::array<T *, 4> at = {};
  for (int b = 0; b < B; ++b)
    at[b] = planes[b] + offset;
  return at;
}

constexpr int kLanes = 16;

/// lanes_b[k % kLanes] += x[k * step] * dy_b[k] for the block's planes
/// b < B (unused ones null). Padding terms are multiplied by 0 rather than
/// skipped (every position of a run is inside its plane, so this reads
/// real values): it vectorizes, and differs only where x is not finite.
template <int B, Access A, typename T>
inline void dotLoop(T *__restrict l0, T *__restrict l1, T *__restrict l2,
                    T *__restrict l3, const T *__restrict x,
                    const T *__restrict g0, const T *__restrict g1,
                    const T *__restrict g2, const T *__restrict g3,
                    const T *__restrict mask, int64_t count, int64_t step) {
  int64_t k = 0;
  auto term = [&](int64_t i) {
    return A == Strided ? x[i * step] : A == Masked ? x[i] * mask[i] : x[i];
  };
  if constexpr (A != Strided) {
    for (; k + kLanes <= count; k += kLanes)
      for (int j = 0; j < kLanes; ++j) {
        T xv = A == Masked ? x[k + j] * mask[k + j] : x[k + j];
        l0[j] += xv * g0[k + j];
        if constexpr (B > 1)
          l1[j] += xv * g1[k + j];
        if constexpr (B > 2)
          l2[j] += xv * g2[k + j];
        if constexpr (B > 3)
          l3[j] += xv * g3[k + j];
      }
  }
  for (int j = 0; k < count; ++k, j = (j + 1) % kLanes) {
    T xv = term(k);
    l0[j] += xv * g0[k];
    if constexpr (B > 1)
      l1[j] += xv * g1[k];
    if constexpr (B > 2)
      l2[j] += xv * g2[k];
    if constexpr (B > 3)
      l3[j] += xv * g3[k];
  }
}

/// The dot products of one run over every image: x at `x + n xImage`, the
/// block's output-gradient planes at `dy + n dyImage + b dyPlane`.
template <int B, typename T>
inline void dotImages(T (*lanes)[kLanes], const T *x, int64_t xImage,
                      const T *dy, int64_t dyImage, int64_t dyPlane,
                      int64_t images, const Run<T> &r) {
  // Lane arrays the loop owns (not reached through `lanes`), so that they
  // stay in registers across the images.
  T l[4][kLanes];
  for (int b = 0; b < 4; ++b)
    for (int j = 0; j < kLanes; ++j)
      l[b][j] = b < B ? lanes[b][j] : T(0);
  for (int64_t n = 0; n < images; ++n) {
    const T *xn = x + n * xImage, *g0 = dy + n * dyImage;
    const T *g1 = B > 1 ? g0 + dyPlane : nullptr;
    const T *g2 = B > 2 ? g0 + 2 * dyPlane : nullptr;
    const T *g3 = B > 3 ? g0 + 3 * dyPlane : nullptr;
    if (r.mask)
      dotLoop<B, Masked>(l[0], l[1], l[2], l[3], xn, g0, g1, g2, g3, r.mask,
                         r.count, 1);
    else if (r.step == 1)
      dotLoop<B, Contiguous>(l[0], l[1], l[2], l[3], xn, g0, g1, g2, g3, r.mask,
                             r.count, 1);
    else
      dotLoop<B, Strided>(l[0], l[1], l[2], l[3], xn, g0, g1, g2, g3, r.mask,
                          r.count, r.step);
  }
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < kLanes; ++j)
      lanes[b][j] = l[b][j];
}

/// One piece of a kernel's work: `size` (kBlock or 1) planes from `first`,
/// of image `n` (unused by the weight gradient) in `group`. Pieces write
/// disjoint outputs, so they may run on any thread in any order.
struct Piece {
  int64_t n, group, first;
  int size;
};

/// The pieces covering planes [0, perGroup) of every group (and image):
/// blocks of kBlock, then single planes for what is left.
std::vector<Piece> piecesOf(int64_t images, int64_t groups, int64_t perGroup) {
  std::vector<Piece> pieces;
  for (int64_t n = 0; n < images; ++n)
    for (int64_t group = 0; group < groups; ++group) {
      int64_t p = 0;
      for (; p + kBlock <= perGroup; p += kBlock)
        pieces.push_back({n, group, p, kBlock});
      for (; p < perGroup; ++p)
        pieces.push_back({n, group, p, 1});
    }
  return pieces;
}

std::atomic<int> threadSetting{0};

/// The threads the kernels use: remat_rt_set_num_threads, else
/// REMAT_NUM_THREADS, else the machine's hardware threads.
int threadCount() {
  if (int set = threadSetting.load(); set > 0)
    return set;
  return remat::defaultConvThreads();
}

/// Below this many multiply-adds a kernel runs on the calling thread alone:
/// starting a thread costs tens of microseconds.
constexpr double kParallelWork = 1 << 20;

/// Runs piece(i) for every i < count, split into contiguous ranges over up
/// to threadCount() threads. Each output is computed by one piece in one
/// order, so the results do not depend on the number of threads.
template <typename Fn> void parallelFor(int64_t count, double work, Fn piece) {
  int64_t threads = std::min<int64_t>(threadCount(), count);
  if (work < kParallelWork)
    threads = 1;
  auto range = [&](int64_t t) {
    for (int64_t i = count * t / threads; i < count * (t + 1) / threads; ++i)
      piece(i);
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t)
    pool.emplace_back(range, t);
  range(0);
  for (std::thread &thread : pool)
    thread.join();
}

/// Calls fn with piece p's block size as a constant.
template <typename Fn> void withBlock(const Piece &p, Fn fn) {
  if (p.size == kBlock)
    fn(std::integral_constant<int, kBlock>());
  else
    fn(std::integral_constant<int, 1>());
}

/// out[n, f] = sum over (c, kh, kw) of w[f, c, kh, kw] * x[n, g Cg + c, ...].
template <typename T>
void forward(const Geometry &g, const T *x, const T *wt, T *y) {
  Taps<T> taps(g);
  int64_t plane = g.oh * g.ow, fg = g.fg();
  std::vector<Piece> pieces = piecesOf(g.n, g.groups, fg);
  double work = double(g.n) * g.f * g.cg * g.kh * g.kw * plane;
  parallelFor(pieces.size(), work, [&](int64_t i) {
    const Piece &p = pieces[i];
    withBlock(p, [&](auto block) {
      constexpr int B = decltype(block)::value;
      int64_t n = p.n, group = p.group, f0 = group * fg + p.first;
      T *ys[B];
      for (int b = 0; b < B; ++b) {
        ys[b] = y + (n * g.f + f0 + b) * plane;
        std::fill(ys[b], ys[b] + plane, T(0));
      }
      for (int64_t c = 0; c < g.cg; ++c) {
        const T *xp = x + (n * g.c + group * g.cg + c) * g.h * g.w;
        for (int64_t kh = 0; kh < g.kh; ++kh)
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            T v[B];
            for (int b = 0; b < B; ++b)
              v[b] = wt[(((f0 + b) * g.cg + c) * g.kh + kh) * g.kw + kw];
            taps.forEach(kh, kw, [&](const Run<T> &r) {
              gather<B>(planesAt<B>(ys, r.out), xp + r.in, r, v);
            });
          }
      }
    });
  });
}

/// dx[n, ci] = sum over (f in ci's group, kh, kw) of w[f, c, kh, kw] times
/// the output gradient at the one output position that read it there.
template <typename T>
void gradInput(const Geometry &g, const T *dy, const T *wt, T *dx) {
  Taps<T> taps(g);
  int64_t plane = g.h * g.w, fg = g.fg();
  std::vector<Piece> pieces = piecesOf(g.n, g.groups, g.cg);
  double work = double(g.n) * g.f * g.cg * g.kh * g.kw * g.oh * g.ow;
  parallelFor(pieces.size(), work, [&](int64_t i) {
    const Piece &p = pieces[i];
    withBlock(p, [&](auto block) {
      constexpr int B = decltype(block)::value;
      int64_t n = p.n, group = p.group, c0 = p.first;
      T *dxs[B];
      for (int b = 0; b < B; ++b) {
        dxs[b] = dx + (n * g.c + group * g.cg + c0 + b) * plane;
        std::fill(dxs[b], dxs[b] + plane, T(0));
      }
      for (int64_t fl = 0; fl < fg; ++fl) {
        int64_t f = group * fg + fl;
        const T *dyp = dy + (n * g.f + f) * g.oh * g.ow;
        for (int64_t kh = 0; kh < g.kh; ++kh)
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            T v[B];
            for (int b = 0; b < B; ++b)
              v[b] = wt[((f * g.cg + c0 + b) * g.kh + kh) * g.kw + kw];
            taps.forEach(kh, kw, [&](const Run<T> &r) {
              scatter<B>(planesAt<B>(dxs, r.in), dyp + r.out, r, v);
            });
          }
      }
    });
  });
}

/// dw[f, c, kh, kw] = sum over (n, oh, ow) of x[...] * dy[n, f, oh, ow].
template <typename T>
void gradWeight(const Geometry &g, const T *x, const T *dy, T *dw) {
  Taps<T> taps(g);
  int64_t fg = g.fg();
  std::vector<Piece> pieces = piecesOf(1, g.groups, fg);
  double work = double(g.n) * g.f * g.cg * g.kh * g.kw * g.oh * g.ow;
  parallelFor(pieces.size(), work, [&](int64_t i) {
    const Piece &p = pieces[i];
    withBlock(p, [&](auto block) {
      constexpr int B = decltype(block)::value;
      int64_t group = p.group, f0 = group * fg + p.first;
      for (int64_t c = 0; c < g.cg; ++c)
        for (int64_t kh = 0; kh < g.kh; ++kh)
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            T lanes[B][kLanes] = {};
            const T *xp = x + (group * g.cg + c) * g.h * g.w;
            const T *dyp = dy + f0 * g.oh * g.ow;
            taps.forEach(kh, kw, [&](const Run<T> &r) {
              dotImages<B>(lanes, xp + r.in, g.c * g.h * g.w, dyp + r.out,
                           g.f * g.oh * g.ow, g.oh * g.ow, g.n, r);
            });
            for (int b = 0; b < B; ++b) {
              // A fixed tree over the lanes.
              for (int width = kLanes / 2; width > 0; width /= 2)
                for (int j = 0; j < width; ++j)
                  lanes[b][j] += lanes[b][j + width];
              dw[(((f0 + b) * g.cg + c) * g.kh + kh) * g.kw + kw] = lanes[b][0];
            }
          }
    });
  });
}

/// Reads the geometry from the operands' shapes and checks that they agree
/// with each other and the window (the compiler only emits calls that do).
Geometry geometry(int32_t kind, const int64_t window[7], const int64_t a[4],
                  const int64_t b[4], const int64_t out[4]) {
  Geometry g{};
  // Input, weight and output shapes by kind.
  const int64_t *in = kind == GradInput ? out : a;
  const int64_t *weight = kind == GradWeight ? out : b;
  const int64_t *res = kind == Forward ? out : kind == GradInput ? a : b;
  g.n = in[0], g.c = in[1], g.h = in[2], g.w = in[3];
  g.f = weight[0], g.cg = weight[1], g.kh = weight[2], g.kw = weight[3];
  g.oh = res[2], g.ow = res[3];
  g.strideH = window[0], g.strideW = window[1], g.padH = window[2];
  g.padW = window[3], g.dilH = window[4], g.dilW = window[5];
  g.groups = window[6];
  bool ok = g.strideH > 0 && g.strideW > 0 && g.dilH > 0 && g.dilW > 0 &&
            g.padH >= 0 && g.padW >= 0 && g.groups > 0 &&
            g.c == g.cg * g.groups && g.f % g.groups == 0 && res[0] == g.n &&
            res[1] == g.f;
  if (!ok)
    fail("operand shapes do not match the window");
  return g;
}

template <typename T>
void run(int32_t kind, const int64_t window[7], const T *a,
         const int64_t aShape[4], const T *b, const int64_t bShape[4], T *out,
         const int64_t outShape[4]) {
  Geometry g = geometry(kind, window, aShape, bShape, outShape);
  switch (kind) {
  case Forward:
    return forward(g, a, b, out);
  case GradInput:
    return gradInput(g, a, b, out);
  case GradWeight:
    return gradWeight(g, a, b, out);
  default:
    fail("unknown kind");
  }
}

template <typename T>
void runDescriptors(int32_t kind, const int64_t window[7],
                    const MemRef<T, 4> *a, const MemRef<T, 4> *b,
                    MemRef<T, 4> *out) {
  if (!contiguous(a) || !contiguous(b) || !contiguous(out))
    fail("operands must be contiguous");
  run(kind, window, a->aligned + a->offset, a->sizes, b->aligned + b->offset,
      b->sizes, out->aligned + out->offset, out->sizes);
}
/// A f32 convolution through oneDNN in the step's planned workspace; where
/// oneDNN's primitive needs more than the build planned (a step compiled for
/// more threads or another machine), the kernels above, with a warning.
void runLibrary(int32_t kind, int32_t layout, const int64_t window[7],
                const MemRef<float, 4> *a, const MemRef<float, 4> *b,
                MemRef<float, 4> *out, const MemRef<int8_t, 1> *workspace) {
  if (!contiguous(a) || !contiguous(b) || !contiguous(out))
    fail("operands must be contiguous");
  remat::ConvDesc d{kind, {}, {}, {}, {}, remat::ConvLayout(layout != 0)};
  std::copy(window, window + 7, d.window);
  std::copy(a->sizes, a->sizes + 4, d.a);
  std::copy(b->sizes, b->sizes + 4, d.b);
  std::copy(out->sizes, out->sizes + 4, d.out);
  // The operands' shapes are checked as for the kernels.
  geometry(kind, window, d.a, d.b, d.out);
  const float *pa = a->aligned + a->offset, *pb = b->aligned + b->offset;
  float *po = out->aligned + out->offset;
  if (remat::runConvLibrary(d, threadCount(), pa, pb, po,
                            workspace->aligned + workspace->offset,
                            workspace->sizes[0]))
    return;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    std::fprintf(stderr,
                 "remat-run: warning: oneDNN needs more convolution "
                 "workspace at %d threads than the step planned (built for "
                 "another thread count or machine?); using the runtime's "
                 "own kernels\n",
                 threadCount());
  run(kind, window, pa, d.a, pb, d.b, po, d.out);
}
} // namespace

extern "C" {

void remat_rt_set_num_threads(int threads) {
  threadSetting.store(threads > 0 ? threads : 0);
}

int remat_rt_num_threads(void) { return threadCount(); }

void remat_rt_conv2d_f32(int32_t kind, const int64_t window[7], const float *a,
                         const int64_t aShape[4], const float *b,
                         const int64_t bShape[4], float *out,
                         const int64_t outShape[4]) {
  run(kind, window, a, aShape, b, bShape, out, outShape);
}

void remat_rt_conv2d_f64(int32_t kind, const int64_t window[7], const double *a,
                         const int64_t aShape[4], const double *b,
                         const int64_t bShape[4], double *out,
                         const int64_t outShape[4]) {
  run(kind, window, a, aShape, b, bShape, out, outShape);
}

// Called by remat-conv-to-runtime.
void _mlir_ciface_remat_rt_conv2d_f32(int32_t kind, int64_t strideH,
                                      int64_t strideW, int64_t padH,
                                      int64_t padW, int64_t dilH, int64_t dilW,
                                      int64_t groups, MemRef<float, 4> *a,
                                      MemRef<float, 4> *b,
                                      MemRef<float, 4> *out) {
  const int64_t window[7] = {strideH, strideW, padH, padW, dilH, dilW, groups};
  runDescriptors(kind, window, a, b, out);
}

void _mlir_ciface_remat_rt_conv2d_f64(int32_t kind, int64_t strideH,
                                      int64_t strideW, int64_t padH,
                                      int64_t padW, int64_t dilH, int64_t dilW,
                                      int64_t groups, MemRef<double, 4> *a,
                                      MemRef<double, 4> *b,
                                      MemRef<double, 4> *out) {
  const int64_t window[7] = {strideH, strideW, padH, padW, dilH, dilW, groups};
  runDescriptors(kind, window, a, b, out);
}

// Called by remat-conv-to-runtime for convolutions remat-conv-library
// handed to oneDNN.
void _mlir_ciface_remat_rt_conv2d_dnnl_f32(
    int32_t kind, int32_t layout, int64_t strideH, int64_t strideW,
    int64_t padH, int64_t padW, int64_t dilH, int64_t dilW, int64_t groups,
    MemRef<float, 4> *a, MemRef<float, 4> *b, MemRef<float, 4> *out,
    MemRef<int8_t, 1> *workspace) {
  const int64_t window[7] = {strideH, strideW, padH, padW, dilH, dilW, groups};
  runLibrary(kind, layout, window, a, b, out, workspace);
}

} // extern "C"
