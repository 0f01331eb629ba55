/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuas-vnic PCI/QOM glue: type registration, properties, BARs, MSI-X,
 * the PCIe endpoint capability, reset and migration. The device logic is
 * in cnuas_vnic_core.c.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/module.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "sysemu/sysemu.h"
#include "cnuas_vnic.h"

struct CnuasVnicClass {
    PCIDeviceClass parent_class;
    DeviceRealize parent_dc_realize;
};

/* x-speed values, GT/s as in QEMU's PCIe ports, plus Gen5. */
static const struct {
    const char *name;
    unsigned gts_x10;
    uint8_t lnk_code;           /* LNKCAP.SLS / LNKSTA.CLS encoding */
} cnuas_vnic_speeds[] = {
    { "2_5", 25, 1 },
    { "5", 50, 2 },
    { "8", 80, 3 },
    { "16", 160, 4 },
    { "32", 320, 5 },
};

void cnuas_vnic_pci_notify(CnuasVnicState *s, unsigned vector)
{
    msix_notify(PCI_DEVICE(s), vector);
}

void cnuas_vnic_pci_set_intx(CnuasVnicState *s, bool level)
{
    pci_set_irq(PCI_DEVICE(s), level);
}

bool cnuas_vnic_pci_msix(CnuasVnicState *s)
{
    return msix_enabled(PCI_DEVICE(s));
}

/* Advertise the configured link in the PCIe capability. */
static void cnuas_vnic_pcie_link(PCIDevice *pdev, uint8_t code, uint8_t width)
{
    uint8_t *exp_cap = pdev->config + pdev->exp.exp_cap;
    uint32_t lnk = code | width << PCI_EXP_LNK_MLW_SHIFT;

    pci_long_test_and_clear_mask(exp_cap + PCI_EXP_LNKCAP,
                                 PCI_EXP_LNKCAP_MLW | PCI_EXP_LNKCAP_SLS);
    pci_long_test_and_set_mask(exp_cap + PCI_EXP_LNKCAP, lnk);
    pci_word_test_and_clear_mask(exp_cap + PCI_EXP_LNKSTA,
                                 PCI_EXP_LNKSTA_CLS | PCI_EXP_LNKSTA_NLW);
    pci_word_test_and_set_mask(exp_cap + PCI_EXP_LNKSTA, lnk);
    /* Supported Link Speeds Vector: every speed up to the maximum. */
    pci_set_long(exp_cap + PCI_EXP_LNKCAP2, ((1u << code) - 1) << 1);
}

static bool cnuas_vnic_parse_props(CnuasVnicState *s, unsigned *speed,
                                   Error **errp)
{
    const char *want = s->speed_str ? s->speed_str : "32";
    unsigned i;

    if (!s->link_layer_str || !strcmp(s->link_layer_str, "eth")) {
        s->link_layer = CNUAS_VNIC_LL_ETH;
    } else if (!strcmp(s->link_layer_str, "ib")) {
        s->link_layer = CNUAS_VNIC_LL_IB;
    } else {
        error_setg(errp, "link_layer must be 'eth' or 'ib', not '%s'",
                   s->link_layer_str);
        return false;
    }
    for (i = 0; i < ARRAY_SIZE(cnuas_vnic_speeds); i++) {
        if (!strcmp(want, cnuas_vnic_speeds[i].name)) {
            break;
        }
    }
    if (i == ARRAY_SIZE(cnuas_vnic_speeds)) {
        error_setg(errp, "x-speed must be 2_5, 5, 8, 16 or 32, not '%s'",
                   want);
        return false;
    }
    *speed = i;
    switch (s->width) {
    case 1: case 2: case 4: case 8: case 12: case 16: case 32:
        break;
    default:
        error_setg(errp, "x-width must be 1, 2, 4, 8, 12, 16 or 32, not %u",
                   s->width);
        return false;
    }
    return cnuas_socklink_check_path(s->socket_path, "socket_path", errp);
}

/*
 * The MAC, and on an IB link the GUIDs the driver makes of it, must be
 * unique on the fabric and the VM's own: the same across guest reboots,
 * QEMU restarts and migration. Without mac=, a VM given -uuid gets one
 * made from its UUID and the device's QOM path, so its NICs differ and a
 * migration destination (same command line) makes the same one. QEMU
 * knows nothing else unique to the VM (its own default is unique within
 * one process only): on a fabric, a device with neither does not start.
 */
