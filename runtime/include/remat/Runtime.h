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
/// Refuses allocations that would take the byte count over `bytes` (-1: no
/// cap), host and device alike, as if the memory were that small.
void remat_rt_set_memory_cap(int64_t bytes);
int64_t remat_rt_memory_cap(void);
/// The target the driver was told to expect (the manifest's), so that the
/// runtime can name a mismatch; "" until set.
void remat_rt_set_target(const char *target);
const char *remat_rt_target(void);
/// Sets the peak to the current byte count.
void remat_rt_reset_peak(void);
/// Which matmul implementation the runtime was built with.
const char *remat_rt_matmul_backend(void);

/// Threads the convolution kernels use: `threads` > 0, or 0 for the default
/// (REMAT_NUM_THREADS, else the machine's hardware threads). Results do not
/// depend on it.
void remat_rt_set_num_threads(int threads);
int remat_rt_num_threads(void);

/// The CPU target's 2-D convolutions (remat-conv-to-runtime calls them
/// through their MLIR C interface). NCHW input, FCHW weight (C / groups
/// channels per filter), NCHW output, all contiguous; `window` is
/// {stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups}.
/// `kind` 0: out = conv(a = input, b = weight); 1: out = the input gradient
/// from a = output gradient, b = weight; 2: out = the weight gradient from
/// a = input, b = output gradient. `out` is overwritten; no tensor memory
/// is allocated (a few KB of scratch, not counted). These are the f64
/// path, and f32's where remat-conv-library did not pick oneDNN
/// (remat_rt_conv2d_dnnl_f32 in Conv.cpp, see remat/ConvLibrary.h).
void remat_rt_conv2d_f32(int32_t kind, const int64_t window[7], const float *a,
                         const int64_t aShape[4], const float *b,
                         const int64_t bShape[4], float *out,
                         const int64_t outShape[4]);
void remat_rt_conv2d_f64(int32_t kind, const int64_t window[7], const double *a,
                         const int64_t aShape[4], const double *b,
                         const int64_t bShape[4], double *out,
                         const int64_t outShape[4]);

/* Op profiling (runtime/lib/Profile.cpp): a profiling build
 * (remat-compile --profile-ops) brackets each op with begin/end calls that
 * carry the op's index in the manifest's profile_ops. */

void remat_rt_profile_begin(int32_t id);
void remat_rt_profile_end(int32_t id);
/// Starts recording ops 0 to `ops` - 1, dropping what was recorded; 0 stops
/// (the calls are then no-ops).
void remat_rt_profile_start(int32_t ops);
/// The number of times op `id` ran since the start; its first `capacity`
/// durations, in nanoseconds, go to `ns`.
int64_t remat_rt_profile_read(int32_t id, double *ns, int64_t capacity);

/* The CUDA target (runtime/lib/Cuda.cpp): the driver is loaded at run time,
 * so these exist on every machine and remat_cuda_init says why a GPU cannot
 * be used. Device memory is counted like host memory. */

typedef struct {
  char name[256];
  int ccMajor, ccMinor;
  int driverVersion;
  int64_t totalBytes, freeBytes;
} remat_cuda_device;

/// Loads libcuda.so.1 and makes device `ordinal`'s primary context current.
/// Returns 0, or -1 with the reason in `error`.
int remat_cuda_init(int ordinal, char *error, size_t errorSize);
void remat_cuda_get_device(remat_cuda_device *info);
/// Counted device allocation and free (the process ends with a message when
/// the device is out of memory).
void *remat_cuda_alloc(size_t bytes);
void remat_cuda_free(void *ptr);
void remat_cuda_upload(void *deviceDst, const void *hostSrc, size_t bytes);
void remat_cuda_download(void *hostDst, const void *deviceSrc, size_t bytes);
void remat_cuda_get_stats(remat_rt_stats *stats);
void remat_cuda_reset_peak(void);
/// The driver's high-water mark of memory used from the default pool since
/// the last reset (-1 when unavailable): a cross-check of the own count.
int64_t remat_cuda_pool_used_high(void);
void remat_cuda_reset_pool_high(void);
/// Milliseconds between the last step's stream creation and its final
/// synchronization, from CUDA events (-1 before any step).
double remat_cuda_last_step_device_ms(void);
/// Kernel profiling, for finding the slow kernels of a step: while on, every
/// launch is bracketed by CUDA events (which serializes nothing but costs a
/// little per launch) and the times are summed per kernel and launch shape
/// at each step's final synchronization.
void remat_cuda_set_profiling(int on);
/// Prints the `top` kernels that took the most time, per step over `steps`
/// profiled steps, to stderr.
void remat_cuda_print_profile(int top, int steps);

#ifdef __cplusplus
}
#endif

#endif /* REMAT_RUNTIME_H */
