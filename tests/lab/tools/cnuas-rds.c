// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-rds: checked messages between two guests over RDS's RDMA
 * transport (rds_rdma), for VM test 95. Debian ships no rds-tools.
 *
 *   cnuas-rds serve LOCAL-IP PORT COUNT
 *	binds an RDS socket pinned to the IB transport, prints "bound", then
 *	receives COUNT messages, checks each and sends it back to its sender.
 *	COUNT 0: serves until killed, one sender after another (test 95's
 *	runs through faults); each new sender's sequence starts at 0.
 *   cnuas-rds send LOCAL-IP PEER-IP PORT COUNT
 *	sends COUNT messages of sizes from 16 bytes to 64 KiB one at a time,
 *	checks each echo against what it sent, then lists the kernel's RDS
 *	IB connections between the two addresses (there must be one).
 *   cnuas-rds counters
 *	prints the kernel's RDS counters, "NAME VALUE" a line.
 *
 * A message is a header (magic, sequence number, length, FNV-1a sum of the
 * payload) and a payload whose bytes follow from the sequence number and
 * their offset, so the receiver checks it without knowing what was sent.
 * Exit 0 when every message arrived intact and in order, 1 otherwise, 3
 * when the local address cannot be bound (no RDMA device has it: a driver
 * being reloaded).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/rds.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef AF_RDS
#define AF_RDS 21
#endif
#ifndef SOL_RDS
#define SOL_RDS 276
#endif

#define MSG_MAGIC 0x43524453u	/* "CRDS" */
#define MSG_MAX (64 * 1024)
/* Long enough for an echo held up while RDS connects again after a
 * fault (on IB: the SM makes a reloaded driver's port Active again).
 */
#define RECV_TIMEOUT_S 90
#define EXIT_NO_BIND 3

struct msg_hdr {
	uint32_t magic;
	uint32_t seq;
	uint32_t len;		/* the whole message, header included */
	uint32_t sum;		/* FNV-1a of the payload */
};

static unsigned char sbuf[MSG_MAX], rbuf[MSG_MAX + 1];

/* Sizes cycle through the edges (header only, one fragment, 64 KiB) and
 * sizes in between that straddle RDS's 4 KiB fragments.
 */
static uint32_t msg_len(uint32_t seq)
{
	switch (seq % 8) {
	case 0: return sizeof(struct msg_hdr);
	case 1: return 4096;
	case 2: return MSG_MAX;
	case 3: return 4097;
	default: return sizeof(struct msg_hdr) + (seq * 2741u) % (MSG_MAX - sizeof(struct msg_hdr));
	}
}

static unsigned char pattern(uint32_t seq, uint32_t i)
{
	return (unsigned char)(seq * 131u + i * 7u + (i >> 8));
}

static uint32_t fnv1a(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

static void msg_fill(uint32_t seq)
{
	struct msg_hdr h = { MSG_MAGIC, seq, msg_len(seq), 0 };
	uint32_t i;

	for (i = sizeof(h); i < h.len; i++)
		sbuf[i] = pattern(seq, i);
	h.sum = fnv1a(sbuf + sizeof(h), h.len - sizeof(h));
	memcpy(sbuf, &h, sizeof(h));
}

/* msg_check: 0 when the N bytes in rbuf are message SEQ, intact. */
static int msg_check(uint32_t seq, ssize_t n)
{
	struct msg_hdr h;
	uint32_t i;

	if (n < (ssize_t)sizeof(h)) {
		fprintf(stderr, "message %u: %zd bytes, shorter than a header\n", seq, n);
		return -1;
	}
	memcpy(&h, rbuf, sizeof(h));
	if (h.magic != MSG_MAGIC || h.seq != seq || h.len != (uint32_t)n || h.len != msg_len(seq)) {
		fprintf(stderr, "message %u: magic %#x seq %u len %u in %zd bytes (want len %u)\n",
			seq, h.magic, h.seq, h.len, n, msg_len(seq));
		return -1;
	}
	for (i = sizeof(h); i < h.len; i++) {
		if (rbuf[i] != pattern(seq, i)) {
			fprintf(stderr, "message %u: byte %u is %#x, want %#x\n",
				seq, i, rbuf[i], pattern(seq, i));
			return -1;
		}
	}
	if (fnv1a(rbuf + sizeof(h), h.len - sizeof(h)) != h.sum) {
		fprintf(stderr, "message %u: payload sum mismatch\n", seq);
		return -1;
	}
	return 0;
}

static int addr_of(const char *ip, const char *port, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)atoi(port));
	if (inet_pton(AF_INET, ip, &sin->sin_addr) != 1) {
		fprintf(stderr, "not an IPv4 address: %s\n", ip);
		return -1;
	}
	return 0;
}

