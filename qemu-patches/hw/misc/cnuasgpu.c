/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuasgpu: a GPU-like PCI accelerator for the Cnuas fabric. BAR0 holds
 * identification, interrupt and CnuasLink registers, BAR1 is device memory
 * that guest drivers hand out and export (DMA-BUF) for RDMA. This file is
 * the PCI/QOM glue and the register file; the link is cnuasgpu_link.c.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "hw/pci/msi.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "cnuasgpu.h"

void cnuasgpu_guest_error(CnuasGpuState *s, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    s->stats[CNUASGPU_STAT(GUEST_ERRORS)]++;
    qemu_log_mask(LOG_GUEST_ERROR, "%s: %s\n", TYPE_CNUASGPU, msg);
}

/* [off, off + len) inside BAR1, without overflow. */
bool cnuasgpu_range_ok(CnuasGpuState *s, uint64_t off, uint64_t len)
{
    return off <= s->devmem_size && len <= s->devmem_size - off;
}

static void cnuasgpu_update_intx(CnuasGpuState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    pci_set_irq(pdev, !msi_enabled(pdev) &&
                (s->int_status & ~s->int_mask & CNUASGPU_INT_ALL));
}

/* MSI is edge: one message per newly visible cause. INTx is a level. */
void cnuasgpu_raise(CnuasGpuState *s, uint32_t causes)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t fresh = causes & ~s->int_status & ~s->int_mask;

    s->int_status |= causes;
    if (msi_enabled(pdev)) {
        if (fresh) {
            msi_notify(pdev, 0);
        }
    } else {
        cnuasgpu_update_intx(s);
    }
}

static uint64_t cnuasgpu_read(void *opaque, hwaddr addr, unsigned size)
{
    CnuasGpuState *s = opaque;

    switch (addr) {
    case CNUASGPU_REG_VENDOR:
        return CNUASGPU_VENDOR_ID;
    case CNUASGPU_REG_DEVICE:
        return CNUASGPU_DEVICE_ID;
    case CNUASGPU_REG_REVISION:
        return CNUASGPU_REVISION;
    case CNUASGPU_REG_FW_VERSION:
        return CNUASGPU_FW_MAJOR << 16 | CNUASGPU_FW_MINOR << 8 |
               CNUASGPU_FW_PATCH;
    case CNUASGPU_REG_GPU_ID:
        return s->gpu_id;
    case CNUASGPU_REG_SM_COUNT:
        return CNUASGPU_SM_COUNT;
    case CNUASGPU_REG_LANES_PER_SM:
        return CNUASGPU_LANES_PER_SM;
    case CNUASGPU_REG_TENSOR_SIZE:
        return CNUASGPU_TENSOR_SIZE;
    case CNUASGPU_REG_DEVMEM_SIZE_LO:
        return (uint32_t)s->devmem_size;
    case CNUASGPU_REG_DEVMEM_SIZE_HI:
        return s->devmem_size >> 32;
    case CNUASGPU_REG_LINK_MAX_FRAME:
        return CNUASGPU_LINK_MAX_FRAME;
    case CNUASGPU_REG_INT_STATUS:
        return s->int_status;
    case CNUASGPU_REG_INT_MASK:
        return s->int_mask;
    case CNUASGPU_REG_LINK_STATUS:
        return (cnuasgpu_link_is_up(s) ? CNUASGPU_LINK_UP : 0) |
               (s->tx_busy ? CNUASGPU_LINK_TX_BUSY : 0);
    case CNUASGPU_REG_TX_OFF_LO:
        return (uint32_t)s->tx_off;
    case CNUASGPU_REG_TX_OFF_HI:
        return s->tx_off >> 32;
    case CNUASGPU_REG_TX_LEN:
        return s->tx_len;
    case CNUASGPU_REG_TX_RESULT:
        return s->tx_result;
    case CNUASGPU_REG_RX_OFF_LO:
        return (uint32_t)s->rx_off;
    case CNUASGPU_REG_RX_OFF_HI:
        return s->rx_off >> 32;
    case CNUASGPU_REG_RX_BUF_SIZE:
        return s->rx_buf_size;
    case CNUASGPU_REG_RX_LEN:
        return s->rx_len;
    }
    if (addr >= CNUASGPU_REG_STATS &&
        addr < CNUASGPU_REG_STATS + 4 * CNUASGPU_NUM_STATS) {
        return s->stats[(addr - CNUASGPU_REG_STATS) / 4];
    }
    cnuasgpu_guest_error(s, "read of unknown register 0x%" HWADDR_PRIx, addr);
    return 0;
}

