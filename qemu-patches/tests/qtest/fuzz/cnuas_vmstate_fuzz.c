/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuas-vmstate: fuzz the migration load of a Cnuas device (cnuas-vnic,
 * cnuasgpu). A destination QEMU takes the device's state from the stream
 * of a source it does not control: a mutated state must be refused by
 * the load (an error, after which the destination quits), never crash
 * it, and never leave an index or size that a later register access or
 * DMA uses out of bounds.
 *
 * Each input runs in a forked child as a list of operations: register
 * accesses and guest RAM writes that drive the device into a state (as
 * its driver would), byte patches and a truncation of the device's
 * saved state, and a load of that state back into the device through
 * QEMU's own vmstate_load_state(), stopped around it as on a migration
 * target. After a load that succeeds, the operations that follow and a
 * final read of every register use what was loaded.
 *
 * QEMU_FUZZ_ARGS holds the device (-device cnuas-vnic,id=fuzzdev,...),
 * CNUAS_FUZZ_DEVICE its id (fuzzdev by default), CNUAS_FUZZ_REGIONS the
 * names of its register regions, as in the device's memory_region_init.
 * CNUAS_FUZZ_VERBOSE=1 says whether each load was accepted,
 * CNUAS_FUZZ_DUMP=FILE writes each state loaded there, and with
 * CNUAS_FUZZ_MUST_REFUSE=1 an accepted load aborts (inputs that hold a
 * state the device must refuse).
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "exec/memory.h"
#include "exec/cpu-common.h"
#include "hw/pci/pci.h"
#include "io/channel-buffer.h"
#include "migration/vmstate.h"
#include "migration/qemu-file.h"
#include "sysemu/runstate.h"
#include "tests/qtest/libqtest.h"
#include "fuzz.h"
#include "fork_fuzz.h"

#define CNUAS_FUZZ_MAX_REGIONS  4
/* Registers read back after a load, per region (bounds the run time). */
#define CNUAS_FUZZ_READ_BACK    0x400
#define CNUAS_FUZZ_CHILD_SECS   5
#define CNUAS_FUZZ_SECTION_FOOTER 0x7e  /* QEMU_VM_SECTION_FOOTER, savevm.c */

enum {
    OP_WRITE,           /* u8 region, u16 offset, u32 value */
    OP_READ,            /* u8 region, u16 offset */
    OP_PCI_WRITE,       /* u8 offset, u32 value: config space */
    OP_RAM_WRITE,       /* u32 address, u8 length, bytes */
    OP_PATCH,           /* u16 offset, u8 length, bytes: saved state */
    OP_TRUNCATE,        /* u16 length: saved state */
    OP_LOAD,            /* u8 version: load the saved state */
    OP_CLOCK_STEP,      /* u16 microseconds */
    OP_COUNT
};

static DeviceState *fuzz_dev;
static MemoryRegion *fuzz_regions[CNUAS_FUZZ_MAX_REGIONS];
static unsigned fuzz_nregions;

/* The device's state as its vmstate_save_state() writes it. */
typedef struct {
    uint8_t *data;
    size_t len;
    bool saved;
} FuzzStream;

static const VMStateDescription *fuzz_vmsd(void)
{
    return DEVICE_GET_CLASS(fuzz_dev)->vmsd;
}

static void fuzz_save(FuzzStream *st)
{
    QIOChannelBuffer *bioc = qio_channel_buffer_new(8192);
    QEMUFile *f = qemu_file_new_output(QIO_CHANNEL(bioc));
    int ret;

    ret = vmstate_save_state(f, fuzz_vmsd(), fuzz_dev, NULL);
    qemu_fflush(f);
    if (ret || qemu_file_get_error(f)) {
        fprintf(stderr, "cnuas-vmstate: cannot save the device's state\n");
        abort();
    }
    g_free(st->data);
    st->data = g_memdup2(bioc->data, bioc->usage);
    st->len = bioc->usage;
    st->saved = true;
    qemu_fclose(f);
    object_unref(OBJECT(bioc));
}