/* rds_socket: an RDS socket on the IB transport (rds_rdma), bound to
 * LOCAL. Pinning the transport makes a missing rds_rdma an error rather
 * than a silent fallback to another transport.
 */
static int rds_socket(const struct sockaddr_in *local)
{
	struct timeval tv = { RECV_TIMEOUT_S, 0 };
	int fd, trans = RDS_TRANS_IB, sz = 4 * MSG_MAX;

	fd = socket(AF_RDS, SOCK_SEQPACKET, 0);
	if (fd < 0) {
		perror("socket(AF_RDS) (is rds_rdma loaded?)");
		return -1;
	}
	if (setsockopt(fd, SOL_RDS, SO_RDS_TRANSPORT, &trans, sizeof(trans)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		perror("setsockopt");
		close(fd);
		return -1;
	}
	if (bind(fd, (const struct sockaddr *)local, sizeof(*local))) {
		perror("bind (an address of an RDMA device?)");
		close(fd);
		return -2;
	}
	return fd;
}

static ssize_t recv_one(int fd, struct sockaddr_in *from, uint32_t seq)
{
	socklen_t fl = sizeof(*from);
	ssize_t n = recvfrom(fd, rbuf, sizeof(rbuf), 0, (struct sockaddr *)from, &fl);

	if (n < 0)
		fprintf(stderr, "message %u: recvfrom: %s\n", seq, strerror(errno));
	return n;
}

static int send_one(int fd, const void *buf, size_t len, const struct sockaddr_in *to,
		    uint32_t seq)
{
	ssize_t n;
	int tries = 0;

	/* ENOBUFS: the send queue is full until the peer acknowledges. */
	while ((n = sendto(fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to))) < 0 &&
	       (errno == ENOBUFS || errno == EAGAIN) && tries++ < 2000)
		usleep(10000);
	if (n != (ssize_t)len) {
		fprintf(stderr, "message %u: sendto: %s\n", seq, n < 0 ? strerror(errno) : "short");
		return -1;
	}
	return 0;
}

