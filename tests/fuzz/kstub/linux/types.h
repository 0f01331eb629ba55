/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* The host's uapi types, then the kernel's (kstub.h). */
#ifndef CNUAS_FUZZ_KSTUB_LINUX_TYPES_H
#define CNUAS_FUZZ_KSTUB_LINUX_TYPES_H
#include_next <linux/types.h>
#include "../kstub.h"
#endif
