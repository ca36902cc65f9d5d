//===- ConvLibrary.h - f32 convolutions through oneDNN ----------*- C++ -*-===//
//
// The CPU target's float32 convolutions run as oneDNN primitives. The
// compiler asks, per convolution, how many bytes of workspace the primitive
// needs (oneDNN's scratchpad and the blocked copies of the operands it
// prefers), so that the step allocates that workspace as a planned buffer;
// the runtime runs the primitive inside it. Both sides build the primitive
// the same way from the same description, so they agree on the size. The
// library is optional: without oneDNN `workspaceBytes` returns -1 and the
// compiler keeps the runtime's own kernels.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_CONVLIBRARY_H
#define REMAT_CONVLIBRARY_H

#include <cstdint>

namespace remat {

/// Where oneDNN's primitive reads and writes: the step's NCHW / FCHW
/// buffers (its workspace is oneDNN's scratch only), or blocked copies of
/// them in the workspace (faster, above all for depthwise convolutions; the
/// workspace holds copies of all three operands).
enum class ConvLayout : int32_t { Plain = 0, Blocked = 1 };

/// A convolution as the runtime's kernels read it (see remat_rt_conv2d_f32):
/// `kind` 0 forward (a input, b weight), 1 input gradient (a output
/// gradient, b weight), 2 weight gradient (a input, b output gradient);
/// `window` {stride h, stride w, pad h, pad w, dilation h, dilation w,
/// groups}; NCHW activations, FCHW weights, all contiguous.
struct ConvDesc {
  int32_t kind;
  int64_t window[7];
  int64_t a[4], b[4], out[4];
  ConvLayout layout = ConvLayout::Blocked;
};

/// The threads convolutions use when nothing sets them: REMAT_NUM_THREADS,
/// else the machine's hardware threads.
int defaultConvThreads();

/// Whether the runtime was built with oneDNN.
bool haveConvLibrary();

/// The workspace bytes oneDNN's primitive for `d` needs at `threads`
/// threads, or -1 when there is no such primitive (no oneDNN, or shapes it
/// refuses).
int64_t convLibraryWorkspace(const ConvDesc &d, int threads);

/// Runs `d` through oneDNN at `threads` threads in the caller's workspace.
/// Returns false, computing nothing, when the primitive needs more than
/// `workspaceBytes` (a step built for another machine or thread count) or
/// there is no primitive.
bool runConvLibrary(const ConvDesc &d, int threads, const float *a,
                    const float *b, float *out, void *workspace,
                    int64_t workspaceBytes);

} // namespace remat

#endif // REMAT_CONVLIBRARY_H