static bool cnuas_vnic_default_mac(CnuasVnicState *s, Error **errp)
{
    static const MACAddr unset;
    g_autofree char *path = NULL;
    g_autoptr(GChecksum) sum = NULL;
    uint8_t digest[32];
    gsize len = sizeof(digest);

    if (memcmp(&s->mac, &unset, sizeof(unset))) {
        return true;
    }
    if (!qemu_uuid_set) {
        if (s->socket_path) {
            error_setg(errp, "cnuas-vnic with socket_path needs mac= or "
                       "-uuid: a default MAC would be unique only within "
                       "this QEMU process");
            return false;
        }
        qemu_macaddr_default_if_unset(&s->mac);
        return true;
    }
    path = object_get_canonical_path(OBJECT(s)) ?: g_strdup("");
    sum = g_checksum_new(G_CHECKSUM_SHA256);
    g_checksum_update(sum, qemu_uuid.data, sizeof(qemu_uuid.data));
    g_checksum_update(sum, (const guchar *)path, strlen(path));
    g_checksum_get_digest(sum, digest, &len);
    memcpy(s->mac.a, digest, sizeof(s->mac.a));
    s->mac.a[0] = (s->mac.a[0] & ~1) | 2;   /* unicast, locally administered */
    return true;
}

static void cnuas_vnic_realize(PCIDevice *pdev, Error **errp)
{
    CnuasVnicState *s = CNUAS_VNIC(pdev);
    Error *err = NULL;
    unsigned speed, vec;

    if (!cnuas_vnic_parse_props(s, &speed, errp) ||
        !cnuas_vnic_default_mac(s, errp)) {
        return;
    }
    s->link_speed_mbps =
        cnuas_vnic_link_speed_mbps(cnuas_vnic_speeds[speed].gts_x10, s->width);

    pci_config_set_interrupt_pin(pdev->config, 1);
    memory_region_init_io(&s->mmio, OBJECT(s), &cnuas_vnic_mmio_ops, s,
                          "cnuas-vnic-regs", CNUAS_VNIC_REGS_SIZE);
    pci_register_bar(pdev, CNUAS_VNIC_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->mmio);
    memory_region_init_io(&s->poll, OBJECT(s), &cnuas_vnic_poll_ops, s,
                          "cnuas-vnic-poll", CNUAS_VNIC_POLL_SIZE);
    pci_register_bar(pdev, CNUAS_VNIC_BAR_POLL, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->poll);

    if (pci_is_express(pdev)) {
        if (pcie_endpoint_cap_init(pdev, 0) < 0) {
            error_setg(errp, "cannot add the PCIe capability");
            return;
        }
        cnuas_vnic_pcie_link(pdev, cnuas_vnic_speeds[speed].lnk_code,
                             s->width);
    }

    if (msix_init_exclusive_bar(pdev, CNUAS_VNIC_NUM_VECTORS,
                                CNUAS_VNIC_BAR_MSIX, &err)) {
        /* No MSI on this machine: INTx only. */
        warn_report_err(err);
    } else {
        for (vec = 0; vec < CNUAS_VNIC_NUM_VECTORS; vec++) {
            msix_vector_use(pdev, vec);
        }
    }

    cnuas_vnic_core_realize(s);
}

static void cnuas_vnic_exit(PCIDevice *pdev)
{
    CnuasVnicState *s = CNUAS_VNIC(pdev);

    cnuas_vnic_core_unrealize(s);
    if (msix_present(pdev)) {
        msix_unuse_all_vectors(pdev);
        msix_uninit_exclusive_bar(pdev);
    }
    if (pci_is_express(pdev)) {
        pcie_cap_exit(pdev);
    }
}

/* PCIe endpoint on a PCIe bus (q35 root port), plain PCI on `pc`. */
static void cnuas_vnic_dc_realize(DeviceState *dev, Error **errp)
{
    CnuasVnicClass *k = CNUAS_VNIC_GET_CLASS(dev);
    PCIDevice *pdev = PCI_DEVICE(dev);

    if (pci_bus_is_express(pci_get_bus(pdev))) {
        pdev->cap_present |= QEMU_PCI_CAP_EXPRESS;
    } else {
        pdev->cap_present &= ~QEMU_PCI_CAP_EXPRESS;
    }
    k->parent_dc_realize(dev, errp);
}

