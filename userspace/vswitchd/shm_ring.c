// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* A port's shared-memory rings, the switch's side (shm_ring.h). */
#include "shm_ring.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest slot we accept: room for a jumbo frame, not much more. */
#define SHM_SLOT_MAX 16384

static bool is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = '\0';
	return !strcmp(link, "anon_inode:[eventfd]");
}

int shm_check_fds(const int fds[CNUAS_SHM_NFDS], uint64_t area_len)
{
	int area = fds[CNUAS_SHM_FD_AREA];
	int seals = fcntl(area, F_GET_SEALS);
	struct stat st;

	/* a memfd QEMU could shrink would SIGBUS us on the next access */
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return CNUAS_SHM_R_FDS;
	if (fstat(area, &st) < 0 || (uint64_t)st.st_size < area_len)
		return CNUAS_SHM_R_FDS;
	/* a FIFO or socket here could block the switch on a kick */
	for (unsigned i = CNUAS_SHM_FD_SWITCH_WAKE; i < CNUAS_SHM_NFDS; i++)
		if (!is_eventfd(fds[i]))
			return CNUAS_SHM_R_FDS;
	return 0;
}

static bool ring_fits(uint64_t off, uint64_t bytes, size_t map_len)
{
	return !(off % CNUAS_SHM_LINE) && off >= sizeof(struct cnuas_shm_area) && off <= map_len &&
	       bytes <= map_len - off;
}

int shm_layout(struct shm_port *s, void *map, size_t map_len)
{
	struct cnuas_shm_area h;
	uint64_t ring;

	if (map_len < sizeof(h))
		return CNUAS_SHM_R_LAYOUT;
	/* one copy; the shared header is never read again */
	memcpy(&h, map, sizeof(h));
	if (h.magic != CNUAS_SHM_MAGIC || h.version != CNUAS_SHM_VERSION)
		return CNUAS_SHM_R_LAYOUT;
	if (h.nslots < CNUAS_SHM_SLOTS_MIN || h.nslots > CNUAS_SHM_SLOTS_MAX ||
	    (h.nslots & (h.nslots - 1)))
		return CNUAS_SHM_R_LAYOUT;
	/* every frame the switch may send must fit a slot */
	if (h.slot_size % CNUAS_SHM_LINE || h.slot_size < CNUAS_SHM_SLOT_HDR + CNUAS_SHM_FRAME_MAX ||
	    h.slot_size > SHM_SLOT_MAX)
		return CNUAS_SHM_R_LAYOUT;
	ring = cnuas_shm_ring_bytes(h.nslots, h.slot_size);
	if (!ring_fits(h.tx_off, ring, map_len) || !ring_fits(h.rx_off, ring, map_len))
		return CNUAS_SHM_R_LAYOUT;
	if (h.tx_off < h.rx_off + ring && h.rx_off < h.tx_off + ring)
		return CNUAS_SHM_R_LAYOUT;	/* overlapping rings */
	memset(s, 0, sizeof(*s));
	s->map = map;
	s->map_len = map_len;
	s->nslots = h.nslots;
	s->slot_size = h.slot_size;
	s->tx.ctl = (struct cnuas_shm_ctl *)((uint8_t *)map + h.tx_off);
	s->tx.slots = (uint8_t *)s->tx.ctl + sizeof(struct cnuas_shm_ctl);
	s->rx.ctl = (struct cnuas_shm_ctl *)((uint8_t *)map + h.rx_off);
	s->rx.slots = (uint8_t *)s->rx.ctl + sizeof(struct cnuas_shm_ctl);
	/* a new connection starts at the indexes the device left there */
	s->tx.idx = s->tx.peer = __atomic_load_n(&s->tx.ctl->cons, __ATOMIC_ACQUIRE);
	s->rx.idx = s->rx.peer = __atomic_load_n(&s->rx.ctl->prod, __ATOMIC_ACQUIRE);
	s->wake_fd = s->rx_kick_fd = s->tx_kick_fd = -1;
	return 0;
}

