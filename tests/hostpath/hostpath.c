// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-hostpath: frames/s and GB/s of the host path (device model,
 * switch, device model) with no guest, against this host's memcpy in the
 * same run. See hostpath.h; scripts/bench-host runs it (make bench-host).
 *
 * cnuas-hostpath --qemu BIN --switch SOCK --dir DIR [--pairs 1,4]
 *                [--sizes 64,1024,4096,9216] [--seconds S] [--run N]
 *                [--switch-pid PID]   (to count the switch's CPU time)
 *                [--shm-ring]         (devices offer shared-memory rings)
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hostpath.h"

#define MAX_PAIRS	8
#define MAX_LIST	8
#define GOAL_MPPS	2.0	/* 64 B frames per pair */
#define GOAL_MEMCPY	0.5	/* 4 KiB and above, per pair, of one core's memcpy */
#define BATCH		(HP_RING / 4)

struct opts {
	const char *qemu, *sock, *dir;
	unsigned int pairs[MAX_LIST], npairs;
	unsigned int sizes[MAX_LIST], nsizes;
	double seconds;
	unsigned int run;
	int switch_pid;
	bool shm_ring;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

/* One core's memcpy over blocks far larger than the caches, in GB/s. */
static double memcpy_gbs(void)
{
	const size_t n = 64u << 20;
	char *a = malloc(n), *b = malloc(n);
	double t0, t;
	unsigned long k = 0;

	if (!a || !b)
		return 0;
	memset(a, 1, n);
	memset(b, 2, n);
	t0 = now();
	do {
		memcpy(k & 1 ? a : b, k & 1 ? b : a, n);
		k++;
		t = now() - t0;
	} while (t < 1.0);
	free(a);
	free(b);
	return (double)k * n / t / 1e9;
}

static int parse_list(const char *s, unsigned int *out, unsigned int *n)
{
	char *end;

	for (*n = 0; *s && *n < MAX_LIST; (*n)++) {
		out[*n] = (unsigned int)strtoul(s, &end, 10);
		if (end == s || !out[*n])
			return -1;
		s = *end == ',' ? end + 1 : end;
	}
	return *s ? -1 : 0;
}

/* Pump every pair until t_end; false if a QEMU went away. */
static bool pump(struct vnic *v, unsigned int pairs, double t_end, bool tx)
{
	unsigned int i;
	bool work;

	while (now() < t_end) {
		work = false;
		for (i = 0; i < pairs; i++) {
			struct vnic *a = &v[2 * i], *b = &v[2 * i + 1];

			if (tx)
				work |= vnic_tx_fill(a, BATCH);
			work |= vnic_rx_refill(b, BATCH);
			if (qemu_drain(&a->qp) < 0 || qemu_drain(&b->qp) < 0)
				return false;
		}
		if (!work)
			nap(100);
	}
	return true;
}

static uint64_t rx_total(struct vnic *v, unsigned int pairs)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < pairs; i++)
		n += v[2 * i + 1].rx_frames;
	return n;
}

static const char *size_name(unsigned int size, char *buf, size_t len)
{
	if (size % 1024)
		snprintf(buf, len, "%u B", size);
	else
		snprintf(buf, len, "%u KiB", size / 1024);
	return buf;
}

/* Frames sent and delivered since the marks. */
static void totals(struct vnic *v, unsigned int pairs, const uint32_t *tx0,
		   const uint64_t *rx0, uint64_t *sent, uint64_t *got)
{
	unsigned int i;

	*sent = *got = 0;
	for (i = 0; i < pairs; i++) {
		*sent += v[2 * i].tx_prod - tx0[i];
		*got += v[2 * i + 1].rx_frames - rx0[i];
	}
}

