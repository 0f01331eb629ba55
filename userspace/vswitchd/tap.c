// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * TAP ports: a Linux TAP interface the switch creates and owns, so the
 * fabric joins the host's networks: put the interface in a Linux bridge or
 * an Open vSwitch bridge and their VXLAN or GENEVE ports carry it to other
 * hosts. To the switch it is one more Ethernet port.
 *
 * A tun fd is not a socket, so recvmmsg()/sendmmsg() do not work on it; the
 * two calls below move one frame per read()/write() behind the same batch
 * interface. The kernel takes a written frame or refuses it at once (the
 * interface is down, the frame is over its MTU): a TAP port never pauses a
 * sender, and what it refuses is counted as drop_link_down. Deleting the
 * interface (ip link del) removes the port; removing the port deletes the
 * interface, unless it was made persistent beforehand (ip tuntap add), which
 * the switch then attaches to.
 */
#include "port_kind.h"
#include "switch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* The kernel's rules for a new interface name (dev_valid_name()). */
static bool name_ok(const char *name)
{
	size_t n = strlen(name);

	if (!n || n >= IFNAMSIZ || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (name[i] == '/' || name[i] == ':' || name[i] <= ' ' || name[i] == 0x7f)
			return false;
	return true;
}

/* Any socket carries the interface ioctls: AF_UNIX, as the unit allows. */
static int link_up(const char *name, char *err, size_t errlen)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int ret = -1;

	if (s < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		snprintf(err, errlen, "%s: cannot read its flags: %s", name, strerror(errno));
	} else {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
			snprintf(err, errlen, "%s: cannot set it up: %s", name, strerror(errno));
		else
			ret = 0;
	}
	close(s);
	return ret;
}

struct port *tap_add(struct vswitch *sw, const char *name, char *err, size_t errlen)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
	struct port *p;
	int fd;

	if (!name_ok(name)) {
		snprintf(err, errlen, "'%s' is not a valid interface name (1..%d characters, no '/', ':' or blanks)",
			 name, IFNAMSIZ - 1);
		return NULL;
	}
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "/dev/net/tun: %s", strerror(errno));
		return NULL;
	}
	memcpy(ifr.ifr_name, name, strlen(name));
	/* An existing persistent TAP of that name is attached; one in use: EBUSY. */
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		snprintf(err, errlen, "cannot create TAP %s: %s", name, strerror(errno));
		close(fd);
		return NULL;
	}
	if (link_up(ifr.ifr_name, err, errlen) < 0) {
		close(fd);
		return NULL;
	}
	p = port_add(sw, fd, &tap_kind);
	if (!p) {
		snprintf(err, errlen, "too many ports (max %u)", sw->cfg.max_ports);
		close(fd);
		return NULL;
	}
	/*
	 * An uplink: every station behind the host's bridge shows up here, so
	 * port security's pinning and MAC limit are off (per-port settings may
	 * still set them). Guests' own MACs stay pinned to their ports.
	 */
	p->psec = (struct fdb_policy){ 0 };
	snprintf(p->peer, sizeof(p->peer), "%s", ifr.ifr_name);
	vs_log(VS_LOG_INFO, "port %u: TAP %s", p->id, ifr.ifr_name);
	return p;
}

int tap_recv(int fd, struct mmsghdr *m, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct msghdr *h = &m[i].msg_hdr;
		ssize_t r = readv(fd, h->msg_iov, (int)h->msg_iovlen);

		if (r < 0)
			return i ? (int)i : -1;
		m[i].msg_len = (unsigned int)r;
		h->msg_flags = 0;
	}
	return (int)i;
}

int tap_send(int fd, struct mmsghdr *m, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct msghdr *h = &m[i].msg_hdr;
		ssize_t r = writev(fd, h->msg_iov, (int)h->msg_iovlen);

		if (r < 0)
			return i ? (int)i : -1;
		m[i].msg_len = (unsigned int)r;
	}
	return (int)i;
}
