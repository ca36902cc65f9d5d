//===- Runtime.cpp - Counting allocator and matmul for compiled steps -----===//
//
// A compiled step allocates through `_mlir_memref_to_llvm_alloc` (MLIR's
// generic allocation functions), which land here. Each block carries its
// size in a 64-byte header so a free knows what to subtract; the count is of
// requested bytes, the figure the simulator predicts.
//
//===----------------------------------------------------------------------===//

#include "remat/Runtime.h"

#include "MemRef.h"
#include "NarrowFloat.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef REMAT_HAVE_CBLAS
#include <cblas.h>
#endif

namespace {
constexpr size_t kHeader = 64;
std::atomic<int64_t> currentBytes{0}, peakBytes{0}, allocations{0}, frees{0};
std::atomic<int64_t> memoryCap{-1};

void notePeak(int64_t now) {
  int64_t peak = peakBytes.load(std::memory_order_relaxed);
  while (now > peak &&
         !peakBytes.compare_exchange_weak(peak, now, std::memory_order_relaxed))
    ;
}

template <typename T>
void matmulLoops(bool ta, bool tb, const MemRef<T, 2> *a, const MemRef<T, 2> *b,
                 MemRef<T, 2> *c) {
  int64_t m = c->sizes[0], n = c->sizes[1];
  int64_t k = ta ? a->sizes[0] : a->sizes[1];
  const T *ap = a->aligned + a->offset, *bp = b->aligned + b->offset;
  T *cp = c->aligned + c->offset;
  auto at = [&](int64_t i, int64_t p) {
    return ta ? ap[p * a->strides[0] + i * a->strides[1]]
              : ap[i * a->strides[0] + p * a->strides[1]];
  };
  auto bt = [&](int64_t p, int64_t j) {
    return tb ? bp[j * b->strides[0] + p * b->strides[1]]
              : bp[p * b->strides[0] + j * b->strides[1]];
  };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      T x = at(i, p);
      for (int64_t j = 0; j < n; ++j)
        cp[i * c->strides[0] + j * c->strides[1]] += x * bt(p, j);
    }
}

// C[i] += op(A[i]) op(B[i]) for each batch entry i, called by
// remat-matmul-to-runtime for train.batch_matmul.
template <typename T>
void batchMatmul(int32_t ta, int32_t tb, MemRef<T, 3> *a, MemRef<T, 3> *b,
                 MemRef<T, 3> *c,
                 void (*one)(int32_t, int32_t, MemRef<T, 2> *, MemRef<T, 2> *,
                             MemRef<T, 2> *)) {
  auto slice = [](MemRef<T, 3> *m, int64_t i) {
    MemRef<T, 2> s;
    s.allocated = m->allocated;
    s.aligned = m->aligned;
    s.offset = m->offset + i * m->strides[0];
    s.sizes[0] = m->sizes[1];
    s.sizes[1] = m->sizes[2];
    s.strides[0] = m->strides[1];
    s.strides[1] = m->strides[2];
    return s;
  };
  for (int64_t i = 0; i < c->sizes[0]; ++i) {
    MemRef<T, 2> sa = slice(a, i), sb = slice(b, i), sc = slice(c, i);
    one(ta, tb, &sa, &sb, &sc);
  }
}

#ifdef REMAT_HAVE_CBLAS
template <typename T> bool rowMajor(const MemRef<T, 2> *m) {
  return m->strides[1] == 1 &&
         m->strides[0] >= std::max<int64_t>(1, m->sizes[1]);
}
#endif
} // namespace

