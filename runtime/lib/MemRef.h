//===- MemRef.h - MLIR's memref descriptor, as the runtime reads it -------===//
//
// What a compiled step passes for a memref argument of a function with
// llvm.emit_c_interface: a pointer to this struct.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_RUNTIME_MEMREF_H
#define REMAT_RUNTIME_MEMREF_H

#include <cstdint>

template <typename T, int N> struct MemRef {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

/// Whether `m` is laid out row-major without gaps.
template <typename T, int N> bool contiguous(const MemRef<T, N> *m) {
  int64_t expected = 1;
  for (int d = N - 1; d >= 0; --d) {
    if (m->sizes[d] != 1 && m->strides[d] != expected)
      return false;
    expected *= m->sizes[d];
  }
  return true;
}

#endif // REMAT_RUNTIME_MEMREF_H
