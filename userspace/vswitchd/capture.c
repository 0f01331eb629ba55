// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * pcap capture through libpcap's dump API. With all ports, every frame is
 * written once, when the switch forwards it (after ingress faults). With
 * one port, frames that port sent (as forwarded) and frames delivered to it.
 * Link type Ethernet; in IB mode, ERF records of type InfiniBand (below).
 */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/*
 * IB frames (from the LRH to the VCRC) go out as ERF records in a
 * LINKTYPE_ERF file, as Mellanox's ibdump writes them: Debian 12's
 * libpcap and Wireshark 4.0 know LINKTYPE_INFINIBAND (247) only by name
 * and refuse such a file, while every Wireshark reads ERF type
 * INFINIBAND and hands it to its InfiniBand dissector. The ERF header
 * (16 bytes): a little-endian timestamp (seconds << 32 | binary
 * fraction), the type, flags, then big-endian record length, loss
 * counter and wire length.
 */
#define ERF_TYPE_INFINIBAND	21
#define ERF_FLAG_VLEN		0x04	/* records are not padded to 8 bytes */
#define ERF_HDR_LEN		16
#define CAPTURE_SNAPLEN		65535

struct capture {
	pcap_t *dead;
	pcap_dumper_t *dump;
	uint32_t port_id;
	uint64_t frames;
	bool erf;
	uint8_t *rec;		/* ERF header + frame, when erf */
	char path[4096];
};

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static uint32_t erf_record(uint8_t *rec, const struct timeval *tv, const uint8_t *data,
			   uint32_t len)
{
	uint64_t ts = (uint64_t)tv->tv_sec << 32 | ((uint64_t)tv->tv_usec << 32) / 1000000;
	int i;

	if (len > CAPTURE_SNAPLEN - ERF_HDR_LEN)
		len = CAPTURE_SNAPLEN - ERF_HDR_LEN;
	for (i = 0; i < 8; i++)
		rec[i] = ts >> (8 * i);
	rec[8] = ERF_TYPE_INFINIBAND;
	rec[9] = ERF_FLAG_VLEN;
	put_be16(rec + 10, ERF_HDR_LEN + len);
	put_be16(rec + 12, 0);
	put_be16(rec + 14, len);
	memcpy(rec + ERF_HDR_LEN, data, len);
	return ERF_HDR_LEN + len;
}

struct capture *capture_start(const char *path, uint32_t port_id, int linktype, char *err,
			      size_t errlen)
{
	struct capture *c = calloc(1, sizeof(*c));
	FILE *f;
	int fd;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (strlen(path) >= sizeof(c->path)) {
		snprintf(err, errlen, "capture path too long");
		free(c);
		return NULL;
	}
	c->erf = linktype == CAPTURE_LINKTYPE_INFINIBAND;
	if (c->erf) {
		c->rec = malloc(CAPTURE_SNAPLEN);
		if (!c->rec) {
			snprintf(err, errlen, "out of memory");
			free(c);
			return NULL;
		}
		linktype = DLT_ERF;
	}
	c->dead = pcap_open_dead(linktype, CAPTURE_SNAPLEN);
	if (!c->dead) {
		snprintf(err, errlen, "pcap_open_dead failed");
		free(c->rec);
		free(c);
		return NULL;
	}
	/*
	 * The switch runs as root for its clients: never follow a link or
	 * truncate an existing file.
	 */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	f = fd < 0 ? NULL : fdopen(fd, "wb");
	if (!f) {
		snprintf(err, errlen, "cannot create %s: %s%s", path, strerror(errno),
			 errno == EEXIST ? " (captures never overwrite a file)" : "");
		if (fd >= 0)
			close(fd);
		pcap_close(c->dead);
		free(c->rec);
		free(c);
		return NULL;
	}
	c->dump = pcap_dump_fopen(c->dead, f);
	if (!c->dump) {
		snprintf(err, errlen, "cannot write %s: %s", path, pcap_geterr(c->dead));
		fclose(f);
		unlink(path);
		pcap_close(c->dead);
		free(c->rec);
		free(c);
		return NULL;
	}
	c->port_id = port_id;
	strcpy(c->path, path);
	return c;
}

void capture_frame(struct capture *c, const uint8_t *data, uint32_t len)
{
	struct pcap_pkthdr h;

	gettimeofday(&h.ts, NULL);
	if (c->erf) {
		h.caplen = h.len = erf_record(c->rec, &h.ts, data, len);
		pcap_dump((u_char *)c->dump, &h, c->rec);
	} else {
		h.caplen = h.len = len;
		pcap_dump((u_char *)c->dump, &h, data);
	}
	c->frames++;
}

void capture_flush(struct capture *c)
{
	pcap_dump_flush(c->dump);
}

uint64_t capture_stop(struct capture *c)
{
	uint64_t n = c->frames;

	pcap_dump_close(c->dump);
	pcap_close(c->dead);
	free(c->rec);
	free(c);
	return n;
}

uint32_t capture_port(const struct capture *c) { return c->port_id; }
const char *capture_path(const struct capture *c) { return c->path; }
uint64_t capture_frames(const struct capture *c) { return c->frames; }
