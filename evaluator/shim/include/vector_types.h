#include "cuco_emu_defs.h"
