/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuas-vnic: private state shared by the device core (cnuas_vnic_core.c)
 * and its PCI/QOM glue (cnuas_vnic_pci.c).
 *
 * The guest-visible interface is in hw/net/cnuas_vnic_hw.h and
 * docs/specs/cnuas-vnic.rst.
 */

#ifndef HW_NET_CNUAS_VNIC_H
#define HW_NET_CNUAS_VNIC_H

#include "hw/pci/pci.h"
#include "net/net.h"
#include "qemu/event_notifier.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "sysemu/runstate.h"
#include "hw/net/cnuas_vnic_hw.h"
#include "hw/misc/cnuas_socklink.h"
#include "hw/net/cnuas_shm_ring.h"

#define TYPE_CNUAS_VNIC "cnuas-vnic"
OBJECT_DECLARE_TYPE(CnuasVnicState, CnuasVnicClass, CNUAS_VNIC)

/* Frames moved per send/receive system call and per BH run. */
#define CNUAS_VNIC_IO_BATCH     32
#define CNUAS_VNIC_BUDGET       256
/* Descriptors fetched from guest memory in one DMA read. */
#define CNUAS_VNIC_DESC_CACHE   64
/* Upper bound for INT_DELAY, so a guest cannot park interrupts forever. */
#define CNUAS_VNIC_MAX_INT_DELAY_US 100000
/*
 * The RX thread leaves the socket to a vCPU that read the poll page in
 * the last PARK_US (property x-rx-park-us, at most PARK_MAX_US); not for
 * BACKOFF_US once that made MISSES frames wait within MISS_WINDOW_US.
 */
#define CNUAS_VNIC_POLL_PARK_US    500
#define CNUAS_VNIC_POLL_PARK_MAX_US 100000
#define CNUAS_VNIC_POLL_MISSES     3
#define CNUAS_VNIC_POLL_MISS_WINDOW_US 10000
#define CNUAS_VNIC_POLL_BACKOFF_US 250000

#define CNUAS_VNIC_FEATURES (CNUAS_VNIC_F_TX_SG | CNUAS_VNIC_F_STATUS_BLOCK | \
                             CNUAS_VNIC_F_INT_DELAY | \
                             CNUAS_VNIC_F_INT_AUTOMASK | \
                             CNUAS_VNIC_F_RX_POLL | \
                             CNUAS_VNIC_F_RDMA_ICRC)
/* What a device offers: the IB CRC offload only on an IB link. */
#define CNUAS_VNIC_FEATURES_OF(s) (CNUAS_VNIC_FEATURES | \
                                   ((s)->link_layer == CNUAS_VNIC_LL_IB ? \
                                    CNUAS_VNIC_F_IB_CRC : 0))

typedef struct CnuasVnicQueue {
    uint64_t base;
    uint32_t size;
    uint32_t prod;              /* last doorbell value */
    uint32_t cons;              /* device consumer (free running) */
    uint32_t state;             /* CNUAS_VNIC_QS_* */
} CnuasVnicQueue;

typedef struct CnuasVnicDesc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags;
} CnuasVnicDesc;

/* Descriptors copied out of a ring; valid for one BH/handler run only. */
typedef struct CnuasVnicDescCache {
    uint32_t first;             /* ring index of d[0] */
    uint32_t count;
    CnuasVnicDesc d[CNUAS_VNIC_DESC_CACHE];
} CnuasVnicDescCache;

/* Shared-memory rings with the switch (cnuas_vnic_shm.c), per connection */
enum {
    CNUAS_VNIC_SHM_OFF,         /* the socket only */
    CNUAS_VNIC_SHM_OFFERED,     /* HELLO sent, no answer yet */
    CNUAS_VNIC_SHM_ACCEPTED,    /* RX on the ring, TX until RING_ON is sent */
    CNUAS_VNIC_SHM_ON,          /* both on the rings */
};

typedef struct CnuasVnicShm {
    int state;                  /* CNUAS_VNIC_SHM_* */
    int memfd;
    uint8_t *map;
    size_t len;
    uint32_t nslots, slot_size;
    struct cnuas_shm_ctl *tx, *rx;  /* shared: the switch may write them */
    uint8_t *tx_slots, *rx_slots;
    uint32_t tx_prod, rx_cons;  /* our own indexes, never read back */
    EventNotifier sw_wake;      /* we kick the switch */
    EventNotifier rx_wake;      /* the RX thread sleeps on it */
    EventNotifier tx_wake;      /* TX waits on it for room */
} CnuasVnicShm;

struct CnuasVnicState {
    PCIDevice parent_obj;

    MemoryRegion mmio;
    MemoryRegion msix_bar;
    MemoryRegion poll;          /* BAR2, the RX poll page */

    /* Properties */
    char *socket_path;
    MACAddr mac;
    char *link_layer_str;
    char *speed_str;
    uint8_t width;
    bool shm_ring;              /* x-shm-ring: offer the switch the rings */

    /* Derived at realize */
    uint32_t link_layer;
    uint32_t link_speed_mbps;

    /* Guest-visible registers (migrated) */
    uint32_t drv_features;
    uint32_t ctrl;
    uint32_t error;
    uint32_t int_status;        /* causes raised, cleared by INT_ACK */
    uint32_t int_mask;
    uint32_t int_delay;
    uint32_t msix_pending;      /* causes raised while masked (MSI-X) */
    uint32_t delayed;           /* causes waiting for the INT_DELAY timer */
    /* no RX/TX interrupt before this (QEMU_CLOCK_VIRTUAL ns): INT_DELAY */
    int64_t int_quiet_ns;
    uint64_t sb;
    CnuasVnicQueue txq;
    CnuasVnicQueue rxq;
    uint32_t stats[CNUAS_VNIC_NUM_STATS];