/* One row: returns 0, or -1 when the path broke (QEMU gone, frames lost). */
static int row(struct vnic *v, unsigned int pairs, unsigned int size,
	       double secs, double mem, int switch_pid, double *us_out)
{
	struct cpu_cost c0, c1;
	double us[CPU_PARTS], total = 0;
	unsigned int k;
	uint64_t rx0[MAX_PAIRS], sent, got, base, bad = 0;
	uint32_t tx0[MAX_PAIRS];
	double t0, t1, fps, gbs, share = 0;
	const char *verdict = "-";
	unsigned int i;
	char name[16];

	for (i = 0; i < pairs; i++) {
		vnic_set_frames(&v[2 * i], v[2 * i + 1].mac, size);
		v[2 * i + 1].frame_len = size;
		v[2 * i + 1].rx_bad = 0;
		tx0[i] = v[2 * i].tx_prod;
		rx0[i] = v[2 * i + 1].rx_frames;
	}
	if (!pump(v, pairs, now() + 0.3, true))
		return -1;
	base = rx_total(v, pairs);
	cpu_sample(v, pairs, switch_pid, &c0);
	t0 = now();
	if (!pump(v, pairs, t0 + secs, true))
		return -1;
	t1 = now();
	cpu_sample(v, pairs, switch_pid, &c1);
	fps = (rx_total(v, pairs) - base) / (t1 - t0);
	for (k = 0; k < CPU_PARTS; k++) {
		us[k] = fps ? (c1.ns[k] - c0.ns[k]) / 1e3 / (fps * (t1 - t0)) : 0;
		total += k == CPU_HARNESS ? 0 : us[k];
	}
	/* Stop sending; everything sent must arrive (lossless). */
	for (i = 0; i < 500; i++) {
		totals(v, pairs, tx0, rx0, &sent, &got);
		if (got >= sent || !pump(v, pairs, now() + 0.01, false))
			break;
	}
	totals(v, pairs, tx0, rx0, &sent, &got);
	for (i = 0; i < pairs; i++)
		bad += v[2 * i + 1].rx_bad;
	gbs = fps * size / 1e9;
	if (mem)
		share = gbs / pairs / mem;
	if (size == 64)
		verdict = fps / pairs / 1e6 >= GOAL_MPPS ? "ok" : "MISS";
	else if (size >= 4096)
		verdict = share >= GOAL_MEMCPY ? "ok" : "MISS";
	if (got != sent || bad)
		verdict = "FAILED";
	size_name(size, name, sizeof(name));
	printf("%5u %7s %9.3f %9.3f %8.3f %8.3f %9.2f  %-10s %s\n", pairs, name,
	       fps / 1e6, fps / pairs / 1e6, gbs, gbs / pairs, share,
	       size == 64 ? ">=2 Mpps" : size >= 4096 ? ">=0.5 mem" : "-", verdict);
	printf("bench host pairs=%u size=%u fps=%.0f gbs=%.4f per_pair_fps=%.0f "
	       "memcpy_share=%.3f sent=%llu lost=%lld bad=%llu\n",
	       pairs, size, fps, gbs, fps / pairs, share, (unsigned long long)sent,
	       (long long)(sent - got), (unsigned long long)bad);
	printf("%13s CPU us/frame: sender %.3f (main) + %.3f, switch %.3f, receiver %.3f (RX thread) + %.3f;"
	       " path %.3f, harness %.3f\n", "", us[CPU_TX_MAIN], us[CPU_TX_OTHER], us[CPU_SWITCH],
	       us[CPU_RX_THREAD], us[CPU_RX_OTHER], total, us[CPU_HARNESS]);
	printf("bench host cpu pairs=%u size=%u", pairs, size);
	for (k = 0; k < CPU_PARTS; k++)
		printf(" %s_us=%.4f", cpu_part_name[k], us[k]);
	printf(" path_us=%.4f\n", total);
	fflush(stdout);
	memcpy(us_out, us, sizeof(us));
	return got != sent || bad ? -1 : 0;
}