int shm_attach(struct shm_port *s, int fds[CNUAS_SHM_NFDS], uint32_t area_len)
{
	int r = shm_check_fds(fds, area_len);
	void *map;

	if (!r && area_len < sizeof(struct cnuas_shm_area))
		r = CNUAS_SHM_R_LAYOUT;
	if (r)
		goto fail;
	map = mmap(NULL, area_len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[CNUAS_SHM_FD_AREA], 0);
	if (map == MAP_FAILED) {
		r = CNUAS_SHM_R_MAP;
		goto fail;
	}
	r = shm_layout(s, map, area_len);
	if (r) {
		munmap(map, area_len);
		goto fail;
	}
	close(fds[CNUAS_SHM_FD_AREA]);
	s->own_map = true;
	/* both sides use them non-blocking; a full counter must not block us */
	s->wake_fd = fds[CNUAS_SHM_FD_SWITCH_WAKE];
	s->rx_kick_fd = fds[CNUAS_SHM_FD_RX_WAKE];
	s->tx_kick_fd = fds[CNUAS_SHM_FD_TX_WAKE];
	for (unsigned i = CNUAS_SHM_FD_SWITCH_WAKE; i < CNUAS_SHM_NFDS; i++)
		fcntl(fds[i], F_SETFL, O_NONBLOCK);
	return 0;
fail:
	for (unsigned i = 0; i < CNUAS_SHM_NFDS; i++)
		close(fds[i]);
	return r;
}

void shm_detach(struct shm_port *s)
{
	if (s->own_map && s->map)
		munmap(s->map, s->map_len);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->rx_kick_fd >= 0)
		close(s->rx_kick_fd);
	if (s->tx_kick_fd >= 0)
		close(s->tx_kick_fd);
	memset(s, 0, sizeof(*s));
	s->wake_fd = s->rx_kick_fd = s->tx_kick_fd = -1;
}

static void kick(struct shm_port *s, int fd)
{
	uint64_t one = 1;

	if (fd == s->rx_kick_fd)
		s->kicks_rx++;
	else
		s->kicks_tx++;
	/* EAGAIN: the counter is full, the device will wake anyway */
	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0)
		return;
}

static struct cnuas_shm_slot *slot_at(const struct shm_port *s, const struct shm_ring *r,
				      uint32_t idx)
{
	return (struct cnuas_shm_slot *)(r->slots + (size_t)(idx & (s->nslots - 1)) * s->slot_size);
}

/*
 * How many of n slots r may move now by the peer's index at *peer_idx:
 * filled ones when we consume, free ones when we produce; -1 when that
 * index is impossible (more than nslots apart from ours).
 */
static inline int ring_ready(const struct shm_port *s, struct shm_ring *r,
			     const uint32_t *peer_idx, bool produce, unsigned int n)
{
	uint32_t peer = __atomic_load_n(peer_idx, __ATOMIC_ACQUIRE);
	uint32_t filled = produce ? r->idx - peer : peer - r->idx;
	uint32_t ready;

	if (filled > s->nslots)
		return -1;
	r->peer = peer;
	ready = produce ? s->nslots - filled : filled;
	return (int)(n < ready ? n : ready);
}

/* n slots moved: publish our index at *own_idx, kick the peer if it waits (*peer_flag). */
static inline void ring_publish(struct shm_port *s, struct shm_ring *r, uint32_t *own_idx,
				const uint32_t *peer_flag, int kick_fd, unsigned int n)
{
	r->idx += n;
	__atomic_store_n(own_idx, r->idx, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(peer_flag, __ATOMIC_RELAXED))
		kick(s, kick_fd);
}

