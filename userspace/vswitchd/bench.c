// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Benchmark: frames/s from one port to another through cnuas-vswitchd,
 * against a bare recvmmsg/sendmmsg relay over the same kind of sockets
 * (unix SOCK_SEQPACKET, one frame per message). Both run back to back
 * with the same sender and receiver, a few rounds; medians are reported.
 * Output: bench switch_vs_relay size=N switch_fps=F relay_fps=F ratio=R
 *
 * With --ports 2,4,8: how the switch's cost grows with the guests on it.
 * For each count P, P ports on one switch make P/2 sender -> receiver
 * pairs (each port its own MAC, all learned), every pair sending at once;
 * the medians of the total frames/s and of the per-pair share:
 *   bench switch_ports ports=P size=N total_fps=F per_pair_fps=F
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define MAXF 9216

static const unsigned char MAC_A[6] = { 2, 0, 0, 0, 0xbe, 1 };
static const unsigned char MAC_B[6] = { 2, 0, 0, 0, 0xbe, 2 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void set_path(struct sockaddr_un *a, const char *path)
{
	if (strlen(path) >= sizeof(a->sun_path)) {
		fprintf(stderr, "bench: socket path too long: %s\n", path);
		exit(1);
	}
	memcpy(a->sun_path, path, strlen(path) + 1);
}

static int connect_seqpacket(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	set_path(&a, path);
	for (int i = 0; i < 500; i++) {
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
		usleep(10000);
	}
	die("connect");
	return -1;
}

/* ---- the bare relay: what the switch is compared with ---- */

static void relay(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	static char buf[BATCH][MAXF];
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	int l = socket(AF_UNIX, SOCK_SEQPACKET, 0), in, out;

	set_path(&a, path);
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0)
		die("relay listen");
	in = accept(l, NULL, NULL);
	out = accept(l, NULL, NULL);
	for (;;) {
		for (int i = 0; i < BATCH; i++) {
			iov[i].iov_base = buf[i];
			iov[i].iov_len = MAXF;
			memset(&msg[i].msg_hdr, 0, sizeof(msg[i].msg_hdr));
			msg[i].msg_hdr.msg_iov = &iov[i];
			msg[i].msg_hdr.msg_iovlen = 1;
		}
		int n = recvmmsg(in, msg, BATCH, MSG_WAITFORONE, NULL);

		if (n <= 0 || msg[0].msg_len == 0)
			break;
		for (int i = 0; i < n; i++)
			iov[i].iov_len = msg[i].msg_len;
		for (int done = 0; done < n;) {
			int r = sendmmsg(out, msg + done, (unsigned)(n - done), 0);

			if (r <= 0)
				_exit(0);
			done += r;
		}
	}
	_exit(0);
}

/* ---- load: one sender, one receiver ---- */

struct run {
	int tx, rx;
	unsigned size;
	const unsigned char *dst, *src;
	atomic_int stop_tx, stop_rx;
	atomic_ullong received;
};

static void *sender(void *arg)
{
	struct run *r = arg;
	char *buf = calloc(1, MAXF);
	struct mmsghdr msg[BATCH];
	struct iovec iov = { .iov_base = buf, .iov_len = r->size };

	if (!buf)
		return NULL;
	memcpy(buf, r->dst ? r->dst : MAC_B, 6);
	memcpy(buf + 6, r->src ? r->src : MAC_A, 6);
	buf[12] = (char)0x88;
	buf[13] = (char)0xb5;
	for (int i = 0; i < BATCH; i++) {
		memset(&msg[i].msg_hdr, 0, sizeof(msg[i].msg_hdr));
		msg[i].msg_hdr.msg_iov = &iov;
		msg[i].msg_hdr.msg_iovlen = 1;
	}
	while (!atomic_load(&r->stop_tx))
		if (sendmmsg(r->tx, msg, BATCH, 0) < 0)
			break;
	free(buf);
	return NULL;
}

static void *receiver(void *arg)
{
	struct run *r = arg;
	char (*buf)[MAXF] = malloc((size_t)BATCH * MAXF);
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	struct timeval tv = { .tv_usec = 200000 };

	if (!buf)
		return NULL;
	setsockopt(r->rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = buf[i];
		iov[i].iov_len = MAXF;
		memset(&msg[i].msg_hdr, 0, sizeof(msg[i].msg_hdr));
		msg[i].msg_hdr.msg_iov = &iov[i];
		msg[i].msg_hdr.msg_iovlen = 1;
	}
	while (!atomic_load(&r->stop_rx)) {
		int n = recvmmsg(r->rx, msg, BATCH, MSG_WAITFORONE, NULL);

		if (n > 0)
			atomic_fetch_add(&r->received, (unsigned long long)n);
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			break;
	}
	free(buf);
	return NULL;
}

