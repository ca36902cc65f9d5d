# -*- Python -*-
# Lit configuration for Remat's regression tests.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "REMAT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "check-schedule.py", "check-e2e.py", "check-close.py", "check-cubin.py", "torch-oracle.py", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.remat_obj_root, "test")

config.substitutions.append(("%remat_src", config.remat_src_root))
config.substitutions.append(("%remat_obj", config.remat_obj_root))
config.substitutions.append(("%python", "/usr/bin/python3"))

llvm_config.with_system_environment(["HOME", "TMPDIR", "PATH"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["remat-opt", "remat-compile", "remat-run", "remat-solve"],
    [config.remat_tools_dir])

# Device code generation needs the CUDA toolkit's ptxas and fatbinary (PTX
# alone does not), and one test needs the toolkit's stub libcuda.
cuda_root = os.environ.get("CUDA_ROOT", "/usr/local/cuda")
if all(os.access(os.path.join(cuda_root, "bin", t), os.X_OK)
       for t in ("ptxas", "fatbinary")):
    config.available_features.add("ptxas")
if os.path.exists(os.path.join(cuda_root, "lib64", "stubs", "libcuda.so")):
    config.available_features.add("cuda-stub")

# The oneDNN convolution tests need the runtime built with it.
if getattr(config, "remat_have_onednn", False):
    config.available_features.add("onednn")

# GPU execution tests need a CUDA driver; everything else runs anywhere.
if shutil.which("nvidia-smi") and os.path.exists("/dev/nvidia0"):
    config.available_features.add("cuda-gpu")

# The PyTorch exporter and oracle tests need Debian's python3-torch, which
# utils/setup.sh installs.
import subprocess
if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                  capture_output=True).returncode == 0:
    config.available_features.add("torch")
# The digits example reads scikit-learn's bundled data and plots with
# matplotlib (python3-sklearn, python3-matplotlib; utils/setup.sh).
if subprocess.run(["/usr/bin/python3", "-c", "import sklearn, matplotlib"],
                  capture_output=True).returncode == 0:
    config.available_features.add("sklearn")
