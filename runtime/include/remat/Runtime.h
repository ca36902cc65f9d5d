/*===- Runtime.h - Remat's runtime library -------------------------*- C
 *-*-===//
 *
 * The functions compiled steps call (allocation hooks, matmul) and the ones
 * the driver uses to allocate arguments and read the byte counts. Every byte
 * a step holds goes through remat_rt_alloc, so the measured peak covers
 * parameters, inputs, activations and gradients alike.
 *
 *===----------------------------------------------------------------------===*/

#ifndef REMAT_RUNTIME_H
#define REMAT_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Bytes currently allocated, the highest value since the last reset, and
/// the number of allocations and frees.
typedef struct {
  int64_t currentBytes;
  int64_t peakBytes;
  int64_t allocations;
  int64_t frees;
} remat_rt_stats;

/// Allocates `bytes` (64-byte aligned) and counts them. Returns NULL when the
/// memory cannot be had.
void *remat_rt_alloc(size_t bytes);
/// Frees memory from remat_rt_alloc (or from a compiled step); NULL is a no-op.
void remat_rt_free(void *ptr);
void remat_rt_get_stats(remat_rt_stats *stats);
/// Sets the peak to the current byte count.
void remat_rt_reset_peak(void);
/// Which matmul implementation the runtime was built with.
const char *remat_rt_matmul_backend(void);

#ifdef __cplusplus
}
#endif

#endif /* REMAT_RUNTIME_H */