static int same_sender(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

/* serve: COUNT messages, or with COUNT 0 until killed. A message from
 * another sender than the last one starts a new sequence at 0; a receive
 * that times out only waits for the next sender then.
 */
static int serve(int fd, uint32_t count)
{
	struct sockaddr_in from, last = { 0 };
	uint32_t seq = 0, done = 0;
	ssize_t n;

	printf("bound\n");
	fflush(stdout);
	while (!count || done < count) {
		n = recv_one(fd, &from, seq);
		if (n < 0 && !count && (errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n < 0)
			return 1;
		if (!count && !same_sender(&from, &last)) {
			last = from;
			seq = 0;
		}
		if (msg_check(seq, n) || send_one(fd, rbuf, n, &from, seq))
			return 1;
		seq++;
		done++;
	}
	printf("served %u messages\n", count);
	return 0;
}

/* counters: the kernel's RDS counters, one "NAME VALUE" line each. */
static int counters(void)
{
	struct rds_info_counter *c;
	socklen_t len = 0;
	char *buf = NULL;
	int fd, each, i;

	fd = socket(AF_RDS, SOCK_SEQPACKET, 0);
	if (fd < 0) {
		perror("socket(AF_RDS)");
		return 1;
	}
	for (;;) {
		each = getsockopt(fd, SOL_RDS, RDS_INFO_COUNTERS, buf, &len);
		if (each >= 0)
			break;
		free(buf);
		buf = errno == ENOSPC ? malloc(len + 1) : NULL;
		if (!buf) {
			perror("getsockopt(RDS_INFO_COUNTERS)");
			close(fd);
			return 1;
		}
	}
	for (i = 0; each > 0 && i + each <= (int)len; i += each) {
		c = (struct rds_info_counter *)(buf + i);
		printf("%.32s %llu\n", (const char *)c->name, (unsigned long long)c->value);
	}
	free(buf);
	close(fd);
	return 0;
}

/* ib_connections: how many of the kernel's RDS IB connections join LOCAL
 * and PEER; each is printed.
 */
static int ib_connections(int fd, const struct sockaddr_in *local, const struct sockaddr_in *peer)
{
	struct rds_info_rdma_connection *c;
	socklen_t len = 0;
	char *buf = NULL;
	int each, i, found = 0;

	for (;;) {
		each = getsockopt(fd, SOL_RDS, RDS_INFO_IB_CONNECTIONS, buf, &len);
		if (each >= 0)
			break;
		if (errno != ENOSPC) {
			perror("getsockopt(RDS_INFO_IB_CONNECTIONS)");
			free(buf);
			return -1;
		}
		free(buf);
		buf = malloc(len + 1);
		if (!buf)
			return -1;
	}
	for (i = 0; each > 0 && i + each <= (int)len; i += each) {
		char s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];

		c = (struct rds_info_rdma_connection *)(buf + i);
		inet_ntop(AF_INET, &c->src_addr, s, sizeof(s));
		inet_ntop(AF_INET, &c->dst_addr, d, sizeof(d));
		printf("rds ib connection %s -> %s (send wr %u, recv wr %u)\n",
		       s, d, c->max_send_wr, c->max_recv_wr);
		if (c->src_addr == local->sin_addr.s_addr && c->dst_addr == peer->sin_addr.s_addr)
			found++;
	}
	free(buf);
	return found;
}

static int send_all(int fd, const struct sockaddr_in *local, const struct sockaddr_in *peer,
		    uint32_t count)
{
	struct sockaddr_in from;
	unsigned long long bytes = 0;
	uint32_t seq;
	ssize_t n;

	for (seq = 0; seq < count; seq++) {
		msg_fill(seq);
		if (send_one(fd, sbuf, msg_len(seq), peer, seq))
			return 1;
		n = recv_one(fd, &from, seq);
		if (n < 0 || msg_check(seq, n))
			return 1;
		if (from.sin_addr.s_addr != peer->sin_addr.s_addr ||
		    from.sin_port != peer->sin_port) {
			fprintf(stderr, "message %u: echo from another address\n", seq);
			return 1;
		}
		bytes += (unsigned long long)n;
	}
	printf("%u messages, %llu bytes each way, echoed intact\n", count, bytes);
	if (ib_connections(fd, local, peer) < 1) {
		fprintf(stderr, "no RDS IB connection between the two addresses\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in local, peer;
	int fd, rc, trans = -1;
	socklen_t tl = sizeof(trans);

	if (argc == 2 && !strcmp(argv[1], "counters"))
		return counters();
	if (argc == 5 && !strcmp(argv[1], "serve")) {
		if (addr_of(argv[2], argv[3], &local))
			return 1;
	} else if (argc == 6 && !strcmp(argv[1], "send")) {
		if (addr_of(argv[2], "0", &local) || addr_of(argv[3], argv[4], &peer))
			return 1;
	} else {
		fprintf(stderr, "usage: cnuas-rds serve LOCAL-IP PORT COUNT\n"
			"       cnuas-rds send LOCAL-IP PEER-IP PORT COUNT\n"
			"       cnuas-rds counters\n");
		return 2;
	}
	fd = rds_socket(&local);
	if (fd < 0)
		return fd == -2 ? EXIT_NO_BIND : 1;
	if (getsockopt(fd, SOL_RDS, SO_RDS_TRANSPORT, &trans, &tl) || trans != RDS_TRANS_IB) {
		fprintf(stderr, "the socket's transport is %d, not IB (%d)\n", trans, RDS_TRANS_IB);
		close(fd);
		return 1;
	}
	if (argc == 5)
		rc = serve(fd, (uint32_t)strtoul(argv[4], NULL, 0));
	else
		rc = send_all(fd, &local, &peer, (uint32_t)strtoul(argv[5], NULL, 0));
	close(fd);
	return rc;
}