static void cnuas_vnic_reset(DeviceState *dev)
{
    cnuas_vnic_core_reset(CNUAS_VNIC(dev));
}

/*
 * A queue as the device leaves it: RUNNING only while enabled, and then
 * with the ring ENABLE accepted and PROD at most a ring ahead; DISABLED
 * only while not enabled (setup registers are free then); DEAD either way.
 */
static bool cnuas_vnic_queue_valid(const CnuasVnicQueue *q, bool enabled)
{
    switch (q->state) {
    case CNUAS_VNIC_QS_DISABLED:
        return !enabled;
    case CNUAS_VNIC_QS_RUNNING:
        return enabled && is_power_of_2(q->size) &&
               q->size >= CNUAS_VNIC_RING_MIN &&
               q->size <= CNUAS_VNIC_RING_MAX && !(q->base & 15) &&
               q->prod - q->cons <= q->size;
    case CNUAS_VNIC_QS_DEAD:
        return true;
    }
    return false;
}

/*
 * The incoming state comes from a source we do not control: refuse what
 * no register sequence can produce, so no later access or DMA runs on an
 * index, size or cause the device never made.
 */
static int cnuas_vnic_post_load(void *opaque, int version_id)
{
    CnuasVnicState *s = opaque;
    bool enabled = s->ctrl & CNUAS_VNIC_CTRL_ENABLE;
    const char *bad = NULL;

    if (s->drv_features & ~CNUAS_VNIC_FEATURES_OF(s)) {
        bad = "driver features not offered";
    } else if (s->ctrl & ~CNUAS_VNIC_CTRL_ENABLE) {
        bad = "CTRL";
    } else if (s->error > CNUAS_VNIC_ERR_BAD_SETUP) {
        bad = "ERROR";
    } else if ((s->int_status | s->int_mask | s->msix_pending) &
               ~CNUAS_VNIC_INT_ALL ||
               s->delayed & ~(CNUAS_VNIC_INT_RX | CNUAS_VNIC_INT_TX)) {
        bad = "interrupt causes";
    } else if (s->int_delay > CNUAS_VNIC_MAX_INT_DELAY_US) {
        bad = "INT_DELAY";
    } else if (enabled && ((s->sb & 63) ||
                           (!s->sb && (s->drv_features &
                                       CNUAS_VNIC_F_STATUS_BLOCK)))) {
        bad = "status block";
    } else if (!cnuas_vnic_queue_valid(&s->txq, enabled)) {
        bad = "TX queue";
    } else if (!cnuas_vnic_queue_valid(&s->rxq, enabled)) {
        bad = "RX queue";
    }
    if (bad) {
        error_report("%s: invalid migrated state: %s", TYPE_CNUAS_VNIC, bad);
        return -EINVAL;
    }
    cnuas_vnic_core_post_load(s);
    return 0;
}

/* What a stream without the link subsection means. */
static int cnuas_vnic_pre_load(void *opaque)
{
    CnuasVnicState *s = opaque;

    s->link_published = false;
    s->sb_ok = true;
    return 0;
}

static bool cnuas_vnic_link_needed(void *opaque)
{
    CnuasVnicState *s = opaque;

    return s->link_published || !s->sb_ok;
}

