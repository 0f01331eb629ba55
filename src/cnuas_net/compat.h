/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Differences between the kernels the DKMS package builds for (Debian 12's
 * 6.1 upwards). Feature tests, not version numbers: see Kbuild.
 */
#ifndef CNUAS_NET_COMPAT_H
#define CNUAS_NET_COMPAT_H

#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/slab.h>

/* Renamed in 6.8; the old name is gone later. */
#ifndef PCI_IRQ_INTX
#define PCI_IRQ_INTX	PCI_IRQ_LEGACY
#endif

/* dev_set_threaded() takes a mode instead of a bool on newer kernels. */
#ifdef CNUAS_HAVE_NAPI_THREADED_ENUM
#define CNUAS_NAPI_THREADED_ON	NETDEV_NAPI_THREADED_ENABLED
#define CNUAS_NAPI_THREADED_OFF	NETDEV_NAPI_THREADED_DISABLED
#else
#define CNUAS_NAPI_THREADED_ON	true
#define CNUAS_NAPI_THREADED_OFF	false
#endif

/* A net_device that only hosts NAPI (IB mode). */
static inline struct net_device *cnuas_alloc_dummy_netdev(void)
{
#ifdef CNUAS_HAVE_ALLOC_NETDEV_DUMMY
	return alloc_netdev_dummy(0);
#else
	struct net_device *nd = kzalloc(sizeof(*nd), GFP_KERNEL);

	if (nd)
		init_dummy_netdev(nd);
	return nd;
#endif
}

static inline void cnuas_free_dummy_netdev(struct net_device *nd)
{
#ifdef CNUAS_HAVE_ALLOC_NETDEV_DUMMY
	free_netdev(nd);
#else
	kfree(nd);
#endif
}

#endif /* CNUAS_NET_COMPAT_H */