int shm_recv(struct shm_port *s, uint8_t *const bufs[], uint32_t lens[], unsigned n)
{
	struct shm_ring *r = &s->tx;
	uint32_t room = s->slot_size - CNUAS_SHM_SLOT_HDR;
	int ready = ring_ready(s, r, &r->ctl->prod, false, n);

	if (ready <= 0)
		return ready;
	n = (unsigned int)ready;
	for (unsigned i = 0; i < n; i++) {
		struct cnuas_shm_slot *sl = slot_at(s, r, r->idx + i);
		uint32_t len = __atomic_load_n(&sl->len, __ATOMIC_RELAXED);

		if (len == 0 || len > room || len > CNUAS_SHM_FRAME_MAX) {
			lens[i] = 0;
			continue;
		}
		/* copied out before anyone parses it: QEMU may still write there */
		memcpy(bufs[i], sl->frame, len);
		lens[i] = len;
	}
	ring_publish(s, r, &r->ctl->cons, &r->ctl->prod_wait, s->tx_kick_fd, n);
	return (int)n;
}

int shm_send(struct shm_port *s, const struct iovec *iov, unsigned n)
{
	struct shm_ring *r = &s->rx;
	int ready = ring_ready(s, r, &r->ctl->cons, true, n);

	if (ready <= 0)
		return ready;
	n = (unsigned int)ready;
	for (unsigned i = 0; i < n; i++) {
		struct cnuas_shm_slot *sl = slot_at(s, r, r->idx + i);
		uint32_t len = (uint32_t)iov[i].iov_len;

		/* our own frames: at most VS_MAX_FRAME, and shm_layout made room */
		memcpy(sl->frame, iov[i].iov_base, len);
		__atomic_store_n(&sl->len, len, __ATOMIC_RELAXED);
		__atomic_store_n(&sl->flags, 0, __ATOMIC_RELAXED);
	}
	ring_publish(s, r, &r->ctl->prod, &r->ctl->cons_sleep, s->rx_kick_fd, n);
	return (int)n;
}

bool shm_arm(struct shm_port *s, bool rx_want, bool tx_want)
{
	bool ready = false;

	if (rx_want)
		__atomic_store_n(&s->tx.ctl->cons_sleep, 1, __ATOMIC_RELAXED);
	if (tx_want)
		__atomic_store_n(&s->rx.ctl->prod_wait, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* an impossible index counts as ready: the next recv/send reports it */
	if (rx_want && __atomic_load_n(&s->tx.ctl->prod, __ATOMIC_ACQUIRE) != s->tx.idx)
		ready = true;
	if (tx_want && s->rx.idx - __atomic_load_n(&s->rx.ctl->cons, __ATOMIC_ACQUIRE) != s->nslots)
		ready = true;
	if (ready) {
		shm_woken(s);
		s->self_wakes++;
	}
	return ready;
}

void shm_woken(struct shm_port *s)
{
	uint64_t v;

	__atomic_store_n(&s->tx.ctl->cons_sleep, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->rx.ctl->prod_wait, 0, __ATOMIC_RELAXED);
	if (s->wake_fd >= 0 && read(s->wake_fd, &v, sizeof(v)) == sizeof(v))
		s->kicks_in += v;
}

void shm_view(const struct shm_port *s, struct shm_view *v)
{
	v->tx_waiting = __atomic_load_n(&s->tx.ctl->prod, __ATOMIC_RELAXED) - s->tx.idx;
	v->rx_waiting = s->rx.idx - __atomic_load_n(&s->rx.ctl->cons, __ATOMIC_RELAXED);
	v->sw_wants_tx = __atomic_load_n(&s->tx.ctl->cons_sleep, __ATOMIC_RELAXED);
	v->sw_wants_room = __atomic_load_n(&s->rx.ctl->prod_wait, __ATOMIC_RELAXED);
	v->dev_wants_rx = __atomic_load_n(&s->rx.ctl->cons_sleep, __ATOMIC_RELAXED);
	v->dev_wants_room = __atomic_load_n(&s->tx.ctl->prod_wait, __ATOMIC_RELAXED);
}
