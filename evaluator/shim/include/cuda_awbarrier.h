// cuco CPU emulator: asynchronous barriers (<cuda_awbarrier.h>) cannot run on a CPU.
#error "cuco-emu: not emulatable: asynchronous barriers (<cuda_awbarrier.h>)"