/*
 * The cost model's summary: per thread a line through the smallest and the
 * largest frame of the first pair count, us per frame = fixed + per KiB,
 * and what it allows with a core per thread and on this host's cores.
 */
static void model(const struct opts *o, double (*us)[CPU_PARTS])
{
	static const enum cpu_part part[] = { CPU_TX_MAIN, CPU_SWITCH, CPU_RX_THREAD };
	static const char *const name[] = { "sender main", "switch", "receiver RX" };
	unsigned int lo = 0, hi = 0, s, k;
	double fixed[4] = { 0 }, kib[4] = { 0 }, worst = 0, path = 0;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	for (s = 1; s < o->nsizes; s++) {
		if (o->sizes[s] < o->sizes[lo])
			lo = s;
		if (o->sizes[s] > o->sizes[hi])
			hi = s;
	}
	if (o->sizes[hi] == o->sizes[lo])
		return;
	printf("cost model, %u pair(s), us per frame = fixed + per KiB:", o->pairs[0]);
	for (k = 0; k < 3; k++) {
		double a = us[lo][part[k]], b = us[hi][part[k]];

		kib[k] = (b - a) * 1024 / (o->sizes[hi] - o->sizes[lo]);
		fixed[k] = a - kib[k] * o->sizes[lo] / 1024;
		kib[3] += kib[k];
		fixed[3] += fixed[k];
		printf(" %s %.2f + %.3f;", name[k], fixed[k], kib[k]);
	}
	printf(" path %.2f + %.3f\n", fixed[3], kib[3]);
	for (k = 0; k < 3; k++)
		worst = worst > us[lo][part[k]] ? worst : us[lo][part[k]];
	for (k = 0; k < CPU_PARTS; k++)
		path += k == CPU_HARNESS ? 0 : us[lo][k];
	printf("ceiling at %u B: %.2f Mfps with a core per thread, %.2f Mfps on %ld cores; ",
	       o->sizes[lo], 1 / worst, cores / path, cores);
	worst = path = 0;
	for (k = 0; k < 3; k++)
		worst = worst > us[hi][part[k]] ? worst : us[hi][part[k]];
	for (k = 0; k < CPU_PARTS; k++)
		path += k == CPU_HARNESS ? 0 : us[hi][k];
	printf("at %u B: %.2f GB/s with a core per thread, %.2f GB/s on %ld cores\n",
	       o->sizes[hi], o->sizes[hi] / worst / 1e3, cores * o->sizes[hi] / path / 1e3, cores);
	printf("bench host model fixed_us=%.3f per_kib_us=%.4f\n", fixed[3], kib[3]);
}

static void stop_all(struct vnic *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		qemu_stop(&v[i].qp);
}

