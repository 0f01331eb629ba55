/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * The switch's side of a port's shared-memory rings (docs/shm-ring.md):
 * checking the descriptors a device hands over, mapping and validating the
 * area, copying frames out of the device's TX ring and into its RX ring,
 * and the sleep/kick protocol. The area is hostile memory: nothing read
 * from it is trusted or read twice.
 */
#ifndef CNUAS_VS_SHM_RING_H
#define CNUAS_VS_SHM_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "cnuas_shm_ring.h"

/* One direction as the switch sees it. */
struct shm_ring {
	struct cnuas_shm_ctl *ctl;	/* shared */
	uint8_t *slots;			/* shared */
	uint32_t idx;	/* our index, private: cons of TX, prod of RX */
	uint32_t peer;	/* the peer's index as last read (bounded) */
};

struct shm_port {
	void *map;		/* the area, MAP_SHARED, never resized */
	size_t map_len;
	bool own_map;		/* munmap at detach (not in the fuzz target) */
	uint32_t nslots, slot_size;	/* from the validated header copy */
	struct shm_ring tx;	/* device -> switch: we consume */
	struct shm_ring rx;	/* switch -> device: we produce */
	int wake_fd;		/* switch-wake eventfd: we sleep on it, -1 none */
	int rx_kick_fd;		/* the device's RX wake: frames in its RX ring, -1 none */
	int tx_kick_fd;		/* the device's TX wake: room in its TX ring, -1 none */
	/* for a person (cnuas-vsctl counters) and the tests */
	uint64_t kicks_rx;	/* kicks to the device's RX wake: frames for it */
	uint64_t kicks_tx;	/* kicks to its TX wake: room for its frames */
	uint64_t kicks_in;	/* kicks read from our wake_fd: the device's and our own */
	uint64_t self_wakes;	/* shm_arm found the work already there (and kicked us) */
};

/*
 * The rings as they are now, for a person: the device's fields are read
 * once each and not trusted (a frame count may be anything).
 */
struct shm_view {
	uint32_t tx_waiting;	/* frames in the device's TX ring we have not taken */
	uint32_t rx_waiting;	/* frames in its RX ring it has not taken */
	bool sw_wants_tx;	/* we asked for a kick when it sends (TX cons_sleep) */
	bool sw_wants_room;	/* ... when it frees RX slots (RX prod_wait) */
	bool dev_wants_rx;	/* it asked for a kick when we send (RX cons_sleep) */
	bool dev_wants_room;	/* ... when we free TX slots (TX prod_wait) */
};

void shm_view(const struct shm_port *s, struct shm_view *v);

/* The descriptors of a HELLO: a sealed memfd, three eventfds. 0 or a refusal. */
int shm_check_fds(const int fds[CNUAS_SHM_NFDS], uint64_t area_len);
/*
 * Validate the area header at map (a copy of it) and set s up for the
 * rings; map stays the caller's. 0 or CNUAS_SHM_R_LAYOUT.
 */
int shm_layout(struct shm_port *s, void *map, size_t map_len);
/* Check the HELLO's descriptors, map the area, lay it out; takes the fds. */
int shm_attach(struct shm_port *s, int fds[CNUAS_SHM_NFDS], uint32_t area_len);
void shm_detach(struct shm_port *s);

/*
 * Copy up to n frames out of the TX ring into bufs[i] (each
 * CNUAS_SHM_FRAME_MAX bytes), their lengths into lens[i]; a slot with a
 * bad length is consumed with lens[i] = 0 (the caller counts it).
 * Returns slots consumed, or -1 when the peer's index is impossible
 * (protocol error: hang the port up).
 */
int shm_recv(struct shm_port *s, uint8_t *const bufs[], uint32_t lens[], unsigned n);
/* Copy up to n frames into the RX ring; returns how many fit, -1 as above. */
int shm_send(struct shm_port *s, const struct iovec *iov, unsigned n);
/*
 * About to sleep: ask the device for a kick when its TX ring has frames
 * (rx_want) or its RX ring has room again (tx_want). Returns true when
 * that is already so (do not sleep), false to wait for wake_fd.
 */
bool shm_arm(struct shm_port *s, bool rx_want, bool tx_want);
/* Woken: clear wake_fd's counter. */
void shm_woken(struct shm_port *s);

#endif
