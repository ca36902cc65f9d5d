//===- ConvLibrary.cpp - f32 convolutions through oneDNN ------------------===//
//
// One primitive per convolution shape, layout choice and thread count,
// created on first use and kept. Operands stay in the step's NCHW / FCHW
// buffers. With ConvLayout::Blocked the primitive takes the layouts oneDNN
// finds fastest (format `any`) and the operands are reordered into blocked
// copies inside the caller's workspace, the result back out of one; with
// ConvLayout::Plain it works on the plain buffers. Every primitive runs with a
// user scratchpad at the workspace's start, so oneDNN allocates no tensor
// memory. Workspace layout: [scratchpad | blocked a | blocked b | blocked
// out], each part 64-byte aligned; the scratchpad part is the largest of
// the convolution's and the reorders' (they run one after another).
//
//===----------------------------------------------------------------------===//

#include "remat/ConvLibrary.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#ifdef REMAT_HAVE_DNNL
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>
#endif

int remat::defaultConvThreads() {
  static const int threads = [] {
    if (const char *env = std::getenv("REMAT_NUM_THREADS"))
      if (int v = std::atoi(env); v > 0)
        return v;
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return threads;
}

#ifndef REMAT_HAVE_DNNL

bool remat::haveConvLibrary() { return false; }
int64_t remat::convLibraryWorkspace(const ConvDesc &, int) { return -1; }
bool remat::runConvLibrary(const ConvDesc &, int, const float *, const float *,
                           float *, void *, int64_t) {
  return false;
}

#else

namespace {
using namespace dnnl;
using remat::ConvDesc;
using dims = memory::dims;
using tag = memory::format_tag;

constexpr int64_t kAlign = 64;
int64_t alignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

engine &cpuEngine() {
  static engine e(engine::kind::cpu, 0);
  return e;
}

/// The step's one host thread submits every primitive to this stream.
stream &cpuStream() {
  static stream s(cpuEngine());
  return s;
}

/// One operand: the step's plain layout, the primitive's, and the reorder
/// between them (none when they agree).
struct Operand {
  memory::desc user, prim;
  std::optional<reorder> copy;
  int64_t offset = 0;
};

struct Plan {
  primitive conv;
  memory::desc convScratch;
  /// a, b (inputs, copied in) and out (copied back).
  Operand ops[3];
  std::vector<memory::desc> reorderScratch;
  int64_t workspace = 0;
};

/// oneDNN's argument name for each of a, b, out by kind.
constexpr int kArgs[3][3] = {
    {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
    {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
    {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS}};

std::unique_ptr<Plan> makePlan(const ConvDesc &d) {
  const int64_t *in = d.kind == 1 ? d.out : d.a;
  const int64_t *weight = d.kind == 2 ? d.out : d.b;
  const int64_t *res = d.kind == 0 ? d.out : d.kind == 1 ? d.a : d.b;
  int64_t groups = d.window[6];
  if (groups < 1 || weight[0] % groups || in[1] != weight[1] * groups)
    return nullptr;
  dims src = {in[0], in[1], in[2], in[3]};
  dims dst = {res[0], res[1], res[2], res[3]};
  dims wei = {weight[0], weight[1], weight[2], weight[3]};
  tag weiTag = tag::oihw;
  if (groups > 1) {
    wei = {groups, weight[0] / groups, weight[1], weight[2], weight[3]};
    weiTag = tag::goihw;
  }
  auto f32 = memory::data_type::f32;
  bool plain = d.layout == remat::ConvLayout::Plain;
  memory::desc srcAny(src, f32, plain ? tag::nchw : tag::any),
      dstAny(dst, f32, plain ? tag::nchw : tag::any),
      weiAny(wei, f32, plain ? weiTag : tag::any);
  dims strides = {d.window[0], d.window[1]};
  dims padL = {d.window[2], d.window[3]}, padR = padL;
  // oneDNN counts dilation from 0.
  dims dilates = {d.window[4] - 1, d.window[5] - 1};
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  engine &eng = cpuEngine();

  auto plan = std::make_unique<Plan>();
  memory::desc prim[3];
  convolution_forward::primitive_desc fwd(
      {prop_kind::forward_training, algorithm::convolution_direct, srcAny,
       weiAny, dstAny, strides, dilates, padL, padR},
      attr, eng);
  if (d.kind == 0) {
    prim[0] = fwd.src_desc(), prim[1] = fwd.weights_desc();
    prim[2] = fwd.dst_desc();
    plan->convScratch = fwd.scratchpad_desc();
    plan->conv = convolution_forward(fwd);
  } else if (d.kind == 1) {
    convolution_backward_data::primitive_desc bwd(
        {algorithm::convolution_direct, srcAny, weiAny, dstAny, strides,
         dilates, padL, padR},
        attr, eng, fwd);
    prim[0] = bwd.diff_dst_desc(), prim[1] = bwd.weights_desc();
    prim[2] = bwd.diff_src_desc();
    plan->convScratch = bwd.scratchpad_desc();
    plan->conv = convolution_backward_data(bwd);
  } else {
    convolution_backward_weights::primitive_desc bwd(
        {algorithm::convolution_direct, srcAny, weiAny, dstAny, strides,
         dilates, padL, padR},
        attr, eng, fwd);
    prim[0] = bwd.src_desc(), prim[1] = bwd.diff_dst_desc();
    prim[2] = bwd.diff_weights_desc();
    plan->convScratch = bwd.scratchpad_desc();
    plan->conv = convolution_backward_weights(bwd);
  }
  memory::desc srcPlain(src, f32, tag::nchw), dstPlain(dst, f32, tag::nchw),
      weiPlain(wei, f32, weiTag);
  const memory::desc users[3][3] = {{srcPlain, weiPlain, dstPlain},
                                    {dstPlain, weiPlain, srcPlain},
                                    {srcPlain, dstPlain, weiPlain}};
  int64_t scratch = plan->convScratch.get_size(), offset = 0;
  int64_t copies = 0;
  for (int i = 0; i < 3; ++i) {
    Operand &op = plan->ops[i];
    op.user = users[d.kind][i];
    op.prim = prim[i];
    if (op.user == op.prim)
      continue;
    reorder::primitive_desc pd =
        i < 2 ? reorder::primitive_desc(eng, op.user, eng, op.prim, attr)
              : reorder::primitive_desc(eng, op.prim, eng, op.user, attr);
    plan->reorderScratch.push_back(pd.scratchpad_desc());
    scratch = std::max<int64_t>(scratch, pd.scratchpad_desc().get_size());
    op.copy = reorder(pd);
    op.offset = copies;
    copies += alignUp(op.prim.get_size());
  }
  offset = alignUp(scratch);
  for (Operand &op : plan->ops)
    op.offset += offset;
  plan->workspace = offset + copies;
  return plan;
}

using Key = std::tuple<int, int, std::vector<int64_t>>;

/// The plan for `d` at `threads` threads (null: oneDNN has none).
Plan *planFor(const ConvDesc &d, int threads) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Plan>> plans;
  std::vector<int64_t> shape(d.window, d.window + 7);
  for (const int64_t *s : {d.a, d.b, d.out})
    shape.insert(shape.end(), s, s + 4);
  shape.push_back(static_cast<int64_t>(d.layout));
  Key key{d.kind, threads, std::move(shape)};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(key);
  if (it == plans.end()) {
    // oneDNN sizes its per-thread scratch by the OpenMP threads of the
    // thread that creates the primitive.
    omp_set_num_threads(threads);
    std::unique_ptr<Plan> plan;
    try {
      plan = makePlan(d);
    } catch (const dnnl::error &) {
      plan = nullptr;
    }
    it = plans.emplace(std::move(key), std::move(plan)).first;
  }
  return it->second.get();
}
} // namespace

bool remat::haveConvLibrary() { return true; }

int64_t remat::convLibraryWorkspace(const ConvDesc &d, int threads) {
  if (d.kind < 0 || d.kind > 2 || threads < 1)
    return -1;
  Plan *plan = planFor(d, threads);
  return plan ? plan->workspace : -1;
}

bool remat::runConvLibrary(const ConvDesc &d, int threads, const float *a,
                           const float *b, float *out, void *workspace,
                           int64_t workspaceBytes) {
  if (d.kind < 0 || d.kind > 2 || threads < 1)
    return false;
  Plan *plan = planFor(d, threads);
  if (!plan || plan->workspace > workspaceBytes)
    return false;
  omp_set_num_threads(threads);
  engine &eng = cpuEngine();
  stream &s = cpuStream();
  auto *base = static_cast<char *>(workspace);
  void *users[3] = {const_cast<float *>(a), const_cast<float *>(b), out};
  std::unordered_map<int, memory> args;
  memory userMem[3];
  for (int i = 0; i < 3; ++i) {
    const Operand &op = plan->ops[i];
    userMem[i] = memory(op.user, eng, users[i]);
    args[kArgs[d.kind][i]] =
        op.copy ? memory(op.prim, eng, base + op.offset) : userMem[i];
  }
  size_t copied = 0;
  auto copy = [&](int i) {
    const Operand &op = plan->ops[i];
    memory from = i < 2 ? userMem[i] : args[kArgs[d.kind][i]];
    memory to = i < 2 ? args[kArgs[d.kind][i]] : userMem[i];
    op.copy->execute(s, {{DNNL_ARG_FROM, from},
                         {DNNL_ARG_TO, to},
                         {DNNL_ARG_SCRATCHPAD,
                          memory(plan->reorderScratch[copied++], eng, base)}});
  };
  for (int i = 0; i < 2; ++i)
    if (plan->ops[i].copy)
      copy(i);
  args[DNNL_ARG_SCRATCHPAD] = memory(plan->convScratch, eng, base);
  plan->conv.execute(s, args);
  if (plan->ops[2].copy)
    copy(2);
  s.wait();
  return true;
}

#endif // REMAT_HAVE_DNNL
