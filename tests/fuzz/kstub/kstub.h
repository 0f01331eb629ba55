/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * The kernel and ib_core API that cnuas_ib's transport (transport.c,
 * recv.c, req.c, comp.c, resp.c, queue.c) and its IB port's management
 * agents (mad.c, sma.c, pma.c, trap.c; the MAD layout in rdma/ib_mad.h,
 * ib_smi.h, ib_pma.h) use, as plain host C for the fuzz targets ib_resp,
 * ib_comp and ib_mad. Every <linux/...>, <rdma/...> and <asm/...>
 * header of kstub/ includes this one.
 *
 * Only what those files touch, and with the kernel's values where they
 * meet the uapi or the wire (IB_ACCESS_*, IB_WC_*, IB_QP_*, RDMA_NETWORK_*).
 * One thread: locks are no-ops, atomics plain. Timers and work items are
 * recorded (armed, expiry, function) and run by the fixture when the fuzz
 * input says time passes (ib_sm_fixture.c). Object code the transport
 * calls into (qp.c, mr.c, cq.c, net.c, ...) is stubbed in the fixture.
 */
#ifndef CNUAS_FUZZ_KSTUB_H
#define CNUAS_FUZZ_KSTUB_H

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>	/* the host's uapi one (include_next) */
#include <rdma/ib_user_verbs.h>	/* enum ib_uverbs_wr_opcode */

#include "test/host_kernel.h"	/* u8..u64, byte order, crc32_le */

typedef __INT8_TYPE__ s8;
typedef __INT16_TYPE__ s16;
typedef __INT32_TYPE__ s32;
typedef __INT64_TYPE__ s64;
typedef u64 phys_addr_t;
typedef unsigned int gfp_t;

/* ---- compiler ---- */
#define __releases(x)
#define __acquires(x)
#define __aligned(x)		__attribute__((__aligned__(x)))
#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)
#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))
#define smp_load_acquire(p)	__atomic_load_n(p, __ATOMIC_ACQUIRE)
#define smp_store_release(p, v)	__atomic_store_n(p, v, __ATOMIC_RELEASE)
#define smp_mb()		__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_mb__after_atomic()	smp_mb()
#define mb()			smp_mb()
#define U16_MAX			((u16)~0U)
#define U32_MAX			((u32)~0U)
#define U64_MAX			((u64)~0ULL)
#define IS_ENABLED(x)		(x)
#define CONFIG_INFINIBAND_VIRT_DMA 1
#define MODULE_PARM_DESC(n, d)
#define module_param(n, t, p)	static_assert(sizeof(n) > 0, #n)
#define WARN_ON_ONCE(x)		({ bool w_ = !!(x); if (w_) abort(); w_; })
#define ETH_ALEN		6

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define min(a, b)		((a) < (b) ? (a) : (b))
#define max(a, b)		((a) > (b) ? (a) : (b))
#define min_t(t, a, b)		((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b)		((t)(a) > (t)(b) ? (t)(a) : (t)(b))
#define clamp_t(t, v, lo, hi)	min_t(t, max_t(t, v, lo), hi)
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define ALIGN(x, a)		(((x) + (a) - 1) & ~((__typeof__(x))(a) - 1))
#define BIT(n)			(1UL << (n))
#define BIT_ULL(n)		(1ULL << (n))
#define SZ_4K			0x1000
#define SZ_64K			0x10000
#define SZ_2M			0x200000
#define PAGE_SIZE		4096UL
#define PAGE_SHIFT		12
#define PAGE_MASK		(~(PAGE_SIZE - 1))
#define PAGE_ALIGN(x)		ALIGN(x, PAGE_SIZE)
#define check_mul_overflow(a, b, d)	__builtin_mul_overflow(a, b, d)
#define check_add_overflow(a, b, d)	__builtin_add_overflow(a, b, d)

static inline bool is_power_of_2(unsigned long n)
{
	return n && !(n & (n - 1));
}