extern "C" {

#if defined(__x86_64__)
// LLVM turns an f32 -> bf16 truncation into this libcall on CPUs without
// AVX512-BF16 or AVX-NE-CONVERT (a compiled step targets the host CPU), and
// libgcc has it only from GCC 13 (Debian 12 ships 12): without it a bf16
// step compiled on such a machine failed to load. The x86-64 psABI returns
// a bf16 in the low 16 bits of xmm0, which is where a float's bits go.
// Rounds as remat-run does (NarrowFloat.h).
float __truncsfbf2(float f) {
  return remat::narrow::bitsFloat(remat::narrow::toBF16(f));
}
#endif

void remat_rt_set_memory_cap(int64_t bytes) { memoryCap.store(bytes); }

static char targetName[16] = "";
void remat_rt_set_target(const char *target) {
  std::snprintf(targetName, sizeof(targetName), "%s", target);
}
const char *remat_rt_target(void) { return targetName; }
int64_t remat_rt_memory_cap(void) { return memoryCap.load(); }

void *remat_rt_alloc(size_t bytes) {
  int64_t cap = memoryCap.load();
  if (cap >= 0 && currentBytes.load() + static_cast<int64_t>(bytes) > cap)
    return nullptr;
  void *base = nullptr;
  if (posix_memalign(&base, kHeader, bytes + kHeader) != 0)
    return nullptr;
  std::memcpy(base, &bytes, sizeof(bytes));
  int64_t now = currentBytes.fetch_add(static_cast<int64_t>(bytes)) +
                static_cast<int64_t>(bytes);
  ++allocations;
  notePeak(now);
  return static_cast<char *>(base) + kHeader;
}

void remat_rt_free(void *ptr) {
  if (!ptr)
    return;
  char *base = static_cast<char *>(ptr) - kHeader;
  size_t bytes;
  std::memcpy(&bytes, base, sizeof(bytes));
  currentBytes.fetch_sub(static_cast<int64_t>(bytes));
  ++frees;
  std::free(base);
}

void remat_rt_get_stats(remat_rt_stats *stats) {
  stats->currentBytes = currentBytes.load();
  stats->peakBytes = peakBytes.load();
  stats->allocations = allocations.load();
  stats->frees = frees.load();
}

void remat_rt_reset_peak(void) { peakBytes.store(currentBytes.load()); }

const char *remat_rt_matmul_backend(void) {
#ifdef REMAT_HAVE_CBLAS
  return "openblas";
#else
  return "loops";
#endif
}

// MLIR's generic allocation functions (finalize-memref-to-llvm with
// use-generic-functions=true).
void *_mlir_memref_to_llvm_alloc(size_t bytes) {
  void *p = remat_rt_alloc(bytes);
  if (!p) {
    // The step has no way to report failure: end the process, clearly.
    std::fflush(stdout);
    int64_t cap = memoryCap.load();
    std::fprintf(stderr,
                 "remat-run: error: out of memory: the step asked for %zu "
                 "bytes with %lld bytes allocated%s\n",
                 bytes, static_cast<long long>(currentBytes.load()),
                 cap >= 0 ? " (over --memory-cap)" : "");
    std::_Exit(1);
  }
  return p;
}
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) {
  // Blocks are 64-byte aligned; larger alignments are not requested by the
  // pipelines (buffer-alignment=0).
  if (alignment > kHeader)
    std::abort();
  return _mlir_memref_to_llvm_alloc(bytes);
}
void _mlir_memref_to_llvm_free(void *ptr) { remat_rt_free(ptr); }

// C += op(A) op(B), called by remat-matmul-to-runtime.
void _mlir_ciface_remat_rt_matmul_f32(int32_t ta, int32_t tb,
                                      MemRef<float, 2> *a, MemRef<float, 2> *b,
                                      MemRef<float, 2> *c) {
#ifdef REMAT_HAVE_CBLAS
  if (rowMajor(a) && rowMajor(b) && rowMajor(c)) {
    int m = c->sizes[0], n = c->sizes[1], k = ta ? a->sizes[0] : a->sizes[1];
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                a->aligned + a->offset, a->strides[0], b->aligned + b->offset,
                b->strides[0], 1.0f, c->aligned + c->offset, c->strides[0]);
    return;
  }
#endif
  matmulLoops(ta, tb, a, b, c);
}

void _mlir_ciface_remat_rt_matmul_f64(int32_t ta, int32_t tb,
                                      MemRef<double, 2> *a,
                                      MemRef<double, 2> *b,
                                      MemRef<double, 2> *c) {
#ifdef REMAT_HAVE_CBLAS
  if (rowMajor(a) && rowMajor(b) && rowMajor(c)) {
    int m = c->sizes[0], n = c->sizes[1], k = ta ? a->sizes[0] : a->sizes[1];
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0,
                a->aligned + a->offset, a->strides[0], b->aligned + b->offset,
                b->strides[0], 1.0, c->aligned + c->offset, c->strides[0]);
    return;
  }
#endif
  matmulLoops(ta, tb, a, b, c);
}

void _mlir_ciface_remat_rt_batch_matmul_f32(int32_t ta, int32_t tb,
                                            MemRef<float, 3> *a,
                                            MemRef<float, 3> *b,
                                            MemRef<float, 3> *c) {
  batchMatmul(ta, tb, a, b, c, _mlir_ciface_remat_rt_matmul_f32);
}

void _mlir_ciface_remat_rt_batch_matmul_f64(int32_t ta, int32_t tb,
                                            MemRef<double, 3> *a,
                                            MemRef<double, 3> *b,
                                            MemRef<double, 3> *c) {
  batchMatmul(ta, tb, a, b, c, _mlir_ciface_remat_rt_matmul_f64);
}

} // extern "C"
