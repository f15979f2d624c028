// cuco CPU emulator: cuBLASLt (<cublasLt.h>) cannot run on a CPU.
#error "cuco-emu: not emulatable: cuBLASLt (<cublasLt.h>)"