/* RX buffer registers may change at any time; they are checked at use. */
static void cnuasgpu_rx_setup_changed(CnuasGpuState *s)
{
    if (s->rx_buf_size && !cnuasgpu_range_ok(s, s->rx_off, s->rx_buf_size)) {
        cnuasgpu_guest_error(s, "RX buffer 0x%" PRIx64 "+%u outside BAR1: "
                             "receive stays off", s->rx_off, s->rx_buf_size);
    }
    cnuasgpu_link_update(s);
}

static void cnuasgpu_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    CnuasGpuState *s = opaque;

    switch (addr) {
    case CNUASGPU_REG_INT_STATUS:
        s->int_status &= ~val;
        cnuasgpu_update_intx(s);
        return;
    case CNUASGPU_REG_INT_MASK: {
        uint32_t unmasked = s->int_mask & ~val;

        s->int_mask = val & CNUASGPU_INT_ALL;
        if (msi_enabled(PCI_DEVICE(s)) && (s->int_status & unmasked)) {
            msi_notify(PCI_DEVICE(s), 0);
        }
        cnuasgpu_update_intx(s);
        return;
    }
    case CNUASGPU_REG_TX_OFF_LO:
        s->tx_off = deposit64(s->tx_off, 0, 32, val);
        return;
    case CNUASGPU_REG_TX_OFF_HI:
        s->tx_off = deposit64(s->tx_off, 32, 32, val);
        return;
    case CNUASGPU_REG_TX_LEN:
        s->tx_len = val;
        return;
    case CNUASGPU_REG_TX_DOORBELL:
        cnuasgpu_link_tx(s);
        return;
    case CNUASGPU_REG_RX_OFF_LO:
        s->rx_off = deposit64(s->rx_off, 0, 32, val);
        cnuasgpu_rx_setup_changed(s);
        return;
    case CNUASGPU_REG_RX_OFF_HI:
        s->rx_off = deposit64(s->rx_off, 32, 32, val);
        cnuasgpu_rx_setup_changed(s);
        return;
    case CNUASGPU_REG_RX_BUF_SIZE:
        s->rx_buf_size = val;
        cnuasgpu_rx_setup_changed(s);
        return;
    case CNUASGPU_REG_RX_CONSUME:
        s->rx_len = 0;
        cnuasgpu_link_update(s);
        return;
    }
    cnuasgpu_guest_error(s, "write to read-only or unknown register 0x%"
                         HWADDR_PRIx, addr);
}

