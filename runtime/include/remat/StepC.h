/*===- StepC.h - A compiled step, from C and Python -----------------*- C -*-===
 *
 * The C face of remat::Step, for the Python API (ctypes): open a manifest,
 * point arguments at the caller's memory or fill their own buffers, run
 * steps, read the byte counts. Every call that can fail returns non-zero
 * (or NULL) and writes the reason into `error`.
 *
 *===----------------------------------------------------------------------===*/

#ifndef REMAT_STEPC_H
#define REMAT_STEPC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_step remat_step;

/// Loads the step a manifest describes (and its library); NULL on failure.
remat_step *remat_step_open(const char *manifest, char *error,
                            size_t errorSize);
void remat_step_close(remat_step *step);

int64_t remat_step_num_arguments(const remat_step *step);
/// The step's own buffer of argument `index` (host memory; for CUDA, the
/// copy remat_step_upload sends).
void *remat_step_argument(remat_step *step, int64_t index);
/// Makes argument `index` read `data` (`bytes` long, the argument's size)
/// from the next run on, without a copy; NULL goes back to the step's own
/// buffer. The caller keeps `data` alive and in place while it is bound.
int remat_step_bind_argument(remat_step *step, int64_t index, void *data,
                             size_t bytes, char *error, size_t errorSize);
/// Copies the host buffers to the device and back (no-ops on the CPU).
void remat_step_upload(remat_step *step);
/// Sets the step count (from 1) and, where `lr` is not negative, the
/// learning rate of a step compiled with them as arguments.
void remat_step_set_hyperparameters(remat_step *step, int64_t count, double lr);
void remat_step_download(remat_step *step);

/// Runs one step: the loss and the step's wall-clock milliseconds.
int remat_step_run(remat_step *step, double *loss, double *milliseconds,
                   char *error, size_t errorSize);
/// remat_step_run that also writes the host address of each of the step's
/// `count` results (its manifest's "results") to `results`; they stay valid
/// until remat_step_release_results.
int remat_step_run_results(remat_step *step, double *loss, double *milliseconds,
                           void **results, int64_t count, char *error,
                           size_t errorSize);
void remat_step_release_results(remat_step *step);

/// The bytes the process holds now (host or device, as the step's target),
/// the highest count since the last reset, and the reset. The counts are
/// the process's: other steps' buffers are in them.
int64_t remat_step_current_bytes(const remat_step *step);
int64_t remat_step_peak_bytes(const remat_step *step);
void remat_step_reset_peak(const remat_step *step);

#ifdef __cplusplus
}
#endif

#endif /* REMAT_STEPC_H */
