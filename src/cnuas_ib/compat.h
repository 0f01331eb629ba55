/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ib_core API differences between the kernels the DKMS package builds for
 * (Debian 12's 6.1 upwards). Feature tests set in Kbuild, not versions.
 */
#ifndef CNUAS_IB_COMPAT_H
#define CNUAS_IB_COMPAT_H

#include <rdma/ib_verbs.h>

/*
 * The device registers without a DMA device: ib_core must hand kernel
 * virtual addresses through (ib_uses_virt_dma()), the transport copies.
 */
#if !IS_ENABLED(CONFIG_INFINIBAND_VIRT_DMA)
#error "cnuas_ib needs CONFIG_INFINIBAND_VIRT_DMA"
#endif

/* 6.11: create_cq takes the uverbs attribute bundle instead of udata. */
#ifdef CNUAS_HAVE_CREATE_CQ_ATTRS
#define CNUAS_CREATE_CQ_ARG	uverbs_attr_bundle
#else
#define CNUAS_CREATE_CQ_ARG	ib_udata
#endif

/* 6.17: reg_user_mr gained a DMA handle before udata. */
#ifdef CNUAS_HAVE_REG_USER_MR_DMAH
#define CNUAS_IB_REG_USER_MR_DMAH	struct ib_dmah *dmah,
#else
#define CNUAS_IB_REG_USER_MR_DMAH
#endif

/* 7.x: ib_umem_get() became ib_umem_get_va() (the others take a desc). */
#ifdef CNUAS_HAVE_IB_UMEM_GET_VA
#define cnuas_ib_umem_get	ib_umem_get_va
#else
#define cnuas_ib_umem_get	ib_umem_get
#endif

/*
 * 7.x: user CQs are created through create_user_cq (create_cq only for
 * kernel CQs); cnuas_ib_create_cq serves both.
 */
/*
 * 7.x: only user CQs resize (resize_user_cq, unsigned count); before, any
 * CQ through resize_cq.
 */
#ifdef CNUAS_HAVE_RESIZE_USER_CQ
#define CNUAS_IB_OPS_RESIZE_CQ		.resize_user_cq = cnuas_ib_resize_user_cq,
#else
#define CNUAS_IB_OPS_RESIZE_CQ		.resize_cq = cnuas_ib_resize_cq,
#endif

#ifdef CNUAS_HAVE_CREATE_USER_CQ
#define CNUAS_IB_OPS_CREATE_USER_CQ	.create_user_cq = cnuas_ib_create_cq,
#else
#define CNUAS_IB_OPS_CREATE_USER_CQ
#endif

/*
 * reg_user_mr_dmabuf's last arguments: udata (6.1), the uverbs attribute
 * bundle (6.10), a DMA handle before it (6.17).
 */
#ifdef CNUAS_HAVE_REG_DMABUF_ATTRS
#define CNUAS_REG_DMABUF_ARG		uverbs_attr_bundle
#else
#define CNUAS_REG_DMABUF_ARG		ib_udata
#endif
#ifdef CNUAS_HAVE_REG_DMABUF_DMAH
#define CNUAS_IB_REG_DMABUF_DMAH	struct ib_dmah *dmah,
#else
#define CNUAS_IB_REG_DMABUF_DMAH
#endif

/* 6.2: dma_buf_vmap() wants the reservation lock held; _unlocked takes it. */
#ifdef CNUAS_HAVE_DMA_BUF_VMAP_UNLOCKED
#define cnuas_ib_dma_buf_vmap		dma_buf_vmap_unlocked
#define cnuas_ib_dma_buf_vunmap		dma_buf_vunmap_unlocked
#else
#define cnuas_ib_dma_buf_vmap		dma_buf_vmap
#define cnuas_ib_dma_buf_vunmap		dma_buf_vunmap
#endif

/*
 * 6.2: ib_core knows the IBA 1.5 Memory Placement Extensions (FLUSH,
 * ATOMIC WRITE): WR and WC opcodes, the MR access flags, the device
 * capabilities. Without it the device offers neither (6.1's ib_core
 * refuses the access flags). The opcodes' values are the uverbs ABI's,
 * fixed: the shared ring carries them on every kernel (cnuas_ib.h).
 * FLUSH_PERSISTENT is never offered: guest memory is not persistent.
 */
#ifdef CNUAS_HAVE_IB_FLUSH
#define CNUAS_IB_ACCESS_FLUSH_GLOBAL	IB_ACCESS_FLUSH_GLOBAL
#define CNUAS_IB_ACCESS_FLUSH_PERSISTENT IB_ACCESS_FLUSH_PERSISTENT
#define CNUAS_IB_DEVICE_CAP_MPE		(IB_DEVICE_FLUSH_GLOBAL | \
					 IB_DEVICE_ATOMIC_WRITE)
#else
#define CNUAS_IB_ACCESS_FLUSH_GLOBAL	0
#define CNUAS_IB_ACCESS_FLUSH_PERSISTENT 0
#define CNUAS_IB_DEVICE_CAP_MPE		0
#endif

/* 7.x: the importer's move_notify became invalidate_mappings. */
#ifdef CNUAS_HAVE_DMABUF_INVALIDATE_MAPPINGS
#define CNUAS_IB_DMABUF_NOTIFY		invalidate_mappings
#else
#define CNUAS_IB_DMABUF_NOTIFY		move_notify
#endif

#endif /* CNUAS_IB_COMPAT_H */
