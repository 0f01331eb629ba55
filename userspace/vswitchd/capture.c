// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * pcap capture through libpcap's dump API. With all ports, every frame is
 * written once, when the switch forwards it (after ingress faults). With
 * one port, frames that port sent (as forwarded) and frames delivered to it.
 * Link type Ethernet, or LINKTYPE_INFINIBAND (frames from the LRH) in IB mode.
 */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

struct capture {
	pcap_t *dead;
	pcap_dumper_t *dump;
	uint32_t port_id;
	uint64_t frames;
	char path[4096];
};

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
	c->dead = pcap_open_dead(linktype, 65535);
	if (!c->dead) {
		snprintf(err, errlen, "pcap_open_dead failed");
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
		free(c);
		return NULL;
	}
	c->dump = pcap_dump_fopen(c->dead, f);
	if (!c->dump) {
		snprintf(err, errlen, "cannot write %s: %s", path, pcap_geterr(c->dead));
		fclose(f);
		unlink(path);
		pcap_close(c->dead);
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
	h.caplen = h.len = len;
	pcap_dump((u_char *)c->dump, &h, data);
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
	free(c);
	return n;
}

uint32_t capture_port(const struct capture *c) { return c->port_id; }
const char *capture_path(const struct capture *c) { return c->path; }
uint64_t capture_frames(const struct capture *c) { return c->frames; }
