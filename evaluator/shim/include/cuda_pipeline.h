// cuco CPU emulator: asynchronous copies (<cuda_pipeline.h>) cannot run on a CPU.
#error "cuco-emu: not emulatable: asynchronous copies (<cuda_pipeline.h>)"
