// cuco CPU emulator: tensor-core MMA (<mma.h>, wmma) cannot run on a CPU.
#error "cuco-emu: not emulatable: tensor-core MMA (<mma.h>, wmma)"