/* Load @st as a migration target does; false if it was refused. */
static bool fuzz_load(const FuzzStream *st, uint8_t version)
{
    const VMStateDescription *vmsd = fuzz_vmsd();
    int versions = vmsd->version_id - vmsd->minimum_version_id + 1;
    QIOChannelBuffer *bioc = qio_channel_buffer_new(st->len + 1);
    QEMUFile *f;
    int ret;

    /*
     * What follows a device's section in a migration stream, the section
     * footer: the load looks one byte past the state for a subsection.
     */
    memcpy(bioc->data, st->data, st->len);
    bioc->data[st->len] = CNUAS_FUZZ_SECTION_FOOTER;
    bioc->usage = st->len + 1;
    f = qemu_file_new_input(QIO_CHANNEL(bioc));
    object_unref(OBJECT(bioc));
    /* the VM is stopped while the state comes in, and runs afterwards */
    vm_state_notify(false, RUN_STATE_INMIGRATE);
    ret = vmstate_load_state(f, vmsd, fuzz_dev,
                             vmsd->minimum_version_id + version % versions);
    if (!ret) {
        ret = qemu_file_get_error(f);
    }
    qemu_fclose(f);
    if (getenv("CNUAS_FUZZ_VERBOSE")) {
        fprintf(stderr, "cnuas-vmstate: load of %zu bytes: %s (%d)\n",
                st->len, ret ? "refused" : "accepted", ret);
    }
    if (getenv("CNUAS_FUZZ_DUMP")) {
        g_file_set_contents(getenv("CNUAS_FUZZ_DUMP"), (char *)st->data,
                            st->len, NULL);
    }
    if (ret) {
        return false;
    }
    if (getenv("CNUAS_FUZZ_MUST_REFUSE")) {
        fprintf(stderr, "cnuas-vmstate: accepted a state that must be "
                "refused\n");
        abort();
    }
    vm_state_notify(true, RUN_STATE_RUNNING);
    return true;
}

static void fuzz_mmio(unsigned region, uint16_t off, uint64_t *val,
                      bool write)
{
    MemoryRegion *mr = fuzz_regions[region % fuzz_nregions];
    hwaddr addr = (off & ~3u) % memory_region_size(mr);

    if (write) {
        memory_region_dispatch_write(mr, addr, *val, MO_LEUL,
                                     MEMTXATTRS_UNSPECIFIED);
    } else {
        memory_region_dispatch_read(mr, addr, val, MO_LEUL,
                                    MEMTXATTRS_UNSPECIFIED);
    }
}

/* After a load: every register once, then time for timers and BHs. */
static void fuzz_read_back(QTestState *s)
{
    uint64_t off, size, v;
    unsigned r;

    for (r = 0; r < fuzz_nregions; r++) {
        size = MIN(memory_region_size(fuzz_regions[r]), CNUAS_FUZZ_READ_BACK);
        for (off = 0; off < size; off += 4) {
            fuzz_mmio(r, off, &v, false);
        }
    }
    qtest_clock_step(s, 1000 * SCALE_US);
    flush_events(s);
}

/* Bytes after the opcode that each operation takes (before its data). */
static const uint8_t fuzz_op_len[OP_COUNT] = {
    [OP_WRITE] = 7, [OP_READ] = 3, [OP_PCI_WRITE] = 5, [OP_RAM_WRITE] = 5,
    [OP_PATCH] = 3, [OP_TRUNCATE] = 2, [OP_LOAD] = 1, [OP_CLOCK_STEP] = 2,
};

/*
 * Run the operation at @d (@len bytes, opcode included). Returns the
 * bytes it took, 0 at the end of the input; *@refused after a refused
 * load, which ends the input as it ends a migration.
 */
static size_t fuzz_op(QTestState *s, FuzzStream *st, bool *loaded,
                      bool *refused, const uint8_t *d, size_t len)
{
    unsigned op = d[0] % OP_COUNT;
    size_t n = 0, off, i;
    uint64_t v;

    d++;
    len--;
    if (len < fuzz_op_len[op]) {
        return 0;
    }
    switch (op) {
    case OP_WRITE:
        v = ldl_le_p(d + 3);
        fuzz_mmio(d[0], lduw_le_p(d + 1), &v, true);
        break;
    case OP_READ:
        fuzz_mmio(d[0], lduw_le_p(d + 1), &v, false);
        break;
    case OP_PCI_WRITE:
        /* aligned, inside even a conventional config space */
        PCI_DEVICE(fuzz_dev)->config_write(PCI_DEVICE(fuzz_dev), d[0] & 0xfc,
                                           ldl_le_p(d + 1), 4);
        break;
    case OP_RAM_WRITE:
        n = MIN(d[4], len - fuzz_op_len[op]);
        cpu_physical_memory_write(ldl_le_p(d), d + fuzz_op_len[op], n);
        break;
    case OP_PATCH:
        if (!st->saved) {
            fuzz_save(st);
        }
        n = MIN(d[2], len - fuzz_op_len[op]);
        off = lduw_le_p(d);
        for (i = 0; i < n && st->len; i++) {
            st->data[(off + i) % st->len] = d[fuzz_op_len[op] + i];
        }
        break;
    case OP_TRUNCATE:
        if (!st->saved) {
            fuzz_save(st);
        }
        st->len = MIN(st->len, lduw_le_p(d));
        break;
    case OP_LOAD:
        if (!st->saved) {
            fuzz_save(st);
        }
        if (!fuzz_load(st, d[0])) {
            *refused = true;
            return 0;
        }
        *loaded = true;
        st->saved = false;
        break;
    case OP_CLOCK_STEP:
        qtest_clock_step(s, (int64_t)lduw_le_p(d) * SCALE_US);
        break;
    }
    flush_events(s);
    return 1 + fuzz_op_len[op] + n;
}

