// cuco CPU emulator: cuBLAS (<cublas_v2.h>) cannot run on a CPU.
#error "cuco-emu: not emulatable: cuBLAS (<cublas_v2.h>)"
