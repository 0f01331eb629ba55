// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-hostpath-migrate: a cnuas-vnic migrates to a new QEMU process on
 * the same switch while frames flow both ways between it and a peer, as
 * `scripts/lab migrate` does with a guest (VM test 82), but with real QEMU
 * processes under -accel qtest and this program as both drivers (see
 * hostpath.h). Then the new device must move frames both ways at the
 * rate the old one did, with none lost.
 *
 * The steps (docs/shm-ring.md, "Migration"):
 *  1. A and M (the migrating device) up; frames both ways: "before".
 *  2. M' starts with -incoming and stays stopped: its device connects,
 *     and on rings is accepted, before the VM runs. A floods broadcasts
 *     (more than a ring's 256 slots), which the switch sends to M' too.
 *  3. Frames both ways again, then M stops (QMP stop) while A keeps
 *     sending to it: M's port fills and, lossless, pauses A.
 *  4. migrate M -> M' (QMP), the switch drops M's port (cnuas-vsctl
 *     handover, as the lab does), M' runs (cont), M is ended.
 *  5. Frames both ways between A and M': "after". M' must have had every
 *     broadcast of step 2, and "after" must lose nothing, move at least
 *     a tenth of the frames/s of "before" each way (a stall is a few
 *     frames a second; the host may be busy with other things), and a
 *     ping-pong, a frame at a time, must not stall.
 *
 * cnuas-hostpath-migrate --qemu BIN --switch SOCK --ctl CTL --vsctl VSCTL
 *     --switch-log LOG --dir DIR [--shm-ring] [--seconds S] [--size N]
 *     [--migrations N]   (steps 2 to 5 N times, M' the next M)
 *     [--rx-window N]    (RX buffers each device keeps posted, 2..4096)
 *     [--rx-poll]        (the devices' RX poll page on; the ping-pong's
 *                         receiver reads it 16 times before each frame
 *                         is sent, then waits in memory, as a guest that
 *                         busy-polled and then spins on an RDMA WRITE)
 *     [--park-us N]      (x-rx-park-us of every device: how long its RX
 *                         thread leaves frames to poll reads)
 *     [--dgram-peer]     (at the end, a ping-pong between M' and a QEMU
 *                         -netdev dgram port's peer, played by this
 *                         program, as a virtio-net (Soft-RoCE) guest's)
 *     [--stopped]   (step 4 without a migration: M' is a new device,
 *                    brought up while stopped, then cont; no M)
 *     [--late-up]   (the same with a running VM whose driver brings the
 *                    device up only after the broadcasts: a device
 *                    plugged in while the VM runs, as VM test 90 does)
 *
 * Prints "migrate ..." lines; exit 0 when every check held.
 */
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostpath.h"

#define BATCH		(HP_RING / 4)
#define NFLOOD		600u	/* broadcasts to the stopped target: > 256 slots */
#define ALT_LEN		77u	/* their length, counted apart from data frames */

struct opts {
	const char *qemu, *sock, *ctl, *vsctl, *log, *dir;
	double seconds;
	uint32_t size;
	bool shm_ring, stopped, late_up, rx_poll, dgram_peer;
	unsigned int migrations, rx_window, park_us;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap(long us)
{
	struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

	nanosleep(&ts, NULL);
}

static int fails;

static void check(bool ok, const char *what)
{
	printf("migrate check %s: %s\n", ok ? "ok" : "FAILED", what);
	fflush(stdout);
	if (!ok)
		fails++;
}

/*
 * Drive a and b until t_end: TX where asked, RX always; b only when
 * drive_b (a stopped VM must not see its RAM change). false: a QEMU went.
 */
static bool pump(struct vnic *a, struct vnic *b, double t_end, bool tx_a, bool tx_b,
		 bool drive_b)
{
	bool work;

	do {
		work = false;
		if (tx_a)
			work |= vnic_tx_fill(a, BATCH);
		work |= vnic_rx_refill(a, BATCH);
		if (qemu_drain(&a->qp) < 0)
			return false;
		if (drive_b) {
			if (tx_b)
				work |= vnic_tx_fill(b, BATCH);
			work |= vnic_rx_refill(b, BATCH);
			if (qemu_drain(&b->qp) < 0)
				return false;
		}
		if (!work)
			nap(100);
	} while (now() < t_end);
	return true;
}

/* Wait until every doorbelled TX frame of v was taken by its device. */
static bool tx_settle(struct vnic *a, struct vnic *b, struct vnic *v, double secs)
{
	double end = now() + secs;

	while (vnic_tx_cons(v) != v->tx_prod && now() < end)
		if (!pump(a, b, now() + 0.005, false, false, true))
			return false;
	return vnic_tx_cons(v) == v->tx_prod;
}

/* Both directions for secs, then everything sent must arrive. */
static bool measure(const char *name, struct vnic *a, struct vnic *b, double secs,
		    double fps[2])
{
	uint32_t tx_a, tx_b;
	uint64_t rx_a, rx_b, sent_ab, sent_ba, got_ab, got_ba, bad_a = a->rx_bad, bad_b = b->rx_bad;
	double t0, t1, end;
	char what[160];

	/* quiet first: nothing of earlier steps in flight */
	if (!tx_settle(a, b, a, 5) || !tx_settle(a, b, b, 5))
		printf("migrate %s: TX did not settle before (a %u/%u, b %u/%u)\n", name,
		       vnic_tx_cons(a), a->tx_prod, vnic_tx_cons(b), b->tx_prod);
	if (!pump(a, b, now() + 0.1, false, false, true))
		return false;
	tx_a = a->tx_prod;
	tx_b = b->tx_prod;
	rx_a = a->rx_frames;
	rx_b = b->rx_frames;
	t0 = now();
	if (!pump(a, b, t0 + secs, true, true, true))
		return false;
	t1 = now();
	got_ab = b->rx_frames - rx_b;
	got_ba = a->rx_frames - rx_a;
	fps[0] = got_ab / (t1 - t0);
	fps[1] = got_ba / (t1 - t0);
	end = now() + 5;
	do {
		sent_ab = a->tx_prod - tx_a;
		sent_ba = b->tx_prod - tx_b;
		got_ab = b->rx_frames - rx_b;
		got_ba = a->rx_frames - rx_a;
		if (got_ab >= sent_ab && got_ba >= sent_ba)
			break;
		if (!pump(a, b, now() + 0.01, false, false, true))
			return false;
	} while (now() < end);
	printf("migrate %s: a->b %.0f fps, b->a %.0f fps; sent %llu/%llu, lost %lld/%lld, "
	       "bad %llu/%llu\n", name, fps[0], fps[1], (unsigned long long)sent_ab,
	       (unsigned long long)sent_ba, (long long)(sent_ab - got_ab),
	       (long long)(sent_ba - got_ba), (unsigned long long)(b->rx_bad - bad_b),
	       (unsigned long long)(a->rx_bad - bad_a));
	snprintf(what, sizeof(what), "%s: every frame arrived, both ways, none bad", name);
	check(got_ab == sent_ab && got_ba == sent_ba && a->rx_bad == bad_a && b->rx_bad == bad_b,
	      what);
	return true;
}

/* Send n frames from v at once (one doorbell), not waiting. */
static int send_n(struct vnic *v, uint32_t n)
{
	v->tx_prod += n;
	return qemu_post(&v->qp, "writel 0x%x 0x%x",
			 HP_BAR0 + CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, v->tx_prod);
}

/*
 * Wait until v has had want data frames, reading only memory (never the
 * poll page); false after limit seconds.
 */
static bool wait_rx(struct vnic *v, struct vnic *other, uint64_t want, double limit)
{
	double end = now() + limit;

	for (;;) {
		vnic_rx_refill(v, BATCH);
		if (qemu_drain(&v->qp) < 0 || qemu_drain(&other->qp) < 0)
			return false;
		if (v->rx_frames >= want)
			return true;
		if (now() >= end)
			return false;
		/* sleep a little: the devices must go idle between frames */
		nap(20);
	}
}

/*
 * One frame from x to y: with poll pages, y reads its page a few times
 * first (it busy-polled), then waits in memory. The frame's wait (from
 * its doorbell to its arrival) is added to *wait; false: it did not come.
 */
static bool one_way(struct vnic *x, struct vnic *y, double *wait, double *worst)
{
	uint64_t want = y->rx_frames + 1;
	double t;
	bool ok;
	int i;

	for (i = 0; y->rx_poll && i < 16; i++)
		vnic_poll(y);
	t = now();
	ok = !send_n(x, 1) && wait_rx(y, x, want, 2);
	t = now() - t;
	*wait += t;
	*worst = t > *worst ? t : *worst;
	if (!ok)
		y->rx_frames = want;	/* count it as come, go on */
	return ok;
}

/*
 * Ping-pong, a frame at a time each way: every frame finds its peer
 * asleep, so each one needs a kick. A frame that waits a second is a
 * stall (a lost kick that only a later frame would repair); one not
 * there after 2 s is counted as come, so that one lost kick does not
 * hide the next.
 */
static bool pingpong(const char *name, struct vnic *a, struct vnic *b, unsigned int trips)
{
	unsigned int i, lost = 0;
	double t0 = now(), wait = 0, worst = 0;
	char what[160];

	for (i = 0; i < trips && lost < 3; i++) {
		lost += !one_way(a, b, &wait, &worst);
		lost += !one_way(b, a, &wait, &worst);
	}
	printf("migrate %s pingpong: %u trips in %.2f s, a frame waits %.0f us on average, "
	       "%.1f ms at worst%s; %u frames not there after 2 s\n", name, i, now() - t0,
	       wait / (2 * i) * 1e6, worst * 1e3, a->rx_poll ? " (after poll reads)" : "", lost);
	snprintf(what, sizeof(what), "%s: ping-pong without a stall", name);
	check(worst < 1.0 && !lost, what);
	return true;
}

/* Ports of the switch that took rings, by its log. */
static int ring_ports(const char *log)
{
	char line[512];
	FILE *f = fopen(log, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "shared-memory rings, ") != NULL;
	fclose(f);
	return n;
}

/* Run a command, its output into out; its exit status. */
static int run(char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int run(char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	size_t n = 0;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (out && n + 1 < outlen) {
		size_t r = fread(out + n, 1, outlen - 1 - n, p);

		if (!r)
			break;
		n += r;
	}
	if (out)
		out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The switch port of QEMU process pid ("peer": "pid N ..."), or 0. */
static unsigned int port_of(const struct opts *o, pid_t pid)
{
	static char out[65536];
	char needle[48], *at, *id;

	if (run(out, sizeof(out), "%s --ctl %s --json show", o->vsctl, o->ctl))
		return 0;
	snprintf(needle, sizeof(needle), "\"peer\": \"pid %d", (int)pid);
	for (at = strstr(out, needle); at; at = strstr(at + 1, needle)) {
		char c = at[strlen(needle)];

		if (c != ' ' && c != '"')
			continue;
		*at = '\0';
		id = strrchr(out, '{');
		if (id && (id = strstr(id, "\"id\": ")))
			return (unsigned int)strtoul(id + 6, NULL, 10);
		return 0;
	}
	return 0;
}

/* query-migrate until "completed"; false on "failed" or after 60 s. */
static bool migrated(struct qemu_proc *src)
{
	char line[4096];
	double end = now() + 60;

	while (now() < end) {
		if (qemu_qmp(src, line, sizeof(line), "{\"execute\": \"query-migrate\"}"))
			return false;
		if (strstr(line, "\"status\": \"completed\""))
			return true;
		if (strstr(line, "\"status\": \"failed\"")) {
			printf("migrate: %s\n", line);
			return false;
		}
		nap(20000);
	}
	return false;
}

static void device_stats(const char *name, struct vnic *v)
{
	printf("migrate %s device: tx %u rx %u rx_stalls %u tx_stalls %u tx_link_down %u "
	       "guest_errors %u\n", name,
	       vnic_stat(v, CNUAS_VNIC_STAT_TX_FRAMES), vnic_stat(v, CNUAS_VNIC_STAT_RX_FRAMES),
	       vnic_stat(v, CNUAS_VNIC_STAT_RX_STALLS), vnic_stat(v, CNUAS_VNIC_STAT_TX_STALLS),
	       vnic_stat(v, CNUAS_VNIC_STAT_TX_LINK_DOWN),
	       vnic_stat(v, CNUAS_VNIC_STAT_GUEST_ERRORS));
}

static int start(struct vnic *v, const struct opts *o, const char *name, uint8_t last,
		 const char *incoming, bool stopped)
{
	struct qemu_args a = {
		.qemu = o->qemu, .dir = o->dir, .switch_sock = o->sock, .name = name,
		.ram_size = HP_RAM, .shm_ring = o->shm_ring, .qmp = true,
		.stopped = stopped, .incoming = incoming,
		.mac = { 0x02, 0xc7, 0x00, 0xe0, 0x00, last },
	};
	char line[512];

	memset(v, 0, sizeof(*v));
	memcpy(v->mac, a.mac, 6);
	v->rx_window = o->rx_window;
	v->rx_poll = o->rx_poll;
	if (qemu_start(&v->qp, &a)) {
		fprintf(stderr, "migrate: QEMU %s did not start\n", name);
		return -1;
	}
	fprintf(stderr, "migrate: %s qemu pid %d\n", name, (int)v->qp.pid);
	if (o->park_us && qemu_qmp(&v->qp, line, sizeof(line), "{\"execute\": \"qom-set\", "
				   "\"arguments\": {\"path\": \"/machine/peripheral/nic0\", "
				   "\"property\": \"x-rx-park-us\", \"value\": %u}}", o->park_us))
		return -1;
	return 0;
}

static bool wait_ring_ports(const struct opts *o, int want)
{
	double end = now() + 10;

	while (ring_ports(o->log) < want && now() < end)
		nap(10000);
	return ring_ports(o->log) >= want;
}

static void usage(void)
{
	fprintf(stderr, "usage: cnuas-hostpath-migrate --qemu BIN --switch SOCK --ctl CTL "
		"--vsctl VSCTL --switch-log LOG --dir DIR [--shm-ring] [--seconds S] [--size N] "
		"[--migrations N] [--rx-window N] [--rx-poll] [--park-us N] [--dgram-peer]\n"
		"       [--stopped | --late-up]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "qemu", 1, NULL, 'q' }, { "switch", 1, NULL, 's' },
		{ "ctl", 1, NULL, 'c' }, { "vsctl", 1, NULL, 'v' },
		{ "switch-log", 1, NULL, 'l' }, { "dir", 1, NULL, 'd' },
		{ "seconds", 1, NULL, 't' }, { "size", 1, NULL, 'z' },
		{ "shm-ring", 0, NULL, 'R' }, { "stopped", 0, NULL, 'S' },
		{ "late-up", 0, NULL, 'L' }, { "rx-poll", 0, NULL, 'P' },
		{ "park-us", 1, NULL, 'k' }, { "dgram-peer", 0, NULL, 'D' },
		{ "migrations", 1, NULL, 'n' }, { "rx-window", 1, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->seconds = 1;
	o->size = 1024;
	o->migrations = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'q': o->qemu = optarg; break;
		case 's': o->sock = optarg; break;
		case 'c': o->ctl = optarg; break;
		case 'v': o->vsctl = optarg; break;
		case 'l': o->log = optarg; break;
		case 'd': o->dir = optarg; break;
		case 't': o->seconds = atof(optarg); break;
		case 'z': o->size = (uint32_t)atoi(optarg); break;
		case 'R': o->shm_ring = true; break;
		case 'S': o->stopped = true; break;
		case 'L': o->late_up = o->stopped = true; break;
		case 'P': o->rx_poll = true; break;
		case 'k': o->park_us = (unsigned int)atoi(optarg); break;
		case 'D': o->dgram_peer = true; break;
		case 'n': o->migrations = (unsigned int)atoi(optarg); break;
		case 'w': o->rx_window = (unsigned int)atoi(optarg); break;
		default: usage();
		}
	}
	if (!o->qemu || !o->sock || !o->ctl || !o->vsctl || !o->log || !o->dir ||
	    o->seconds <= 0 || o->size < 60 || o->size > CNUAS_VNIC_MAX_FRAME ||
	    o->size == ALT_LEN || o->rx_window > HP_RING || o->rx_window == 1 || !o->migrations || o->migrations > 100 ||
	    (o->stopped && o->migrations > 1))
		usage();
}

/* A -netdev dgram port's peer: a socket of ours the switch sends to. */
struct dgram_peer {
	int fd;
	struct sockaddr_un sw;	/* the switch's end */
	uint8_t mac[6];
};

static int dgram_up(struct dgram_peer *d, const struct opts *o)
{
	struct sockaddr_un me = { .sun_family = AF_UNIX };
	uint8_t f[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	d->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	d->sw.sun_family = AF_UNIX;
	snprintf(me.sun_path, sizeof(me.sun_path), "%s/dgram-peer.sock", o->dir);
	snprintf(d->sw.sun_path, sizeof(d->sw.sun_path), "%s/dgram-switch.sock", o->dir);
	memcpy(d->mac, (uint8_t[6]){ 0x02, 0xc7, 0x00, 0xe0, 0x00, 9 }, 6);
	if (d->fd < 0 || bind(d->fd, (struct sockaddr *)&me, sizeof(me)) ||
	    run(NULL, 0, "%s --ctl %s add-dgram %s %s >/dev/null", o->vsctl, o->ctl,
		d->sw.sun_path, me.sun_path))
		return -1;
	/* a broadcast: the switch learns the MAC and that the peer is there */
	memcpy(f + 6, d->mac, 6);
	f[12] = 0x88;
	f[13] = 0xb5;
	return sendto(d->fd, f, sizeof(f), 0, (struct sockaddr *)&d->sw, sizeof(d->sw)) ==
	       (ssize_t)sizeof(f) ? 0 : -1;
}

/* A frame of len bytes from d's MAC to v's; 0 or -1. */
static int dgram_send(struct dgram_peer *d, const struct vnic *v, uint32_t len)
{
	static uint8_t f[CNUAS_VNIC_MAX_FRAME];

	memcpy(f, v->mac, 6);
	memcpy(f + 6, d->mac, 6);
	f[12] = 0x88;
	f[13] = 0xb5;
	return sendto(d->fd, f, len, 0, (struct sockaddr *)&d->sw, sizeof(d->sw)) ==
	       (ssize_t)len ? 0 : -1;
}

/* Wait for a frame of len bytes to d's MAC (others are skipped); false after limit s. */
static bool dgram_wait(struct dgram_peer *d, uint32_t len, double limit)
{
	static uint8_t f[CNUAS_VNIC_MAX_FRAME];
	double end = now() + limit;
	struct pollfd p = { .fd = d->fd, .events = POLLIN };
	ssize_t n;

	while (now() < end) {
		if (poll(&p, 1, 10) != 1)
			continue;
		n = recv(d->fd, f, sizeof(f), MSG_DONTWAIT);
		if (n == (ssize_t)len && !memcmp(f, d->mac, 6))
			return true;
	}
	return false;
}

/*
 * Ping-pong between the dgram peer and m, a frame at a time: m's TX
 * frames go to the peer meanwhile. As pingpong(): a frame that waits a
 * second is a stall.
 */
static bool dgram_pingpong(const struct opts *o, struct dgram_peer *d, struct vnic *a,
			   struct vnic *m, unsigned int trips)
{
	unsigned int i, lost = 0;
	double t, wait = 0, worst = 0, t0 = now();

	if (!tx_settle(a, m, m, 5))
		return false;
	vnic_set_frames(m, d->mac, o->size);
	for (i = 0; i < trips && lost < 3; i++) {
		uint64_t want = m->rx_frames + 1;
		bool ok;

		t = now();
		ok = !dgram_send(d, m, o->size) && wait_rx(m, a, want, 2);
		if (!ok)
			m->rx_frames = want;
		lost += !ok;
		t = now() - t;
		wait += t;
		worst = t > worst ? t : worst;
		t = now();
		ok = !send_n(m, 1) && dgram_wait(d, o->size, 2);
		lost += !ok;
		t = now() - t;
		wait += t;
		worst = t > worst ? t : worst;
	}
	printf("migrate dgram pingpong: %u trips in %.2f s, a frame waits %.0f us on average, "
	       "%.1f ms at worst; %u frames not there after 2 s\n", i, now() - t0,
	       wait / (2 * i) * 1e6, worst * 1e3, lost);
	check(worst < 1.0 && !lost, "ping-pong with a -netdev dgram peer without a stall");
	if (!tx_settle(a, m, m, 5))
		return false;
	vnic_set_frames(m, a->mac, o->size);
	return true;
}

/* Steps 2 and 3 to 4 of the stopped or late variant: M' replaces M, no migration. */
static int new_device(const struct opts *o, struct vnic *a, struct vnic *m, struct vnic *t)
{
	char line[512];

	/* the new device is the one to talk to: M goes */
	qemu_stop(&m->qp);
	m->qp = t->qp;
	m->rx_prod = t->rx_prod;
	m->rx_seen = t->rx_seen;
	m->tx_prod = t->tx_prod;
	m->rx_frames = m->rx_bad = m->rx_alt = 0;
	if (o->late_up && vnic_up(m)) {
		printf("migrate: M' did not come up\n");
		return -1;
	}
	vnic_set_frames(m, a->mac, o->size);
	if (vnic_announce(a))	/* A's MAC: a broadcast M' gets too */
		printf("migrate: A's announce did not go out\n");
	if (!o->late_up && qemu_qmp(&m->qp, line, sizeof(line), "{\"execute\": \"cont\"}"))
		return -1;
	if (vnic_announce(m))
		printf("migrate: M's announce did not go out\n");
	return 0;
}

/* Steps 3 and 4: M stops while A sends, migrates to t, t runs as M. */
static int migrate(const struct opts *o, struct vnic *a, struct vnic *m, struct vnic *t,
		   const char *uri)
{
	char line[4096];
	unsigned int port;
	bool killed = false;
	double t0;

	if (!pump(a, m, now() + 0.2, true, true, true))
		return -1;
	if (qemu_qmp(&m->qp, line, sizeof(line), "{\"execute\": \"stop\"}"))
		return -1;
	while (m->qp.pending)
		if (qemu_drain(&m->qp) < 0)
			return -1;
	if (!pump(a, m, now() + 0.3, true, false, false))
		return -1;
	device_stats("A (M stopped)", a);
	if (qemu_qmp(&m->qp, line, sizeof(line),
		     "{\"execute\": \"migrate\", \"arguments\": {\"uri\": \"%s\"}}", uri)) {
		printf("migrate: QMP migrate failed\n");
		return -1;
	}
	check(migrated(&m->qp), "the migration completed");
	port = port_of(o, m->qp.pid);
	check(port && !run(NULL, 0, "%s --ctl %s handover %u 10000 pid=%d >/dev/null",
			   o->vsctl, o->ctl, port, (int)t->qp.pid),
	      "the switch handed M's port over");
	/*
	 * As labctl.py migrate: wait for M's port to go (a stopped M may
	 * connect again meanwhile), ending M after 2 s; then cont.
	 */
	t0 = now();
	while (port_of(o, m->qp.pid) && now() < t0 + 10) {
		if (!killed && now() > t0 + 2) {
			kill(m->qp.pid, SIGKILL);
			printf("migrate: M's port still there after 2 s: M killed\n");
			killed = true;
		}
		if (!pump(a, m, now() + 0.01, true, false, false))
			return -1;
	}
	printf("migrate: M's port gone %.0f ms after the handover\n", (now() - t0) * 1e3);
	if (qemu_qmp(&t->qp, line, sizeof(line), "{\"execute\": \"cont\"}"))
		return -1;
	qemu_stop(&m->qp);
	/* the harness drives M' where it left M: the RAM came along */
	m->qp = t->qp;
	m->rx_alt = 0;
	return 0;
}

/* Steps 2 to 5, round k. */
static int one_round(const struct opts *o, struct vnic *a, struct vnic *m, unsigned int k,
		     const double before[2])
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static struct vnic t;
	char uri[300], name[16], what[64];
	double after[2], t0;

	printf("migrate: round %u of %u\n", k + 1, o->migrations);
	/* 2. M' (t) connects, stopped (or its driver not up yet); A floods */
	snprintf(uri, sizeof(uri), "unix:%s/migrate-%u.sock", o->dir, k);
	snprintf(name, sizeof(name), "m%u", k + 2);
	if (start(&t, o, name, 2, o->stopped ? NULL : uri, o->stopped && !o->late_up))
		return -1;
	t.alt_len = ALT_LEN;
	if (o->stopped && !o->late_up && vnic_up(&t))
		printf("migrate: stopped M' did not report its link up (continuing)\n");
	if (o->shm_ring)
		check(wait_ring_ports(o, 3 + (int)k), "M' had its rings before it moved a frame");
	if (!tx_settle(a, m, a, 5))
		return -1;
	vnic_set_frames(a, bcast, ALT_LEN);
	a->frame_len = o->size;
	a->tx_prod += NFLOOD;
	if (qemu_cmd(&a->qp, NULL, "writel 0x%x 0x%x",
		     HP_BAR0 + CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, a->tx_prod))
		return -1;
	t0 = now();
	while (m->rx_alt < NFLOOD && now() < t0 + 5)
		if (!pump(a, m, now() + 0.01, false, false, true))
			return -1;
	printf("migrate: %u broadcasts sent while M' waits; M had %llu\n", NFLOOD,
	       (unsigned long long)m->rx_alt);
	if (!tx_settle(a, m, a, 5))
		return -1;
	vnic_set_frames(a, m->mac, o->size);
	/* 3. and 4. */
	if (o->stopped ? new_device(o, a, m, &t) : migrate(o, a, m, &t, uri))
		return -1;
	memset(&t.qp, 0, sizeof(t.qp));
	t.qp.fd = t.qp.qmp = -1;
	/* 5. A and M' both ways */
	if (!pump(a, m, now() + 0.3, true, true, true))
		return -1;
	printf("migrate: M' had %llu of the %u broadcasts sent while it waited\n",
	       (unsigned long long)m->rx_alt, NFLOOD);
	check(m->rx_alt == NFLOOD, "M' got every broadcast sent to it while it waited");
	snprintf(what, sizeof(what), "after %u", k + 1);
	if (!measure(what, a, m, o->seconds, after) || !pingpong(what, a, m, 500))
		return -1;
	check(after[0] >= before[0] / 10 && after[1] >= before[1] / 10,
	      "after: at least a tenth of the frames/s of before, each way");
	printf("migrate result round=%u fps_before=%.0f/%.0f fps_after=%.0f/%.0f\n", k + 1,
	       before[0], before[1], after[0], after[1]);
	return 0;
}

int main(int argc, char **argv)
{
	static struct vnic a, m;
	struct dgram_peer dp = { .fd = -1 };
	struct opts o = { 0 };
	double before[2];
	unsigned int k;
	int rc = 0;

	parse(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("migrate: %s, %u B frames, %s\n", o.late_up ? "a new device up late" :
	       o.stopped ? "a stopped new device" : "live migration", o.size,
	       o.shm_ring ? "shared-memory rings" : "sockets");
	/* 1. A and M, both ways */
	if (start(&a, &o, "a", 1, NULL, false) || vnic_up(&a) ||
	    start(&m, &o, "m", 2, NULL, false) || vnic_up(&m) ||
	    vnic_announce(&a) || vnic_announce(&m)) {
		printf("migrate: devices did not come up\n");
		return 1;
	}
	if (o.shm_ring)
		check(wait_ring_ports(&o, 2), "A and M on rings");
	vnic_set_frames(&a, m.mac, o.size);
	vnic_set_frames(&m, a.mac, o.size);
	a.alt_len = m.alt_len = ALT_LEN;
	/* warm up (first touch of the buffers); the announcements are no data */
	if (!pump(&a, &m, now() + 0.5, true, true, true))
		return 1;
	a.rx_bad = m.rx_bad = 0;
	if (!measure("before", &a, &m, o.seconds, before) || !pingpong("before", &a, &m, 500))
		return 1;
	if (o.dgram_peer && dgram_up(&dp, &o)) {
		printf("migrate: the dgram peer did not come up\n");
		return 1;
	}
	for (k = 0; k < o.migrations && !rc; k++)
		rc = one_round(&o, &a, &m, k, before);
	if (!rc && o.dgram_peer && !dgram_pingpong(&o, &dp, &a, &m, 500))
		rc = -1;
	device_stats("A", &a);
	device_stats("M'", &m);
	printf("migrate: %s, %d checks failed\n", rc ? "broke off" : "done", fails);
	run(NULL, 0, "%s --ctl %s show >&2; %s --ctl %s counters >&2", o.vsctl, o.ctl, o.vsctl,
	    o.ctl);
	qemu_stop(&a.qp);
	qemu_stop(&m.qp);
	return rc || fails ? 1 : 0;
}