    bool sb_ok;                 /* status block writable (else dead) */
    bool link_published;        /* link state the driver was told about */

    /* Backend (not migrated: each side owns its connection) */
    CnuasSockLink link;         /* connection, reconnect, hang-up */
    CnuasVnicShm shm;           /* and its shared-memory rings, if any */
    bool link_up;
    bool rx_armed;              /* RX thread watches the socket */
    bool tx_armed;              /* write handler installed */
    bool tx_blocked;            /* waiting for the socket to drain */
    bool vm_running;            /* no DMA while the VM is stopped */
    VMChangeStateEntry *vmstate_change;
    /* RX thread: watches rx_fd (atomic, -1: nothing) without the BQL */
    QemuThread rx_thread;
    EventNotifier rx_kick;      /* rx_fd changed, or rx_stop */
    int rx_fd;
    bool rx_stop;
    uint32_t rx_poll_us;        /* clock (us, wraps) of the last poll read */
    int rx_poll_tid;            /* host thread that made it ... */
    int rx_poll_cpu;            /* ... for this vCPU (cpu_index) */
    uint32_t rx_park_us;        /* x-rx-park-us, read by the RX thread */
    bool rx_stopped;            /* under the BQL, signalled by rx_done */
    QemuCond rx_done;
    QEMUBH *tx_bh;
    QEMUTimer *int_timer;       /* interrupt moderation */

    /* Bounce buffers: one frame each, CNUAS_VNIC_IO_BATCH of them */
    uint8_t *bufs;
};

/*
 * RoCEv2 ICRC offload, cnuas_vnic_roce.c. TX: fill in the ICRC (and the
 * IPv6 UDP checksum) of @frame; false if it is not a RoCEv2 frame. RX:
 * CNUAS_VNIC_DESC_F_ICRC_OK or _BAD for a RoCEv2 frame, else 0.
 */
bool cnuas_vnic_roce_tx(uint8_t *frame, uint32_t len);
uint16_t cnuas_vnic_roce_rx(const uint8_t *frame, uint32_t len);

/*
 * InfiniBand CRC offload, cnuas_vnic_ib.c. TX: with @icrc, seal the ICRC of
 * the @len-byte @frame (*@not_ib when it is no IB transport packet), then
 * append the VCRC; returns the new length (@frame has room for 2 bytes
 * more). RX: CNUAS_VNIC_DESC_F_VCRC_BAD, or the VCRC stripped from *@len
 * and CNUAS_VNIC_DESC_F_ICRC_OK or _BAD for an IB transport packet, else 0.
 */
uint32_t cnuas_vnic_ib_tx(uint8_t *frame, uint32_t len, bool icrc,
                          bool *not_ib);
uint16_t cnuas_vnic_ib_rx(const uint8_t *frame, uint32_t *len);

/*
 * Shared-memory rings with the switch, cnuas_vnic_shm.c (docs/shm-ring.md
 * in the Cnuas tree). The switch may write the area at any time: indexes
 * are bounded and lengths read once.
 */
void cnuas_vnic_shm_offer(CnuasVnicState *s);
void cnuas_vnic_shm_close(CnuasVnicState *s);
bool cnuas_vnic_shm_msg(CnuasVnicState *s, const uint8_t *buf, uint32_t len);
void cnuas_vnic_shm_ring_on(CnuasVnicState *s);
int cnuas_vnic_rx_fd(CnuasVnicState *s);
int cnuas_vnic_shm_rx_avail(CnuasVnicState *s, unsigned max);
uint32_t cnuas_vnic_shm_rx_copy(CnuasVnicState *s, unsigned i, uint8_t *buf);
void cnuas_vnic_shm_rx_pop(CnuasVnicState *s, unsigned n);
void cnuas_vnic_shm_rx_arm(CnuasVnicState *s);
void cnuas_vnic_shm_rx_woken(CnuasVnicState *s);
int cnuas_vnic_shm_tx_room(CnuasVnicState *s, unsigned max);
uint8_t *cnuas_vnic_shm_tx_buf(CnuasVnicState *s, unsigned i);
void cnuas_vnic_shm_tx_push(CnuasVnicState *s, const uint32_t *lens,
                            unsigned n);
bool cnuas_vnic_shm_tx_wait(CnuasVnicState *s);
void cnuas_vnic_shm_tx_woken(CnuasVnicState *s);

static inline bool cnuas_vnic_shm_rx_on(CnuasVnicState *s)
{
    return s->shm.state >= CNUAS_VNIC_SHM_ACCEPTED;
}

static inline bool cnuas_vnic_shm_tx_on(CnuasVnicState *s)
{
    return s->shm.state == CNUAS_VNIC_SHM_ON;
}

/* Core, implemented in cnuas_vnic_core.c */
extern const MemoryRegionOps cnuas_vnic_mmio_ops;
extern const MemoryRegionOps cnuas_vnic_poll_ops;
void cnuas_vnic_core_realize(CnuasVnicState *s);
void cnuas_vnic_core_unrealize(CnuasVnicState *s);
void cnuas_vnic_core_reset(CnuasVnicState *s);
void cnuas_vnic_core_post_load(CnuasVnicState *s);
uint32_t cnuas_vnic_link_speed_mbps(unsigned gts_x10, unsigned lanes);

/* Interrupt delivery, implemented by the PCI glue */
void cnuas_vnic_pci_notify(CnuasVnicState *s, unsigned vector);
void cnuas_vnic_pci_set_intx(CnuasVnicState *s, bool level);
bool cnuas_vnic_pci_msix(CnuasVnicState *s);

#endif
