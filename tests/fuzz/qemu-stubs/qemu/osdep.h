/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * The little of QEMU's environment that hw/net/cnuas_vnic_roce.c uses, so
 * the fuzz target builds it as plain host C. cnuas_vnic.h (PCI, QOM) is
 * kept out by defining its guard; its two RoCE prototypes are here.
 */
#ifndef CNUAS_FUZZ_QEMU_OSDEP_H
#define CNUAS_FUZZ_QEMU_OSDEP_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cnuas_vnic_hw.h"

bool cnuas_vnic_roce_tx(uint8_t *frame, uint32_t len);
uint16_t cnuas_vnic_roce_rx(const uint8_t *frame, uint32_t len);

#endif
