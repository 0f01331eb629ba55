// SPDX-License-Identifier: GPL-2.0
/*
 * Rings shared with the provider (uapi/cnuas-abi.h): allocation, mmap and
 * the index arithmetic of both sides. The side that is not the kernel is
 * untrusted: its index is read once, checked, and a ring whose indices
 * make no sense looks empty (consumer) or full (producer), never larger.
 */
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "cnuas_ib.h"

/*
 * The mmap entry owns the buffer: it may outlive the queue's object. An
 * entry with io_addr instead maps the device's RX poll page.
 */
struct cnuas_ib_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *buf;
	phys_addr_t io_addr;
};

static struct cnuas_ib_mmap_entry *
to_cnuas_mmap_entry(struct rdma_user_mmap_entry *entry)
{
	return container_of(entry, struct cnuas_ib_mmap_entry, rdma);
}

int cnuas_ib_queue_init(struct cnuas_ib_dev *cdev, struct cnuas_ib_queue *q,
			u32 num, u32 stride, struct ib_udata *udata,
			struct cnuas_queue_info *info)
{
	struct cnuas_ib_ucontext *uctx;
	struct cnuas_ib_mmap_entry *me;
	size_t size;
	int err;

	if (!num || !is_power_of_2(num) || !stride || !is_power_of_2(stride))
		return -EINVAL;
	if (check_mul_overflow((size_t)num, (size_t)stride, &size) ||
	    check_add_overflow(size, (size_t)CNUAS_QUEUE_HDR_SIZE, &size))
		return -EINVAL;
	size = PAGE_ALIGN(size);

	memset(q, 0, sizeof(*q));
	q->hdr = vmalloc_user(size);	/* zeroed: prod = cons = 0 */
	if (!q->hdr)
		return -ENOMEM;
	q->slots = (void *)q->hdr + CNUAS_QUEUE_HDR_SIZE;
	q->size = size;
	q->num = num;
	q->stride = stride;

	if (!udata)
		return 0;

	uctx = rdma_udata_to_drv_context(udata, struct cnuas_ib_ucontext, ibuc);
	me = kzalloc(sizeof(*me), GFP_KERNEL);
	if (!me) {
		err = -ENOMEM;
		goto err_free;
	}
	me->buf = q->hdr;
	err = rdma_user_mmap_entry_insert(&uctx->ibuc, &me->rdma, size);
	if (err) {
		kfree(me);
		goto err_free;
	}
	q->mentry = &me->rdma;
	if (info) {
		info->mmap_offset = rdma_user_mmap_get_offset(&me->rdma);
		info->mmap_size = size;
		info->num_entries = num;
		info->entry_size = stride;
	}
	return 0;

err_free:
	vfree(q->hdr);
	q->hdr = NULL;
	return err;
}

void cnuas_ib_queue_cleanup(struct cnuas_ib_queue *q)
{
	if (!q->hdr)
		return;
	if (q->mentry)
		/* mmap_free frees the buffer once no mmap() uses the entry. */
		rdma_user_mmap_entry_remove(q->mentry);
	else
		vfree(q->hdr);
	q->hdr = NULL;
	q->slots = NULL;
	q->mentry = NULL;
}

int cnuas_ib_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	struct cnuas_ib_mmap_entry *me;
	int err;

	/* Checks VM_SHARED and that the size is the entry's. */
	entry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!entry)
		return -EINVAL;
	me = to_cnuas_mmap_entry(entry);
	if (me->io_addr) {
		/*
		 * Reads are all the page is for (writes would be ignored);
		 * ib_core zaps the mapping when the device goes away.
		 */
		err = vma->vm_flags & VM_WRITE ? -EPERM :
		      rdma_user_mmap_io(ibuc, vma, PHYS_PFN(me->io_addr),
					PAGE_SIZE,
					pgprot_noncached(vma->vm_page_prot),
					entry);
	} else {
		/* Takes a reference on every page: they outlive the entry. */
		err = remap_vmalloc_range(vma, me->buf, 0);
	}
	rdma_user_mmap_entry_put(entry);
	return err;
}

void cnuas_ib_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct cnuas_ib_mmap_entry *me = to_cnuas_mmap_entry(entry);

	vfree(me->buf);		/* NULL for the poll page */
	kfree(me);
}

