// cuco CPU emulator: fp8 types (<cuda_fp8.h>) cannot run on a CPU.
#error "cuco-emu: not emulatable: fp8 types (<cuda_fp8.h>)"