static const MemoryRegionOps cnuasgpu_regs_ops = {
    .read = cnuasgpu_read,
    .write = cnuasgpu_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

static void cnuasgpu_realize(PCIDevice *pdev, Error **errp)
{
    CnuasGpuState *s = CNUASGPU(pdev);
    Error *err = NULL;

    if (!is_power_of_2(s->devmem_size) ||
        s->devmem_size < CNUASGPU_DEVMEM_MIN ||
        s->devmem_size > CNUASGPU_DEVMEM_MAX) {
        error_setg(errp, "devmem_size must be a power of two between 1M and "
                   "64G, not %" PRIu64, s->devmem_size);
        return;
    }

    pci_config_set_interrupt_pin(pdev->config, 1);
    memory_region_init_io(&s->regs, OBJECT(s), &cnuasgpu_regs_ops, s,
                          "cnuasgpu-regs", CNUASGPU_REGS_SIZE);
    pci_register_bar(pdev, CNUASGPU_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);
    /* Device memory is RAM: migrated with the guest's RAM, dirty-tracked. */
    memory_region_init_ram(&s->devmem, OBJECT(s), "cnuasgpu-devmem",
                           s->devmem_size, &err);
    if (err) {
        error_propagate(errp, err);
        return;
    }
    s->devmem_ptr = memory_region_get_ram_ptr(&s->devmem);
    pci_register_bar(pdev, CNUASGPU_BAR_DEVMEM,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->devmem);

    if (pci_is_express(pdev) && pcie_endpoint_cap_init(pdev, 0) < 0) {
        error_setg(errp, "cannot add the PCIe capability");
        return;
    }
    if (msi_init(pdev, 0, 1, true, false, &err)) {
        /* No MSI on this machine: INTx only. */
        warn_report_err(err);
    }
    if (!cnuasgpu_link_realize(s, errp)) {
        msi_uninit(pdev);
        if (pci_is_express(pdev)) {
            pcie_cap_exit(pdev);
        }
        return;
    }
}

static void cnuasgpu_exit(PCIDevice *pdev)
{
    CnuasGpuState *s = CNUASGPU(pdev);

    cnuasgpu_link_unrealize(s);
    msi_uninit(pdev);
    if (pci_is_express(pdev)) {
        pcie_cap_exit(pdev);
    }
}

/* PCIe endpoint on a PCIe bus (q35 root port), plain PCI on `pc`. */
static DeviceRealize cnuasgpu_parent_realize;

static void cnuasgpu_dc_realize(DeviceState *dev, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(dev);

    if (pci_bus_is_express(pci_get_bus(pdev))) {
        pdev->cap_present |= QEMU_PCI_CAP_EXPRESS;
    } else {
        pdev->cap_present &= ~QEMU_PCI_CAP_EXPRESS;
    }
    cnuasgpu_parent_realize(dev, errp);
}

static void cnuasgpu_reset(DeviceState *dev)
{
    CnuasGpuState *s = CNUASGPU(dev);

    s->int_status = 0;
    s->int_mask = CNUASGPU_INT_ALL;
    s->tx_off = 0;
    s->tx_len = 0;
    s->tx_result = CNUASGPU_TX_OK;
    s->rx_off = 0;
    s->rx_buf_size = 0;
    s->rx_len = 0;
    memset(s->stats, 0, sizeof(s->stats));
    cnuasgpu_link_reset(s);
    pci_set_irq(PCI_DEVICE(s), 0);
}

/*
 * The incoming state comes from a source we do not control: refuse what
 * the device never makes (the frame in flight is checked before its
 * bytes are read, by cnuasgpu_tx_len_ok()).
 */
static int cnuasgpu_post_load(void *opaque, int version_id)
{
    CnuasGpuState *s = opaque;
    const char *bad = NULL;

    if ((s->int_mask | s->int_status) & ~CNUASGPU_INT_ALL) {
        bad = "interrupt causes";
    } else if (s->tx_result > CNUASGPU_TX_ERR_LINK) {
        bad = "TX_RESULT";
    } else if (s->rx_len > CNUASGPU_LINK_MAX_FRAME) {
        bad = "RX_LEN";
    } else if (version_id >= 2 && !s->epoch) {
        bad = "epoch 0";
    }
    if (bad) {
        error_report("%s: invalid migrated state: %s", TYPE_CNUASGPU, bad);
        return -EINVAL;
    }
    cnuasgpu_link_post_load(s);
    cnuasgpu_update_intx(s);
    return 0;
}

static int cnuasgpu_pre_save(void *opaque)
{
    cnuasgpu_link_pre_save(opaque);
    return 0;
}

static int cnuasgpu_pre_load(void *opaque)
{
    CnuasGpuState *s = opaque;

    /* What a version 1 stream does not carry: no frame in flight. */
    s->tx_busy = false;
    s->tx_pending_len = 0;
    s->link_was_up = false;
    return 0;
}

static bool cnuasgpu_tx_len_ok(void *opaque, int version_id)
{
    CnuasGpuState *s = opaque;

    return s->tx_pending_len <= CNUASGPU_LINK_MAX_FRAME &&
           (!s->tx_busy || s->tx_pending_len);
}

/* Version 2: the link's sequence state and the frame in flight. */
static const VMStateDescription vmstate_cnuasgpu = {
    .name = TYPE_CNUASGPU,
    .version_id = 2,
    .minimum_version_id = 1,
    .pre_save = cnuasgpu_pre_save,
    .pre_load = cnuasgpu_pre_load,
    .post_load = cnuasgpu_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, CnuasGpuState),
        VMSTATE_UINT32(int_status, CnuasGpuState),
        VMSTATE_UINT32(int_mask, CnuasGpuState),
        VMSTATE_UINT64(tx_off, CnuasGpuState),
        VMSTATE_UINT32(tx_len, CnuasGpuState),
        VMSTATE_UINT32(tx_result, CnuasGpuState),
        VMSTATE_UINT64(rx_off, CnuasGpuState),
        VMSTATE_UINT32(rx_buf_size, CnuasGpuState),
        VMSTATE_UINT32(rx_len, CnuasGpuState),
        VMSTATE_UINT32_ARRAY(stats, CnuasGpuState, CNUASGPU_NUM_STATS),
        VMSTATE_UINT64_V(epoch, CnuasGpuState, 2),
        VMSTATE_UINT64_V(tx_seq, CnuasGpuState, 2),
        VMSTATE_UINT64_V(peer_epoch, CnuasGpuState, 2),
        VMSTATE_UINT64_V(rx_next, CnuasGpuState, 2),
        VMSTATE_BOOL_V(link_was_up, CnuasGpuState, 2),
        VMSTATE_BOOL_V(tx_busy, CnuasGpuState, 2),
        VMSTATE_UINT32_V(tx_pending_len, CnuasGpuState, 2),
        VMSTATE_VALIDATE("frame in flight fits", cnuasgpu_tx_len_ok),
        VMSTATE_VBUFFER_UINT32(txbuf, CnuasGpuState, 2, NULL, tx_pending_len),
        VMSTATE_END_OF_LIST()
    }
};

