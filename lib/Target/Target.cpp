//===- Target.cpp - Host code generation and the CUDA toolkit -------------===//

#include "remat/Target/Target.h"

#include "mlir/ExecutionEngine/OptUtils.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;

LogicalResult mlir::remat::addEntryPoints(llvm::Module &m, StringRef function,
                                          StringRef signature, StringRef target,
                                          std::string &error) {
  llvm::Function *ciface = m.getFunction(("_mlir_ciface_" + function).str());
  if (!ciface) {
    error = ("internal error: no C interface for '" + function + "'").str();
    return failure();
  }
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto *type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  auto *entry = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                                       "remat_step", m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  SmallVector<llvm::Value *> args;
  for (unsigned i = 0; i < ciface->arg_size(); ++i) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptr, entry->getArg(0), i);
    args.push_back(b.CreateLoad(ptr, slot));
  }
  b.CreateCall(ciface, args);
  b.CreateRetVoid();
  auto addString = [&](StringRef text, const char *name) {
    llvm::Constant *data =
        b.CreateGlobalString(text, (Twine(name) + "_text").str(), 0, &m);
    new llvm::GlobalVariable(m, ptr, /*isConstant=*/true,
                             llvm::GlobalValue::ExternalLinkage, data, name);
  };
  addString(signature, "remat_step_signature");
  addString(target, "remat_step_target");
  return success();
}

std::unique_ptr<llvm::TargetMachine>
mlir::remat::createHostTargetMachine(std::string &error) {
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t)
    return nullptr;
  llvm::SubtargetFeatures features;
  for (auto &f : llvm::sys::getHostCPUFeatures())
    features.AddFeature(f.getKey(), f.getValue());
  return std::unique_ptr<llvm::TargetMachine>(t->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(),
      llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}

LogicalResult mlir::remat::optimizeModule(llvm::Module &module,
                                          llvm::TargetMachine &machine,
                                          unsigned optLevel,
                                          std::string &error) {
  if (llvm::Error err =
          makeOptimizingTransformer(optLevel, 0, &machine)(&module)) {
    error = "LLVM optimization failed: " + llvm::toString(std::move(err));
    return failure();
  }
  return success();
}

LogicalResult mlir::remat::emitObject(llvm::Module &module,
                                      llvm::TargetMachine &machine,
                                      std::string &object, std::string &error) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit objects";
    return failure();
  }
  codegen.run(module);
  object.assign(buffer.begin(), buffer.end());
  return success();
}

LogicalResult mlir::remat::linkSharedObject(StringRef object, StringRef path,
                                            std::string &error) {
  const char *cc = std::getenv("CC");
  llvm::ErrorOr<std::string> linker =
      llvm::sys::findProgramByName(cc && *cc ? cc : "cc");
  if (!linker) {
    error = "no C compiler driver ('cc' or $CC) to link the shared object";
    return failure();
  }
  SmallString<128> objPath(path);
  objPath += ".o";
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(objPath, ec);
    if (ec) {
      error = ("cannot write '" + objPath + "': " + ec.message()).str();
      return failure();
    }
    out << object;
  }
  SmallVector<StringRef> argv = {*linker, "-shared", "-o", path, objPath};
  std::string why;
  int rc =
      llvm::sys::ExecuteAndWait(*linker, argv, std::nullopt, {}, 0, 0, &why);
  llvm::sys::fs::remove(objPath);
  if (rc != 0) {
    error = "linking failed (" + *linker + " exited " + std::to_string(rc) +
            ") " + why;
    return failure();
  }
  return success();
}

FailureOr<std::string> mlir::remat::findCUDAToolkit(StringRef explicitPath,
                                                    ArrayRef<StringRef> tools,
                                                    std::string &error) {
  auto has = [&](StringRef dir) {
    return llvm::all_of(tools, [&](StringRef tool) {
      SmallString<128> path(dir);
      llvm::sys::path::append(path, "bin", tool);
      return llvm::sys::fs::can_execute(path);
    });
  };
  if (!explicitPath.empty()) {
    if (has(explicitPath))
      return explicitPath.str();
    error = ("--cuda-path=" + explicitPath + " has no bin/" +
             llvm::join(tools, " or bin/") +
             "; --emit=gpu, nvvm and ptx need neither")
                .str();
    return failure();
  }
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(var); dir && *dir)
      if (has(dir))
        return std::string(dir);
  if (has("/usr/local/cuda"))
    return std::string("/usr/local/cuda");
  if (llvm::ErrorOr<std::string> tool =
          llvm::sys::findProgramByName(tools.front())) {
    std::string dir =
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(*tool)).str();
    if (has(dir))
      return dir;
  }
  error = "the CUDA toolkit's " + llvm::join(tools, " and ") +
          " were not found (looked in $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH, "
          "/usr/local/cuda and $PATH); --emit=gpu, nvvm and ptx need neither";
  return failure();
}