/*
 * Offer the device's RX poll page (cnuas_net_aux_dev.rx_poll_page) to a
 * user context: busy pollers read it when their CQ is empty, which moves
 * waiting frames into the RX ring at once. False when there is no page to
 * offer; else *offset is its mmap offset (which may be 0).
 */
bool cnuas_ib_rx_poll_entry(struct cnuas_ib_dev *cdev,
			    struct cnuas_ib_ucontext *uctx, u64 *offset)
{
	struct cnuas_ib_mmap_entry *me;

	/* A larger page would map more than the device's page. */
	if (!cdev->adev->rx_poll_page || PAGE_SIZE != CNUAS_VNIC_POLL_SIZE)
		return false;
	me = kzalloc(sizeof(*me), GFP_KERNEL);
	if (!me)
		return false;
	me->io_addr = cdev->adev->rx_poll_page;
	if (rdma_user_mmap_entry_insert(&uctx->ibuc, &me->rdma, PAGE_SIZE)) {
		kfree(me);
		return false;
	}
	uctx->rx_poll = &me->rdma;
	*offset = rdma_user_mmap_get_offset(&me->rdma);
	return true;
}

/* A resize: entries @first..@first + @n - 1 of @q to slots 0.. of @nq. */
void cnuas_ib_queue_copy(struct cnuas_ib_queue *nq, struct cnuas_ib_queue *q,
			 u32 first, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		memcpy(cnuas_ib_queue_slot(nq, i),
		       cnuas_ib_queue_slot(q, first + i), q->stride);
}

u32 cnuas_ib_queue_avail(struct cnuas_ib_queue *q)
{
	/* acquire: the slots before prod are filled (pairs with release) */
	u32 n = smp_load_acquire(&q->hdr->prod) - q->index;

	return n > q->num ? 0 : n;	/* a broken producer: nothing */
}

void cnuas_ib_queue_consume(struct cnuas_ib_queue *q, u32 n)
{
	q->index += n;
	/* release: we are done reading the slots before cons */
	smp_store_release(&q->hdr->cons, q->index);
}

u32 cnuas_ib_queue_space(struct cnuas_ib_queue *q)
{
	/* acquire: the consumer is done with the slots before cons */
	u32 used = q->index - smp_load_acquire(&q->hdr->cons);

	return used > q->num ? 0 : q->num - used; /* broken consumer: full */
}

void cnuas_ib_queue_produce(struct cnuas_ib_queue *q, u32 n)
{
	q->index += n;
	/* release: the slots before prod are written */
	smp_store_release(&q->hdr->prod, q->index);
}

u32 cnuas_ib_queue_kspace(struct cnuas_ib_queue *q)
{
	/* acquire: the consumer is done with the slots before cons */
	u32 used = READ_ONCE(q->hdr->prod) - smp_load_acquire(&q->hdr->cons);

	return used > q->num ? 0 : q->num - used;
}

void cnuas_ib_queue_kproduce(struct cnuas_ib_queue *q, u32 n)
{
	/* release: the slots before prod are written */
	smp_store_release(&q->hdr->prod, READ_ONCE(q->hdr->prod) + n);
}

void cnuas_ib_queue_discard(struct cnuas_ib_queue *q)
{
	/* acquire: as the consumer does before it reads entries */
	q->index = smp_load_acquire(&q->hdr->prod);
	/* release: the producer may reuse every slot now */
	smp_store_release(&q->hdr->cons, q->index);
}

int cnuas_ib_queue_pop_recv(struct cnuas_ib_queue *q, u32 max_sge,
			    struct cnuas_ib_recv_wqe *wqe, u32 *left)
{
	const struct cnuas_recv_wqe *slot;
	u32 avail = cnuas_ib_queue_avail(q);
	u32 num_sge;

	*left = avail;
	if (!avail)
		return -ENOENT;
	slot = cnuas_ib_queue_slot(q, q->index);
	/* The other side may rewrite the slot: read each field once. */
	wqe->wr_id = READ_ONCE(slot->wr_id);
	num_sge = READ_ONCE(slot->num_sge);
	*left = avail - 1;
	if (num_sge > max_sge || num_sge > CNUAS_IB_MAX_SGE) {
		wqe->num_sge = 0;
		cnuas_ib_queue_consume(q, 1);
		return -EINVAL;
	}
	wqe->num_sge = num_sge;
	memcpy(wqe->sge, slot + 1, num_sge * sizeof(struct cnuas_sge));
	cnuas_ib_queue_consume(q, 1);
	return 0;
}