static Property cnuasgpu_properties[] = {
    DEFINE_PROP_SIZE("devmem_size", CnuasGpuState, devmem_size,
                     CNUASGPU_DEVMEM_DEFAULT),
    DEFINE_PROP_UINT32("gpu_id", CnuasGpuState, gpu_id, 0),
    DEFINE_PROP_STRING("cnuaslink_socket", CnuasGpuState, link_path),
    DEFINE_PROP_BOOL("cnuaslink_listen", CnuasGpuState, link_listen, false),
    DEFINE_PROP_UINT32("x-link-hold-ms", CnuasGpuState, hold_ms,
                       CNUASGPU_HOLD_MS),
    DEFINE_PROP_END_OF_LIST(),
};

static void cnuasgpu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);

    pc->realize = cnuasgpu_realize;
    pc->exit = cnuasgpu_exit;
    pc->vendor_id = CNUASGPU_VENDOR_ID;
    pc->device_id = CNUASGPU_DEVICE_ID;
    pc->revision = CNUASGPU_REVISION;
    pc->class_id = PCI_CLASS_PROCESSOR_CO;
    device_class_set_parent_realize(dc, cnuasgpu_dc_realize,
                                    &cnuasgpu_parent_realize);
    dc->desc = "Cnuas GPU-like accelerator with RDMA-exportable memory";
    dc->reset = cnuasgpu_reset;
    dc->vmsd = &vmstate_cnuasgpu;
    device_class_set_props(dc, cnuasgpu_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo cnuasgpu_info = {
    .name = TYPE_CNUASGPU,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(CnuasGpuState),
    .class_init = cnuasgpu_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void cnuasgpu_register_types(void)
{
    type_register_static(&cnuasgpu_info);
}

type_init(cnuasgpu_register_types)