static inline unsigned long roundup_pow_of_two(unsigned long n)
{
	return n <= 1 ? 1 : 1UL << (64 - __builtin_clzl(n - 1));
}

static inline u64 div_u64(u64 a, u32 b)
{
	return a / b;
}

/* ---- errors as pointers ---- */
#define MAX_ERRNO		4095
#define IS_ERR_VALUE(x)		((unsigned long)(x) >= (unsigned long)-MAX_ERRNO)
static inline void *ERR_PTR(long e) { return (void *)e; }
static inline long PTR_ERR(const void *p) { return (long)p; }
static inline bool IS_ERR(const void *p) { return IS_ERR_VALUE(p); }
static inline int PTR_ERR_OR_ZERO(const void *p)
{
	return IS_ERR(p) ? (int)PTR_ERR(p) : 0;
}

/*
 * ---- debug output: the driver's debug lines, printed when the fixture
 * sets kstub_debug (the kernel's %p extensions print as plain %p) ----
 */
extern bool kstub_debug;
void kstub_printk(const char *fmt, ...);
#define no_printk(fmt, ...) \
	({ if (kstub_debug) kstub_printk(fmt, ##__VA_ARGS__); 0; })
#define ibdev_dbg(dev, fmt, ...)	((void)(dev), no_printk(fmt, ##__VA_ARGS__))

/* ---- memory ---- */
#define GFP_KERNEL		0u
#define GFP_ATOMIC		1u
#define __GFP_ZERO		2u
static inline void *kmalloc(size_t n, gfp_t g) { (void)g; return malloc(n); }
static inline void *kzalloc(size_t n, gfp_t g) { (void)g; return calloc(1, n); }
static inline void *kcalloc(size_t n, size_t s, gfp_t g)
{
	(void)g;
	return calloc(n, s);
}

static inline void *kvcalloc(size_t n, size_t s, gfp_t g)
{
	(void)g;
	return calloc(n, s);
}

static inline void kfree(const void *p) { free((void *)p); }
static inline void kvfree(const void *p) { free((void *)p); }
static inline void *vmalloc_user(unsigned long n) { return calloc(1, n); }
static inline void vfree(const void *p) { free((void *)p); }

struct page *alloc_page(gfp_t g);
void put_page(struct page *page);

/* ---- locks (one thread) and atomics ---- */
typedef struct { int unused; } spinlock_t;
struct mutex { int unused; };
#define spin_lock_init(l)		((void)(l))
#define spin_lock(l)			((void)(l))
#define spin_unlock(l)			((void)(l))
#define spin_lock_bh(l)			((void)(l))
#define spin_unlock_bh(l)		((void)(l))
#define spin_lock_irqsave(l, f)		((void)(l), (f) = 0)
#define spin_unlock_irqrestore(l, f)	((void)(l), (void)(f))

typedef struct { int counter; } atomic_t;
typedef struct { s64 counter; } atomic64_t;
typedef struct { atomic_t refs; } refcount_t;
#define atomic_inc_return(a)		(++(a)->counter)
#define atomic64_set(a, v)		((a)->counter = (v))
#define atomic64_inc(a)			((a)->counter++)
#define atomic64_add(v, a)		((a)->counter += (v))
#define atomic64_read(a)		((a)->counter)
#define refcount_set(r, v)		((r)->refs.counter = (v))
#define refcount_inc(r)			((r)->refs.counter++)
#define refcount_dec_and_test(r)	(--(r)->refs.counter == 0)

struct completion { unsigned int done; };
#define init_completion(c)		((c)->done = 0)
#define complete(c)			((c)->done++)

static inline void set_bit(long nr, unsigned long *a) { *a |= 1UL << nr; }
static inline void clear_bit(long nr, unsigned long *a) { *a &= ~(1UL << nr); }
static inline bool test_bit(long nr, const unsigned long *a)
{
	return *a >> nr & 1;
}

static inline bool test_and_set_bit(long nr, unsigned long *a)
{
	bool old = test_bit(nr, a);

	set_bit(nr, a);
	return old;
}

static inline bool test_and_clear_bit(long nr, unsigned long *a)
{
	bool old = test_bit(nr, a);

	clear_bit(nr, a);
	return old;
}

#define test_and_set_bit_lock(nr, a)	test_and_set_bit(nr, a)
#define clear_bit_unlock(nr, a)		clear_bit(nr, a)
#define for_each_set_bit(bit, addr, size) \
	for ((bit) = 0; (bit) < (size); (bit)++) \
		if (test_bit(bit, addr))

/* Contexts: the fixture says which one the driver runs in. */
extern bool kstub_in_softirq;
#define in_serving_softirq()	kstub_in_softirq
#define in_task()		(!kstub_in_softirq)
#define in_hardirq()		false
#define irqs_disabled()		false

/* ---- lists ---- */
struct list_head { struct list_head *next, *prev; };
#define LIST_HEAD(n)		struct list_head n = { &(n), &(n) }
static inline void INIT_LIST_HEAD(struct list_head *l)
{
	l->next = l;
	l->prev = l;
}

static inline bool list_empty(const struct list_head *l)
{
	return l->next == l;
}

static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void list_del_init(struct list_head *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	INIT_LIST_HEAD(e);
}

static inline void list_splice_init(struct list_head *l, struct list_head *h)
{
	if (list_empty(l))
		return;
	l->next->prev = h;
	l->prev->next = h->next;
	h->next->prev = l->prev;
	h->next = l->next;
	INIT_LIST_HEAD(l);
}

#define list_entry(p, t, m)	container_of(p, t, m)
#define list_for_each_entry_safe(pos, n, head, member)			\
	for (pos = list_entry((head)->next, __typeof__(*pos), member),	\
	     n = list_entry(pos->member.next, __typeof__(*pos), member);	\
	     &pos->member != (head);					\
	     pos = n, n = list_entry(n->member.next, __typeof__(*n), member))

/* ---- time, timers, work (run by the fixture) ---- */
#define HZ			250
#define NSEC_PER_USEC		1000ULL
#define NSEC_PER_MSEC		1000000ULL
extern unsigned long jiffies;
extern u64 kstub_ns;
#define time_after(a, b)	((long)((b) - (a)) < 0)
#define time_before(a, b)	time_after(b, a)
#define time_after_eq(a, b)	((long)((a) - (b)) >= 0)
static inline u64 ktime_get_ns(void) { return kstub_ns; }
static inline unsigned long msecs_to_jiffies(unsigned int m)
{
	return DIV_ROUND_UP((unsigned long)m * HZ, 1000);
}

static inline unsigned long usecs_to_jiffies(unsigned int u)
{
	return DIV_ROUND_UP((unsigned long)u * HZ, 1000000);
}

static inline unsigned long nsecs_to_jiffies(u64 n)
{
	return n * HZ / 1000000000ULL;
}

static inline unsigned int jiffies_to_msecs(unsigned long j)
{
	return j * 1000 / HZ;
}

/* Sleeping lets time pass: a loop bounded by jiffies ends (transport.c). */
static inline void usleep_range(unsigned long min, unsigned long max)
{
	(void)max;
	kstub_ns += min * NSEC_PER_USEC;
	jiffies += usecs_to_jiffies(min);
}

struct timer_list {
	void (*function)(struct timer_list *t);
	unsigned long expires;
	bool pending;
};

#define from_timer(var, t, field)	container_of(t, __typeof__(*var), field)
static inline void timer_setup(struct timer_list *t,
			       void (*fn)(struct timer_list *), unsigned int f)
{
	(void)f;
	t->function = fn;
	t->pending = false;
	t->expires = 0;
}

static inline bool timer_pending(const struct timer_list *t)
{
	return t->pending;
}

static inline int mod_timer(struct timer_list *t, unsigned long expires)
{
	bool was = t->pending;

	t->expires = expires;
	t->pending = true;
	return was;
}

static inline int timer_reduce(struct timer_list *t, unsigned long expires)
{
	if (t->pending && !time_before(expires, t->expires))
		return 1;
	return mod_timer(t, expires);
}

static inline int timer_delete(struct timer_list *t)
{
	bool was = t->pending;

	t->pending = false;
	return was;
}

#define timer_delete_sync(t)	timer_delete(t)

struct work_struct {
	void (*func)(struct work_struct *w);
	bool pending;
};

struct workqueue_struct { int unused; };
#define WQ_HIGHPRI		BIT(4)
#define WQ_MEM_RECLAIM		BIT(3)
struct workqueue_struct *alloc_workqueue(const char *fmt, unsigned int flags,
					 int max_active, ...);
void destroy_workqueue(struct workqueue_struct *wq);
#define INIT_WORK(w, f)		((w)->func = (f), (w)->pending = false)
static inline bool queue_work(struct workqueue_struct *wq,
			      struct work_struct *w)
{
	bool was = w->pending;

	(void)wq;
	w->pending = true;
	return !was;
}

/* The system workqueue: the fixture runs what is pending. */
#define schedule_work(w)	queue_work(NULL, w)

static inline bool cancel_work_sync(struct work_struct *w)
{
	bool was = w->pending;

	w->pending = false;
	return was;
}

/* ---- skb: a linear buffer of exactly the frame ---- */
struct sk_buff {
	u8 *data;
	unsigned int len;
	char cb[48] __aligned(8);
};

struct sk_buff_head { struct sk_buff *next, *prev; };
void kfree_skb(struct sk_buff *skb);
#define consume_skb(skb)	kfree_skb(skb)

/* ---- ib_core ---- */
#define IB_DEVICE_PORT_ACTIVE_EVENT	(1ULL << 6)
#define IB_DEVICE_SYS_IMAGE_GUID	(1ULL << 7)
#define IB_DEVICE_RC_RNR_NAK_GEN	(1ULL << 8)
#define IB_DEVICE_SRQ_RESIZE		(1ULL << 13)
#define IB_DEVICE_MEM_WINDOW		(1ULL << 17)
#define IB_DEVICE_MEM_MGT_EXTENSIONS	(1ULL << 21)
#define IB_DEVICE_MEM_WINDOW_TYPE_2B	(1ULL << 24)

enum ib_access_flags {
	IB_ACCESS_LOCAL_WRITE = 1,
	IB_ACCESS_REMOTE_WRITE = 2,
	IB_ACCESS_REMOTE_READ = 4,
	IB_ACCESS_REMOTE_ATOMIC = 8,
	IB_ACCESS_MW_BIND = 16,
};

enum ib_qp_type { IB_QPT_SMI, IB_QPT_GSI, IB_QPT_RC, IB_QPT_UC, IB_QPT_UD };
/* IB-mode port state, as port.h reads it (values from ib_verbs.h). */
enum ib_port_state { IB_PORT_NOP, IB_PORT_DOWN, IB_PORT_INIT, IB_PORT_ARMED,
		     IB_PORT_ACTIVE, IB_PORT_ACTIVE_DEFER };
#define IB_PORT_PHYS_STATE_POLLING	2
#define IB_PORT_PHYS_STATE_LINK_UP	5
/* PortInfo.CapabilityMask bits the SMA reads */
#define IB_PORT_SM			BIT(1)
#define IB_PORT_SM_DISABLED		BIT(10)
enum ib_port_width { IB_WIDTH_1X = 1, IB_WIDTH_4X = 2 };
enum ib_port_speed { IB_SPEED_SDR = 1, IB_SPEED_DDR = 2, IB_SPEED_QDR = 4 };
enum rdma_node_type { RDMA_NODE_IB_CA = 1 };
enum ib_qp_state {
	IB_QPS_RESET, IB_QPS_INIT, IB_QPS_RTR, IB_QPS_RTS, IB_QPS_SQD,
	IB_QPS_SQE, IB_QPS_ERR
};

enum ib_qp_attr_mask {
	IB_QP_STATE = 1,
	IB_QP_ACCESS_FLAGS = 1 << 3,
	IB_QP_PKEY_INDEX = 1 << 4,
	IB_QP_QKEY = 1 << 6,
	IB_QP_PATH_MTU = 1 << 8,
	IB_QP_TIMEOUT = 1 << 9,
	IB_QP_RETRY_CNT = 1 << 10,
	IB_QP_RNR_RETRY = 1 << 11,
	IB_QP_RQ_PSN = 1 << 12,
	IB_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	IB_QP_MIN_RNR_TIMER = 1 << 15,
	IB_QP_SQ_PSN = 1 << 16,
	IB_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	IB_QP_DEST_QPN = 1 << 20,
};

enum ib_wc_status {
	IB_WC_SUCCESS, IB_WC_LOC_LEN_ERR, IB_WC_LOC_QP_OP_ERR,
	IB_WC_LOC_EEC_OP_ERR, IB_WC_LOC_PROT_ERR, IB_WC_WR_FLUSH_ERR,
	IB_WC_MW_BIND_ERR, IB_WC_BAD_RESP_ERR, IB_WC_LOC_ACCESS_ERR,
	IB_WC_REM_INV_REQ_ERR, IB_WC_REM_ACCESS_ERR, IB_WC_REM_OP_ERR,
	IB_WC_RETRY_EXC_ERR, IB_WC_RNR_RETRY_EXC_ERR, IB_WC_LOC_RDD_VIOL_ERR,
	IB_WC_REM_INV_RD_REQ_ERR, IB_WC_REM_ABORT_ERR, IB_WC_INV_EECN_ERR,
	IB_WC_INV_EEC_STATE_ERR, IB_WC_FATAL_ERR, IB_WC_RESP_TIMEOUT_ERR,
	IB_WC_GENERAL_ERR
};

enum ib_wc_opcode {
	IB_WC_SEND = IB_UVERBS_WC_SEND,
	IB_WC_RDMA_WRITE = IB_UVERBS_WC_RDMA_WRITE,
	IB_WC_RDMA_READ = IB_UVERBS_WC_RDMA_READ,
	IB_WC_COMP_SWAP = IB_UVERBS_WC_COMP_SWAP,
	IB_WC_FETCH_ADD = IB_UVERBS_WC_FETCH_ADD,
	IB_WC_BIND_MW = IB_UVERBS_WC_BIND_MW,
	IB_WC_LOCAL_INV = IB_UVERBS_WC_LOCAL_INV,
	IB_WC_LSO = IB_UVERBS_WC_TSO,
	IB_WC_ATOMIC_WRITE = 9,
	IB_WC_REG_MR,
	IB_WC_MASKED_COMP_SWAP,
	IB_WC_MASKED_FETCH_ADD,
	IB_WC_FLUSH = 8,
	IB_WC_RECV = 1 << 7,
	IB_WC_RECV_RDMA_WITH_IMM,
};

enum ib_wr_opcode { IB_WR_REG_MR = 0x20 };

enum ib_event_type {
	IB_EVENT_CQ_ERR, IB_EVENT_QP_FATAL, IB_EVENT_QP_REQ_ERR,
	IB_EVENT_QP_ACCESS_ERR, IB_EVENT_PORT_ACTIVE, IB_EVENT_PORT_ERR,
	IB_EVENT_LID_CHANGE, IB_EVENT_PKEY_CHANGE, IB_EVENT_SM_CHANGE,
	IB_EVENT_CLIENT_REREGISTER, IB_EVENT_GID_CHANGE
};

enum ib_mtu {
	IB_MTU_256 = 1, IB_MTU_512, IB_MTU_1024, IB_MTU_2048, IB_MTU_4096
};

enum ib_mw_type { IB_MW_TYPE_1 = 1, IB_MW_TYPE_2 = 2 };
enum ib_cq_notify_flags { IB_CQ_SOLICITED = 1, IB_CQ_NEXT_COMP = 2 };
enum ib_mr_type { IB_MR_TYPE_MEM_REG };
enum ib_srq_attr_mask { IB_SRQ_MAX_WR = 1 };
enum rdma_link_layer { IB_LINK_LAYER_ETHERNET = 2 };
enum rdma_network_type {
	RDMA_NETWORK_IB, RDMA_NETWORK_ROCE_V1, RDMA_NETWORK_IPV4,
	RDMA_NETWORK_IPV6
};

const char *ib_wc_status_msg(enum ib_wc_status status);
const char *ib_event_msg(enum ib_event_type event);

union ib_gid {
	u8 raw[16];
	struct {
		__be64 subnet_prefix;
		__be64 interface_id;
	} global;
};

/* The GRH as ib_core lays it out (trap.c copies its GIDs). */
struct ib_grh {
	__be32 version_tclass_flow;
	__be16 paylen;
	u8 next_hdr;
	u8 hop_limit;
	union ib_gid sgid;
	union ib_gid dgid;
};

#define IB_DEVICE_NODE_DESC_MAX	64
struct ib_device {
	char node_desc[IB_DEVICE_NODE_DESC_MAX];
	__be64 node_guid;
};
struct ib_pd { struct ib_device *device; };
struct ib_cq { struct ib_device *device; };
struct ib_srq { struct ib_device *device; };
struct ib_ah { struct ib_device *device; };
struct ib_mr { struct ib_device *device; struct ib_pd *pd; u32 lkey, rkey; };
struct ib_mw { struct ib_device *device; struct ib_pd *pd; u32 rkey; };
struct ib_ucontext { struct ib_device *device; };
struct ib_event;
struct ib_qp {
	struct ib_device *device;
	struct ib_pd *pd;
	u32 qp_num;
	void (*event_handler)(struct ib_event *e, void *ctx);
	void *qp_context;
};

struct ib_event {
	struct ib_device *device;
	union { struct ib_qp *qp; } element;
	enum ib_event_type event;
};

/* ---- user mmap entries: queue.c's user rings, never used here ---- */
struct rdma_user_mmap_entry { u64 start_pgoff; };
struct vm_area_struct { unsigned long vm_flags; unsigned long vm_page_prot; };
#define VM_WRITE		2UL
#define PHYS_PFN(x)		((unsigned long)((x) >> PAGE_SHIFT))
#define pgprot_noncached(p)	(p)
#define rdma_udata_to_drv_context(udata, type, member) \
	({ (void)(udata); (type *)NULL; })
int rdma_user_mmap_entry_insert(struct ib_ucontext *uc,
				struct rdma_user_mmap_entry *e, size_t len);
u64 rdma_user_mmap_get_offset(struct rdma_user_mmap_entry *e);
void rdma_user_mmap_entry_remove(struct rdma_user_mmap_entry *e);
struct rdma_user_mmap_entry *
rdma_user_mmap_entry_get(struct ib_ucontext *uc, struct vm_area_struct *vma);
void rdma_user_mmap_entry_put(struct rdma_user_mmap_entry *e);
int rdma_user_mmap_io(struct ib_ucontext *uc, struct vm_area_struct *vma,
		      unsigned long pfn, unsigned long size, unsigned long prot,
		      struct rdma_user_mmap_entry *e);
int remap_vmalloc_range(struct vm_area_struct *vma, void *addr,
			unsigned long pgoff);

/* ---- what cnuas_net_aux.h and the structs need ---- */
struct auxiliary_device { int unused; };
struct iosys_map { void *vaddr; bool is_iomem; };
struct xarray { int unused; };
struct page;
struct ib_udata;
struct ib_recv_wr;
struct ib_send_wr;
struct ib_wc;
struct ib_device_attr;
struct ib_port_attr;
struct ib_port_immutable;
struct ib_cq_init_attr;
struct ib_qp_attr;
struct ib_qp_init_attr;
struct ib_srq_attr;
struct ib_srq_init_attr;
struct ib_dmah;
struct rdma_ah_attr;
struct rdma_ah_init_attr;
struct rdma_hw_stats;
struct scatterlist;
struct net_device;
struct device;
struct uverbs_attr_bundle;

#endif