static void cnuas_vmstate_fuzz(QTestState *s, const unsigned char *data,
                               size_t size)
{
    FuzzStream st = { 0 };
    bool loaded = false, refused = false;
    size_t n;

    /* libFuzzer runs the empty input first: no state to refuse there */
    if (!size && getenv("CNUAS_FUZZ_MUST_REFUSE")) {
        return;
    }
    if (fork()) {
        flush_events(s);
        wait(NULL);
        return;
    }
    fork_fuzz_child_init();
    alarm(CNUAS_FUZZ_CHILD_SECS);
    while (size) {
        n = fuzz_op(s, &st, &loaded, &refused, data, size);
        if (!n) {
            break;
        }
        data += n;
        size -= n;
    }
    /* every input loads a state at least once */
    if (!refused && !loaded) {
        fuzz_save(&st);
        refused = !fuzz_load(&st, 0xff);
    }
    if (!refused) {
        fuzz_read_back(s);
    }
    g_free(st.data);
    _Exit(0);
}

static void cnuas_vmstate_pre_fuzz(QTestState *s)
{
    const char *id = getenv("CNUAS_FUZZ_DEVICE") ?: "fuzzdev";
    const char *names = getenv("CNUAS_FUZZ_REGIONS");
    g_autofree char *path = g_strdup_printf("/machine/peripheral/%s", id);
    g_auto(GStrv) list = NULL;
    Object *mr;
    unsigned i;

    fuzz_dev = (DeviceState *)object_dynamic_cast(
        object_resolve_path(path, NULL), TYPE_PCI_DEVICE);
    if (!fuzz_dev || !names) {
        fprintf(stderr, "cnuas-vmstate: want a PCI device with id=%s "
                "(CNUAS_FUZZ_DEVICE) and CNUAS_FUZZ_REGIONS\n", id);
        exit(1);
    }
    list = g_strsplit(names, " ", -1);
    for (i = 0; list[i] && fuzz_nregions < CNUAS_FUZZ_MAX_REGIONS; i++) {
        g_autofree char *child = g_strdup_printf("%s[0]", list[i]);

        mr = object_resolve_path_component(OBJECT(fuzz_dev), child);
        if (!mr || !object_dynamic_cast(mr, TYPE_MEMORY_REGION)) {
            fprintf(stderr, "cnuas-vmstate: %s has no region %s\n", id,
                    list[i]);
            exit(1);
        }
        fuzz_regions[fuzz_nregions++] = MEMORY_REGION(mr);
    }
    if (!fuzz_nregions) {
        fprintf(stderr, "cnuas-vmstate: CNUAS_FUZZ_REGIONS is empty\n");
        exit(1);
    }
    counter_shm_init();
}

static GString *cnuas_vmstate_cmdline(FuzzTarget *t)
{
    GString *cmd = g_string_new(TARGET_NAME);

    if (!getenv("QEMU_FUZZ_ARGS")) {
        fprintf(stderr, "cnuas-vmstate: set QEMU_FUZZ_ARGS to the machine "
                "and the device (id=fuzzdev)\n");
        exit(1);
    }
    g_string_append_printf(cmd, " -display none -machine accel=qtest "
                           "-m 64M %s", getenv("QEMU_FUZZ_ARGS"));
    return cmd;
}

static void cnuas_vmstate_register(void)
{
    fuzz_add_target(&(FuzzTarget){
        .name = "cnuas-vmstate",
        .description = "Load mutated migration states into a Cnuas device "
                       "(cnuas-vnic, cnuasgpu), then use them",
        .get_init_cmdline = cnuas_vmstate_cmdline,
        .pre_fuzz = cnuas_vmstate_pre_fuzz,
        .fuzz = cnuas_vmstate_fuzz,
    });
}

fuzz_target_init(cnuas_vmstate_register);
