/* stand-in: see emu_cub.h */
#include "../emu_cub.h"