/* Start 2 x pairs devices, bring them up, let the switch learn them. */
static int start_all(struct vnic *v, unsigned int pairs, const struct opts *o)
{
	struct qemu_args a = {
		.qemu = o->qemu, .dir = o->dir, .switch_sock = o->sock,
		.ram_size = HP_RAM,
		.shm_ring = o->shm_ring,
	};
	char name[32];
	unsigned int i;

	memset(v, 0, sizeof(*v) * 2 * pairs);
	for (i = 0; i < 2 * pairs; i++) {
		uint8_t mac[6] = { 0x02, 0xc7, 0x00, (uint8_t)o->run,
				   (uint8_t)pairs, (uint8_t)i };

		v[i].qp.fd = -1;
		memcpy(v[i].mac, mac, 6);
		memcpy(a.mac, mac, 6);
		snprintf(name, sizeof(name), "p%u-%u", pairs, i);
		a.name = name;
		if (qemu_start(&v[i].qp, &a) || vnic_up(&v[i])) {
			fprintf(stderr, "hostpath: device %u of %u did not come up\n",
				i, 2 * pairs);
			stop_all(v, i + 1);
			return -1;
		}
		fprintf(stderr, "hostpath: %s qemu pid %d\n", name, (int)v[i].qp.pid);
	}
	for (i = 0; i < 2 * pairs; i++)
		if (vnic_announce(&v[i]))
			return -1;
	/* Take the announcements in, so that no row counts them. */
	for (i = 0; i < 20; i++)
		pump(v, pairs, now() + 0.01, false);
	for (i = 0; i < 2 * pairs; i++)
		v[i].rx_frames = v[i].rx_bad = 0;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: cnuas-hostpath --qemu BIN --switch SOCK --dir DIR "
		"[--pairs 1,4] [--sizes 64,1024,4096,9216] [--seconds S] [--run N] [--switch-pid PID]\n"
		"       [--shm-ring]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "qemu", 1, NULL, 'q' }, { "switch", 1, NULL, 's' },
		{ "dir", 1, NULL, 'd' }, { "pairs", 1, NULL, 'p' },
		{ "sizes", 1, NULL, 'z' }, { "seconds", 1, NULL, 't' },
		{ "run", 1, NULL, 'r' }, { "switch-pid", 1, NULL, 'w' },
		{ "shm-ring", 0, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	parse_list("1,4", o->pairs, &o->npairs);
	parse_list("64,1024,4096,9216", o->sizes, &o->nsizes);
	o->seconds = 3;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'q':
			o->qemu = optarg;
			break;
		case 's':
			o->sock = optarg;
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'p':
			if (parse_list(optarg, o->pairs, &o->npairs))
				usage();
			break;
		case 'z':
			if (parse_list(optarg, o->sizes, &o->nsizes))
				usage();
			break;
		case 't':
			o->seconds = atof(optarg);
			break;
		case 'r':
			o->run = (unsigned int)atoi(optarg);
			break;
		case 'w':
			o->switch_pid = atoi(optarg);
			break;
		case 'R':
			o->shm_ring = true;
			break;
		default:
			usage();
		}
	}
	if (!o->qemu || !o->sock || !o->dir || o->seconds <= 0)
		usage();
	for (c = 0; c < (int)o->npairs; c++)
		if (o->pairs[c] > MAX_PAIRS)
			usage();
	for (c = 0; c < (int)o->nsizes; c++)
		if (o->sizes[c] < 60 || o->sizes[c] > CNUAS_VNIC_MAX_FRAME)
			usage();
}

int main(int argc, char **argv)
{
	static struct vnic v[2 * MAX_PAIRS];
	double us[MAX_LIST][CPU_PARTS] = { { 0 } };
	struct opts o = { 0 };
	unsigned int p, s;
	double mem;
	int rc = 0;

	parse(argc, argv, &o);
	mem = memcpy_gbs();
	printf("host path: cnuas-vnic -> cnuas-vswitchd -> cnuas-vnic, QEMU -accel qtest, no guest, %s\n",
	       o.shm_ring ? "shared-memory rings (x-shm-ring)" : "SEQPACKET sockets");
	printf("host memcpy (one core, 64 MiB blocks): %.2f GB/s; rings of %u, doorbell per %u frames\n",
	       mem, HP_RING, BATCH);
	printf("%5s %7s %9s %9s %8s %8s %9s  %-10s %s\n", "pairs", "frame", "Mfps", "Mfps/pr",
	       "GB/s", "GB/s/pr", "of memcpy", "goal", "");
	printf("bench host memcpy gbs=%.3f\n", mem);
	fflush(stdout);
	for (p = 0; p < o.npairs; p++) {
		if (start_all(v, o.pairs[p], &o)) {
			printf("bench host pairs=%u FAILED to start\n", o.pairs[p]);
			rc = 1;
			continue;
		}
		for (s = 0; s < o.nsizes; s++)
			if (row(v, o.pairs[p], o.sizes[s], o.seconds, mem, o.switch_pid, us[s]))
				rc = 1;
		if (!p && o.switch_pid > 0)
			model(&o, us);
		stop_all(v, 2 * o.pairs[p]);
	}
	return rc;
}