/* The link state the driver was told, and a status block found dead. */
static const VMStateDescription vmstate_cnuas_vnic_link = {
    .name = TYPE_CNUAS_VNIC "/link",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = cnuas_vnic_link_needed,
    .fields = (VMStateField[]) {
        VMSTATE_BOOL(link_published, CnuasVnicState),
        VMSTATE_BOOL(sb_ok, CnuasVnicState),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_cnuas_vnic_queue = {
    .name = "cnuas-vnic-queue",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(base, CnuasVnicQueue),
        VMSTATE_UINT32(size, CnuasVnicQueue),
        VMSTATE_UINT32(prod, CnuasVnicQueue),
        VMSTATE_UINT32(cons, CnuasVnicQueue),
        VMSTATE_UINT32(state, CnuasVnicQueue),
        VMSTATE_END_OF_LIST()
    }
};

/* Version 2 (device 1.3): BAR2 and two more stats; no stream from 1. */
static const VMStateDescription vmstate_cnuas_vnic = {
    .name = TYPE_CNUAS_VNIC,
    .version_id = 2,
    .minimum_version_id = 2,
    .pre_load = cnuas_vnic_pre_load,
    .post_load = cnuas_vnic_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, CnuasVnicState),
        VMSTATE_MSIX(parent_obj, CnuasVnicState),
        VMSTATE_UINT32(drv_features, CnuasVnicState),
        VMSTATE_UINT32(ctrl, CnuasVnicState),
        VMSTATE_UINT32(error, CnuasVnicState),
        VMSTATE_UINT32(int_status, CnuasVnicState),
        VMSTATE_UINT32(int_mask, CnuasVnicState),
        VMSTATE_UINT32(int_delay, CnuasVnicState),
        VMSTATE_UINT32(msix_pending, CnuasVnicState),
        VMSTATE_UINT32(delayed, CnuasVnicState),
        VMSTATE_UINT64(sb, CnuasVnicState),
        VMSTATE_STRUCT(txq, CnuasVnicState, 1, vmstate_cnuas_vnic_queue,
                       CnuasVnicQueue),
        VMSTATE_STRUCT(rxq, CnuasVnicState, 1, vmstate_cnuas_vnic_queue,
                       CnuasVnicQueue),
        VMSTATE_UINT32_ARRAY(stats, CnuasVnicState, CNUAS_VNIC_NUM_STATS),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * []) {
        &vmstate_cnuas_vnic_link,
        NULL
    }
};

static Property cnuas_vnic_properties[] = {
    DEFINE_PROP_STRING("socket_path", CnuasVnicState, socket_path),
    DEFINE_PROP_MACADDR("mac", CnuasVnicState, mac),
    DEFINE_PROP_STRING("link_layer", CnuasVnicState, link_layer_str),
    DEFINE_PROP_STRING("x-speed", CnuasVnicState, speed_str),
    DEFINE_PROP_UINT8("x-width", CnuasVnicState, width, 16),
    DEFINE_PROP_BOOL("x-shm-ring", CnuasVnicState, shm_ring, false),
    DEFINE_PROP_END_OF_LIST(),
};

static void cnuas_vnic_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);
    CnuasVnicClass *k = CNUAS_VNIC_CLASS(klass);

    pc->realize = cnuas_vnic_realize;
    pc->exit = cnuas_vnic_exit;
    pc->vendor_id = CNUAS_VNIC_VENDOR_ID;
    pc->device_id = CNUAS_VNIC_DEVICE_ID;
    pc->revision = CNUAS_VNIC_REVISION;
    pc->class_id = PCI_CLASS_NETWORK_ETHERNET;
    device_class_set_parent_realize(dc, cnuas_vnic_dc_realize,
                                    &k->parent_dc_realize);
    dc->desc = "Cnuas virtual RDMA-capable NIC";
    dc->reset = cnuas_vnic_reset;
    dc->vmsd = &vmstate_cnuas_vnic;
    device_class_set_props(dc, cnuas_vnic_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

/*
 * x-rx-park-us may change while the VM runs (qom-set), so that handing
 * RX to poll reads can be compared with not doing it in one running lab;
 * 0 never hands it off.
 */
static void cnuas_vnic_instance_init(Object *obj)
{
    CnuasVnicState *s = CNUAS_VNIC(obj);

    s->rx_park_us = CNUAS_VNIC_POLL_PARK_US;
    s->rx_poll_cpu = -1;
    object_property_add_uint32_ptr(obj, "x-rx-park-us", &s->rx_park_us,
                                   OBJ_PROP_FLAG_READWRITE);
}

static const TypeInfo cnuas_vnic_info = {
    .name = TYPE_CNUAS_VNIC,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(CnuasVnicState),
    .instance_init = cnuas_vnic_instance_init,
    .class_size = sizeof(CnuasVnicClass),
    .class_init = cnuas_vnic_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void cnuas_vnic_register_types(void)
{
    type_register_static(&cnuas_vnic_info);
}

type_init(cnuas_vnic_register_types)
