// cuco CPU emulator: NVSHMEM (<nvshmem.h>): use the cuco comm API cannot run on a CPU.
#error "cuco-emu: not emulatable: NVSHMEM (<nvshmem.h>): use the cuco comm API"
