// cuco CPU emulator: NCCL (<nccl.h>): use the cuco comm API cannot run on a CPU.
#error "cuco-emu: not emulatable: NCCL (<nccl.h>): use the cuco comm API"
