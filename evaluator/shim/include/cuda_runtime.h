// cuco CPU emulator: what a candidate gets for <cuda_runtime.h> when compiled by g++.
// Kernels run as fibers of one OS thread per rank; see evaluator/shim/README.md.
#ifndef CUCO_EMU_CUDA_RUNTIME_H_
#define CUCO_EMU_CUDA_RUNTIME_H_
#include "cuco_emu_defs.h"
#include "cuco_emu_device.h"
#include "cuco_emu_host.h"
#endif