/* frames/s from tx to rx over `secs`, after a short warm-up */
static double measure(int tx, int rx, unsigned size, double secs)
{
	struct run r = { .tx = tx, .rx = rx, .size = size };
	pthread_t ts, tr;

	pthread_create(&tr, NULL, receiver, &r);
	pthread_create(&ts, NULL, sender, &r);
	usleep(200000);
	unsigned long long c0 = atomic_load(&r.received);
	double t0 = now_s();

	usleep((useconds_t)(secs * 1e6));
	unsigned long long c1 = atomic_load(&r.received);
	double t1 = now_s();

	atomic_store(&r.stop_tx, 1);
	pthread_join(ts, NULL);
	atomic_store(&r.stop_rx, 1);
	pthread_join(tr, NULL);
	return (double)(c1 - c0) / (t1 - t0);
}

static pid_t spawn_switch(const char *bin, const char *dir, char *sock)
{
	char ctl[200];
	pid_t pid;

	snprintf(sock, 200, "%s/switch.sock", dir);
	snprintf(ctl, sizeof(ctl), "%s/switch.ctl", dir);
	pid = fork();
	if (pid == 0) {
		char log[220];

		snprintf(log, sizeof(log), "%s/switch.log", dir);
		if (!freopen(log, "w", stderr))
			_exit(127);
		execl(bin, bin, "--socket", sock, "--ctl", ctl, "--foreground", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void learn(int a, int b)
{
	char f[64] = { 0 }, buf[MAXF];

	memset(f, 0xff, 6);
	memcpy(f + 6, MAC_B, 6);
	if (send(b, f, 60, 0) < 0 || recv(a, buf, sizeof(buf), 0) < 0)
		die("learn");
	memcpy(f + 6, MAC_A, 6);
	if (send(a, f, 60, 0) < 0 || recv(b, buf, sizeof(buf), 0) < 0)
		die("learn");
}

static double run_switch(const char *bin, const char *dir, unsigned size, double secs)
{
	char sock[200];
	pid_t pid = spawn_switch(bin, dir, sock);
	int a = connect_seqpacket(sock), b = connect_seqpacket(sock);
	double fps;

	learn(a, b);
	fps = measure(a, b, size, secs);
	close(a);
	close(b);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return fps;
}

static double run_relay(const char *dir, unsigned size, double secs)
{
	char path[200];
	pid_t pid;
	double fps;

	snprintf(path, sizeof(path), "%s/relay.sock", dir);
	unlink(path);
	pid = fork();
	if (pid == 0)
		relay(path);
	int a = connect_seqpacket(path);
	int b = connect_seqpacket(path);

	fps = measure(a, b, size, secs);
	close(a);
	close(b);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	unlink(path);
	return fps;
}

/* ---- many ports: P/2 pairs through one switch at once ---- */

#define MAXPORTS 64

static void port_mac(unsigned char *mac, int i)
{
	static const unsigned char base[6] = { 2, 0, 0, 0, 0xbf, 0 };

	memcpy(mac, base, 6);
	mac[5] = (unsigned char)i;
}

/* Each port announces its MAC (a broadcast); the floods are drained. */
static void learn_all(const int *fd, int n)
{
	char f[64] = { 0 }, buf[MAXF];

	memset(f, 0xff, 6);
	for (int i = 0; i < n; i++) {
		port_mac((unsigned char *)f + 6, i);
		if (send(fd[i], f, 60, 0) < 0)
			die("learn");
		for (int j = 0; j < n; j++)
			if (j != i && recv(fd[j], buf, sizeof(buf), 0) < 0)
				die("learn");
	}
}

/* total frames/s of P/2 pairs (port 2k -> port 2k+1), all sending at once */
static double run_ports(const char *bin, const char *dir, int ports, unsigned size, double secs)
{
	static struct run r[MAXPORTS / 2];
	unsigned char mac[MAXPORTS][6];
	pthread_t ts[MAXPORTS / 2], tr[MAXPORTS / 2];
	int fd[MAXPORTS], pairs = ports / 2;
	char sock[200];
	pid_t pid = spawn_switch(bin, dir, sock);
	unsigned long long c0 = 0, c1 = 0;
	double t0, t1;

	for (int i = 0; i < ports; i++) {
		fd[i] = connect_seqpacket(sock);
		port_mac(mac[i], i);
	}
	learn_all(fd, ports);
	for (int k = 0; k < pairs; k++) {
		memset(&r[k], 0, sizeof(r[k]));
		r[k].tx = fd[2 * k];
		r[k].rx = fd[2 * k + 1];
		r[k].size = size;
		r[k].src = mac[2 * k];
		r[k].dst = mac[2 * k + 1];
		pthread_create(&tr[k], NULL, receiver, &r[k]);
		pthread_create(&ts[k], NULL, sender, &r[k]);
	}
	usleep(200000);
	for (int k = 0; k < pairs; k++)
		c0 += atomic_load(&r[k].received);
	t0 = now_s();
	usleep((useconds_t)(secs * 1e6));
	for (int k = 0; k < pairs; k++)
		c1 += atomic_load(&r[k].received);
	t1 = now_s();
	for (int k = 0; k < pairs; k++)
		atomic_store(&r[k].stop_tx, 1);
	for (int k = 0; k < pairs; k++)
		pthread_join(ts[k], NULL);
	for (int k = 0; k < pairs; k++)
		atomic_store(&r[k].stop_rx, 1);
	for (int k = 0; k < pairs; k++)
		pthread_join(tr[k], NULL);
	for (int i = 0; i < ports; i++)
		close(fd[i]);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return (double)(c1 - c0) / (t1 - t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	double c[20];

	memcpy(c, v, (size_t)n * sizeof(*v));
	qsort(c, (size_t)n, sizeof(*c), cmp_double);
	return n & 1 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "switch", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "ports", required_argument, NULL, 'p' },
		{ 0 },
	};
	const char *bin = "./cnuas-vswitchd";
	char sizes[256] = "64,1500,4096", ports[256] = "";
	double secs = 0.6;
	int rounds = 5, opt;
	char dir[] = "/tmp/cnuas-bench-XXXXXX";

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			bin = optarg;
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'z':
			snprintf(sizes, sizeof(sizes), "%s", optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'p':
			snprintf(ports, sizeof(ports), "%s", optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [--switch PATH] [--seconds S] [--sizes 64,1500] [--rounds N] [--ports 2,4,8]\n",
				argv[0]);
			return 2;
		}
	}
	if (secs <= 0 || secs > 60 || rounds < 1 || rounds > 20) {
		fprintf(stderr, "bench: --seconds must be in (0, 60], --rounds in 1..20\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		die("mkdtemp");
	if (ports[0]) {
		/* --ports: the port-count rows only, at the first size */
		unsigned size = (unsigned)atoi(sizes);
		char *save = NULL;

		if (size < 60 || size > MAXF) {
			fprintf(stderr, "bench: size %u out of range 60..%d\n", size, MAXF);
			return 2;
		}
		for (char *tok = strtok_r(ports, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			int n = atoi(tok);
			double tot[20], per[20];

			if (n < 2 || n > MAXPORTS || n % 2) {
				fprintf(stderr, "bench: --ports wants even counts in 2..%d, not %s\n", MAXPORTS, tok);
				return 2;
			}
			for (int i = 0; i < rounds; i++) {
				tot[i] = run_ports(bin, dir, n, size, secs);
				per[i] = tot[i] / (n / 2);
			}
			printf("bench switch_ports ports=%d size=%u total_fps=%.0f per_pair_fps=%.0f\n", n, size,
			       median(tot, rounds), median(per, rounds));
			fflush(stdout);
		}
		goto out;
	}
	for (char *tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
		unsigned size = (unsigned)atoi(tok);
		double swv[20], rlv[20], ratio[20];

		if (size < 60 || size > MAXF) {
			fprintf(stderr, "bench: size %s out of range 60..%d\n", tok, MAXF);
			return 2;
		}
		/*
		 * Pairs run back to back, in alternating order, so load from
		 * elsewhere on the machine hits both sides alike; report medians.
		 */
		for (int i = 0; i < rounds; i++) {
			if (i & 1) {
				rlv[i] = run_relay(dir, size, secs);
				swv[i] = run_switch(bin, dir, size, secs);
			} else {
				swv[i] = run_switch(bin, dir, size, secs);
				rlv[i] = run_relay(dir, size, secs);
			}
			ratio[i] = rlv[i] > 0 ? swv[i] / rlv[i] : 0;
		}
		printf("bench switch_vs_relay size=%u switch_fps=%.0f relay_fps=%.0f ratio=%.2f\n", size,
		       median(swv, rounds), median(rlv, rounds), median(ratio, rounds));
		fflush(stdout);
	}
out:;
	char p[256];

	snprintf(p, sizeof(p), "%s/switch.log", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}
