/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* Where QEMU's tree has the shared header (include/hw/net/). */
#include <cnuas_roce_frame.h>
