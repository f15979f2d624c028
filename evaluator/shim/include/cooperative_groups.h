// cuco CPU emulator: cooperative_groups (<cooperative_groups.h>) cannot run on a CPU.
#error "cuco-emu: not emulatable: cooperative_groups (<cooperative_groups.h>)"
