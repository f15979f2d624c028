// cuco CPU emulator: NCCL device API (<nccl_device.h>): use the cuco comm API cannot run on a CPU.
#error "cuco-emu: not emulatable: NCCL device API (<nccl_device.h>): use the cuco comm API"
