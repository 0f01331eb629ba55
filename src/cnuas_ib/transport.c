// SPDX-License-Identifier: GPL-2.0
/*
 * The transport's device and QP life cycle: the work item that runs a
 * QP's requester, READ responses and flushes, its timers, parking on a
 * full TX ring, and the hooks qp.c / post.c call.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "cnuas_ib.h"
#include "wire.h"

int cnuas_ib_transport_dev_init(struct cnuas_ib_dev *cdev)
{
	struct cnuas_ib_tdev *td = &cdev->tdev;
	int i;

	spin_lock_init(&td->park_lock);
	INIT_LIST_HEAD(&td->parked);
	spin_lock_init(&td->rx_run_lock);
	INIT_LIST_HEAD(&td->rx_run);
	for (i = 0; i < CNUAS_STAT_NUM; i++)
		atomic64_set(&td->stats[i], 0);
	cnuas_ib_loop_init(cdev);
	/* Without it frames are copied (net.c): no reason to fail. */
	td->zero_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	td->wq = alloc_workqueue("cnuas_ib", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (td->wq)
		return 0;
	if (td->zero_page)
		put_page(td->zero_page);
	td->zero_page = NULL;
	return -ENOMEM;
}

void cnuas_ib_transport_dev_cleanup(struct cnuas_ib_dev *cdev)
{
	if (cdev->tdev.wq)
		destroy_workqueue(cdev->tdev.wq);
	cdev->tdev.wq = NULL;
	cnuas_ib_loop_cleanup(cdev);
	/* Frames still holding it keep their own reference. */
	if (cdev->tdev.zero_page)
		put_page(cdev->tdev.zero_page);
	cdev->tdev.zero_page = NULL;
}

void cnuas_ib_tqp_schedule(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;

	if (test_bit(CNUAS_TQP_DYING, &t->flags))
		return;
	set_bit(CNUAS_TQP_RUN, &t->flags);
	/* Pairs with the barrier in cnuas_ib_tqp_runner_end(). */
	smp_mb__after_atomic();
	if (!test_bit(CNUAS_TQP_RUNNER, &t->flags))
		queue_work(qp->cdev->tdev.wq, &t->work);
}

bool cnuas_ib_tqp_runner_begin(struct cnuas_ib_qp *qp)
{
	return !test_and_set_bit_lock(CNUAS_TQP_RUNNER, &qp->t.flags);
}

/* Wait for TX ring room: cnuas_ib_tx_wake() schedules us again. */
void cnuas_ib_tqp_park(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tdev *td = &qp->cdev->tdev;
	unsigned long fl;

	spin_lock_irqsave(&td->park_lock, fl);
	if (list_empty(&qp->t.park) && !test_bit(CNUAS_TQP_DYING, &qp->t.flags))
		list_add_tail(&qp->t.park, &td->parked);
	spin_unlock_irqrestore(&td->park_lock, fl);
}

void cnuas_ib_tx_wake(struct cnuas_ib_dev *cdev)
{
	struct cnuas_ib_tdev *td = &cdev->tdev;
	struct cnuas_ib_tqp *t, *n;
	unsigned long fl;

	spin_lock_irqsave(&td->park_lock, fl);
	list_for_each_entry_safe(t, n, &td->parked, park) {
		list_del_init(&t->park);
		cnuas_ib_tqp_schedule(container_of(t, struct cnuas_ib_qp, t));
	}
	spin_unlock_irqrestore(&td->park_lock, fl);
}

/*
 * The receive path holds @qp as its runner (and a reference to it) until
 * the batch ends: the packets of one batch make one requester run and at
 * most one ACK per QP.
 */
void cnuas_ib_rx_defer(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tdev *td = &qp->cdev->tdev;

	spin_lock(&td->rx_run_lock);
	list_add_tail(&qp->t.rx_run, &td->rx_run);
	spin_unlock(&td->rx_run_lock);
}

void cnuas_ib_rx_batch_end(struct cnuas_ib_dev *cdev)
{
	struct cnuas_ib_tdev *td = &cdev->tdev;
	struct cnuas_ib_tqp *t, *n;
	LIST_HEAD(run);

	spin_lock(&td->rx_run_lock);
	list_splice_init(&td->rx_run, &run);
	spin_unlock(&td->rx_run_lock);
	list_for_each_entry_safe(t, n, &run, rx_run) {
		struct cnuas_ib_qp *qp = container_of(t, struct cnuas_ib_qp, t);

		list_del_init(&t->rx_run);
		cnuas_ib_tqp_runner_end(qp);
		cnuas_ib_qp_put(qp);
	}
	/* From now on ACKs sent from ->rx may wait for this doorbell. */
	WRITE_ONCE(td->rx_batching, true);
	cnuas_net_aux_flush(cdev->adev);
}

int cnuas_ib_tqp_xmit(struct cnuas_ib_qp *qp, struct sk_buff *skb, bool more)
{
	int err = cnuas_ib_xmit(qp->cdev, skb, more);

	if (err != -EBUSY)
		return err;
	cnuas_ib_tqp_park(qp);
	/* The ring may have drained before we parked. */
	err = cnuas_ib_xmit(qp->cdev, skb, more);
	if (err == -EBUSY)
		qp->t.pending = skb;
	return err;
}

/*
 * A fatal error found under the lock: the transport stops at once, the
 * verbs state follows on unlock (cnuas_ib_qp_error() calls back into
 * cnuas_ib_transport_qp_modify()).
 */
void cnuas_ib_tqp_fatal(struct cnuas_ib_qp *qp, enum ib_event_type ev)
{
	struct cnuas_ib_tqp *t = &qp->t;

	if (t->state == IB_QPS_ERR)
		return;
	cnuas_dbg_qp(qp, "transport error: state %s -> ERR, event %s\n",
		     cnuas_ib_qp_state_name(t->state),
		     ev ? ib_event_msg(ev) : "none");
	t->state = IB_QPS_ERR;
	t->fatal = true;
	t->fatal_event = ev;
	cnuas_ib_tqp_schedule(qp);
}

static bool cnuas_tqp_take_fatal(struct cnuas_ib_tqp *t,
				 enum ib_event_type *ev)
{
	if (!t->fatal)
		return false;
	t->fatal = false;
	*ev = t->fatal_event;
	return true;
}

void cnuas_ib_tqp_unlock_bh(struct cnuas_ib_qp *qp)
	__releases(&qp->t.lock)
{
	enum ib_event_type ev;
	bool fatal = cnuas_tqp_take_fatal(&qp->t, &ev);

	spin_unlock_bh(&qp->t.lock);
	if (fatal)
		cnuas_ib_qp_error(qp, ev);
}

void cnuas_ib_tqp_unlock(struct cnuas_ib_qp *qp)
	__releases(&qp->t.lock)
{
	enum ib_event_type ev;
	bool fatal = cnuas_tqp_take_fatal(&qp->t, &ev);

	spin_unlock(&qp->t.lock);
	if (fatal)
		cnuas_ib_qp_error(qp, ev);
}

static void cnuas_tqp_flush(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;

	timer_delete(&t->retry_timer);
	timer_delete(&t->rnr_timer);
	timer_delete(&t->ack_timer);
	if (t->pending) {
		kfree_skb(t->pending);
		t->pending = NULL;
	}
	clear_bit(CNUAS_TQP_SEND_ACK, &t->flags);
	cnuas_ib_req_flush(qp);
	cnuas_ib_resp_flush(qp);
	t->flushed = true;
}

/* One bounded pass over the QP's work; true: budget used up, run again. */
static bool cnuas_tqp_run(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;
	int budget = CNUAS_IB_TX_BUDGET, req_sent = 0;
	bool again = false, ring_full;

	spin_lock_bh(&t->lock);
	if (test_and_clear_bit(CNUAS_TQP_MODIFIED, &t->flags))
		cnuas_ib_transport_qp_modify_locked(qp, 0);
	if (t->state == IB_QPS_ERR) {
		cnuas_tqp_flush(qp);
		goto out;
	}
	if (t->state == IB_QPS_RESET || t->state == IB_QPS_INIT)
		goto out;
	ring_full = t->pending;
	if (t->pending) {
		struct sk_buff *skb = t->pending;

		t->pending = NULL;
		if (cnuas_ib_tqp_xmit(qp, skb, true) == -EBUSY)
			goto out;
	}
	budget -= cnuas_ib_resp_run(qp, budget);
	/*
	 * After a full TX ring an ACK that may not wait goes before the
	 * requests: a requester that keeps the ring full would leave it
	 * behind its frames until its window closed.
	 */
	if (ring_full && !t->pending &&
	    test_bit(CNUAS_TQP_ACK_NOW, &t->flags))
		budget -= cnuas_ib_resp_ack_run(qp, false);
	if (t->pending)
		goto out;
	if (test_and_clear_bit(CNUAS_TQP_RNR, &t->flags) && t->rnr_wait) {
		cnuas_dbg_qp(qp, "RNR wait over: resend from PSN %u\n",
			     t->rnr_psn);
		t->rnr_wait = false;
		t->progress_j = jiffies;
		cnuas_ib_req_rewind(qp, t->rnr_psn);
	}
	if (test_and_clear_bit(CNUAS_TQP_RETRY, &t->flags))
		cnuas_ib_req_retry_timeout(qp);
	if (budget > 0)
		req_sent = cnuas_ib_req_run(qp, budget);
	budget -= req_sent;
	budget -= cnuas_ib_resp_ack_run(qp, req_sent > 0);
	again = budget <= 0 && !t->pending;
out:
	if (cnuas_ib_req_doorbell_hint(qp))
		again = true;
	cnuas_ib_tqp_unlock_bh(qp);
	cnuas_net_aux_flush(qp->cdev->adev);
	return again;
}

/* Passes an inline runner makes before it leaves the rest to the worker. */
#define CNUAS_IB_INLINE_PASSES	2

void cnuas_ib_tqp_runner_end(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;
	int passes = CNUAS_IB_INLINE_PASSES;

	while (passes-- && test_and_clear_bit(CNUAS_TQP_RUN, &t->flags))
		if (cnuas_tqp_run(qp))
			set_bit(CNUAS_TQP_RUN, &t->flags);
	clear_bit_unlock(CNUAS_TQP_RUNNER, &t->flags);
	/* Work that came while we held the QP and that we did not run. */
	smp_mb__after_atomic();
	if (test_bit(CNUAS_TQP_RUN, &t->flags) &&
	    !test_bit(CNUAS_TQP_DYING, &t->flags))
		queue_work(qp->cdev->tdev.wq, &t->work);
}

static void cnuas_tqp_work(struct work_struct *work)
{
	struct cnuas_ib_tqp *t = container_of(work, struct cnuas_ib_tqp, work);
	struct cnuas_ib_qp *qp = container_of(t, struct cnuas_ib_qp, t);

	/* A runner holds the QP: it sees RUN before it lets go. */
	if (cnuas_ib_tqp_runner_begin(qp))
		cnuas_ib_tqp_runner_end(qp);
}

/*
 * The timer stays armed while ACKs move the deadline on (req.c), so it
 * mostly fires early: then it only goes again, here, rather than wake the
 * worker for nothing (a context switch of the guest, every RTO of a
 * ping-pong). timer_reduce(): a deadline set meanwhile that comes earlier
 * wins.
 */
static void cnuas_tqp_retry_timer(struct timer_list *tl)
{
	struct cnuas_ib_tqp *t = timer_container_of(t, tl, retry_timer);
	unsigned long due = READ_ONCE(t->retry_due);

	if (time_before(jiffies, due)) {
		if (!test_bit(CNUAS_TQP_DYING, &t->flags))
			timer_reduce(tl, due);
		return;
	}
	set_bit(CNUAS_TQP_RETRY, &t->flags);
	cnuas_ib_tqp_schedule(container_of(t, struct cnuas_ib_qp, t));
}

static void cnuas_tqp_rnr_timer(struct timer_list *tl)
{
	struct cnuas_ib_tqp *t = timer_container_of(t, tl, rnr_timer);

	set_bit(CNUAS_TQP_RNR, &t->flags);
	cnuas_ib_tqp_schedule(container_of(t, struct cnuas_ib_qp, t));
}

/*
 * A held ACK waited long enough (resp.c): the worker sends it. The timer
 * is not deleted when the ACK leaves with a request, so it mostly finds
 * none owed; then ACK_NOW would only stop the next hold. A hold that
 * began just before this tick gets one more: sent alone now, the ACK
 * would cost both nodes a batch of its own, in a ping-pong whose answer
 * is some 100 us away.
 */
static void cnuas_tqp_ack_timer(struct timer_list *tl)
{
	struct cnuas_ib_tqp *t = timer_container_of(t, tl, ack_timer);
	u64 since = READ_ONCE(t->ack_hold_ns);

	if (!test_bit(CNUAS_TQP_SEND_ACK, &t->flags))
		return;
	if (since && ktime_get_ns() - since < CNUAS_IB_ACK_HOLD_MISS_NS) {
		if (!test_bit(CNUAS_TQP_DYING, &t->flags))
			mod_timer(&t->ack_timer, jiffies + 1);
		return;
	}
	set_bit(CNUAS_TQP_ACK_NOW, &t->flags);
	cnuas_ib_tqp_schedule(container_of(t, struct cnuas_ib_qp, t));
}

int cnuas_ib_transport_qp_init(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;
	int err;

	memset(t, 0, sizeof(*t));
	spin_lock_init(&t->lock);
	INIT_WORK(&t->work, cnuas_tqp_work);
	timer_setup(&t->retry_timer, cnuas_tqp_retry_timer, 0);
	timer_setup(&t->rnr_timer, cnuas_tqp_rnr_timer, 0);
	timer_setup(&t->ack_timer, cnuas_tqp_ack_timer, 0);
	cnuas_ib_resp_hold_reset(t);
	INIT_LIST_HEAD(&t->park);
	INIT_LIST_HEAD(&t->rx_run);
	t->state = IB_QPS_RESET;
	cnuas_ib_req_window_init(t);
	/* UD: the port's MTU (qp.c sets it); RC, UC: set at RTR. */
	t->mtu = qp->attr.mtu ? clamp_t(u32, qp->attr.mtu, 256, 4096) : 4096;
	t->qkey = qp->attr.qkey;
	t->pkey_index = qp->attr.pkey_index;

	err = cnuas_ib_req_init(qp);
	if (err)
		return err;
	err = cnuas_ib_resp_init(qp);
	if (err)
		cnuas_ib_req_cleanup(qp);
	return err;
}

u16 cnuas_ib_tx_pkey(struct cnuas_ib_qp *qp, const struct cnuas_send_wqe *w)
{
	if (qp->type == IB_QPT_SMI)
		return CNUAS_IB_DEFAULT_PKEY;
	return cnuas_ib_pkey(qp->cdev, qp->type == IB_QPT_GSI && w ?
			     w->wr.ud.pkey_index : qp->t.pkey_index);
}

/* 4.096 us * 2^timeout, never below a floor TCG guests can meet. */
static unsigned long cnuas_timeout_jiffies(u8 timeout)
{
	u64 ns;

	if (!timeout)
		return 0;
	ns = 4096ULL << min_t(u8, timeout, 31);
	return max(nsecs_to_jiffies(ns),
		   msecs_to_jiffies(CNUAS_IB_MIN_TIMEOUT_MS));
}

/* Take the new state and attributes; @mask 0: state only. */
void cnuas_ib_transport_qp_modify_locked(struct cnuas_ib_qp *qp, int mask)
{
	struct cnuas_ib_qp_attr *a = &qp->attr;
	enum ib_qp_state new = READ_ONCE(qp->state);
	struct cnuas_ib_tqp *t = &qp->t;

	if (new == IB_QPS_ERR || new == IB_QPS_RESET)
		cnuas_ib_resp_ack_release(qp, false);
	if (mask & IB_QP_PATH_MTU)
		t->mtu = clamp_t(u32, a->mtu, 256, 4096);
	if (mask & IB_QP_DEST_QPN)
		t->dest_qpn = a->dest_qpn & CNUAS_QPN_MASK;
	if (mask & IB_QP_QKEY)
		t->qkey = a->qkey;
	if (mask & IB_QP_PKEY_INDEX)
		t->pkey_index = a->pkey_index;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		t->max_rd_atomic = a->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		t->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IB_QP_ACCESS_FLAGS)
		t->access = a->access;
	if (mask & IB_QP_MIN_RNR_TIMER)
		t->min_rnr_timer = a->min_rnr_timer & CNUAS_AETH_VALUE_MASK;
	if (mask & IB_QP_TIMEOUT)
		t->timeout_j = cnuas_timeout_jiffies(a->timeout);
	if (mask & IB_QP_RETRY_CNT) {
		t->retry_cnt = min_t(u8, a->retry_cnt, 7);
		t->retry_left = t->retry_cnt;
	}
	if (mask & IB_QP_RNR_RETRY) {
		t->rnr_retry = min_t(u8, a->rnr_retry, 7);
		t->rnr_left = t->rnr_retry;
	}
	if (mask & IB_QP_SQ_PSN) {
		t->req_psn = a->sq_psn & CNUAS_PSN_MASK;
		t->una = t->req_psn;
		t->psn_hi = t->req_psn;
	}
	if (mask & IB_QP_RQ_PSN)
		t->epsn = a->rq_psn & CNUAS_PSN_MASK;

	if (new == IB_QPS_RESET && t->state != IB_QPS_RESET) {
		timer_delete(&t->retry_timer);
		timer_delete(&t->rnr_timer);
		if (t->pending) {
			kfree_skb(t->pending);
			t->pending = NULL;
		}
		clear_bit(CNUAS_TQP_RETRY, &t->flags);
		clear_bit(CNUAS_TQP_RNR, &t->flags);
		clear_bit(CNUAS_TQP_SEND_ACK, &t->flags);
		clear_bit(CNUAS_TQP_ACK_NOW, &t->flags);
		cnuas_ib_req_reset(qp);
		cnuas_ib_resp_reset(qp);
		t->flushed = false;
	}
	if (new == IB_QPS_RTR && t->state != IB_QPS_RTR)
		cnuas_ib_resp_reset(qp);
	/* Once the transport failed, only RESET brings it back. */
	if (t->state == IB_QPS_ERR && new != IB_QPS_RESET)
		new = IB_QPS_ERR;
	t->state = new;
	if (new == IB_QPS_ERR || new == IB_QPS_RTS)
		cnuas_ib_tqp_schedule(qp);
}

void cnuas_ib_transport_qp_modify(struct cnuas_ib_qp *qp, int mask,
				  enum ib_qp_state old_state)
{
	struct cnuas_ib_tqp *t = &qp->t;

	/* Our lock is BH-only: from hard IRQ context let the work do it. */
	if (in_hardirq() || irqs_disabled()) {
		set_bit(CNUAS_TQP_MODIFIED, &t->flags);
		cnuas_ib_tqp_schedule(qp);
		return;
	}
	spin_lock_bh(&t->lock);
	cnuas_ib_transport_qp_modify_locked(qp, mask);
	spin_unlock_bh(&t->lock);
	cnuas_net_aux_flush(qp->cdev->adev);	/* a released ACK */
}

/*
 * The ACK a dying QP owes goes out even behind a full TX ring: it waits
 * for room a while (the device drains the ring on its own). A client
 * that destroys its QPs on its last receive while its own sends fill the
 * ring (ibv_srq_pingpong -q 4 -s 1M) left that ACK behind its queued
 * request and its peer retrying into nothing (RETRY_EXC_ERR).
 */
static void cnuas_tqp_ack_before_death(struct cnuas_ib_qp *qp)
{
	unsigned long end = jiffies + msecs_to_jiffies(CNUAS_IB_ACK_RELEASE_MS);
	struct cnuas_ib_tqp *t = &qp->t;
	struct sk_buff *skb;
	bool waits;

	spin_lock_bh(&t->lock);
	waits = cnuas_ib_resp_ack_release(qp, true);
	set_bit(CNUAS_TQP_DYING, &t->flags);
	spin_unlock_bh(&t->lock);
	cnuas_net_aux_flush(qp->cdev->adev);
	while (waits && time_before(jiffies, end)) {
		usleep_range(50, 100);
		spin_lock_bh(&t->lock);
		skb = t->pending;
		t->pending = NULL;
		if (skb)
			cnuas_ib_tqp_xmit(qp, skb, true);
		else if (test_bit(CNUAS_TQP_SEND_ACK, &t->flags))
			cnuas_ib_resp_ack_release(qp, true);
		waits = t->pending || test_bit(CNUAS_TQP_SEND_ACK, &t->flags);
		spin_unlock_bh(&t->lock);
		cnuas_net_aux_flush(qp->cdev->adev);
	}
	if (waits)
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_ACK_RELEASE_LOST,
				  "ACK for PSN %u found no TX ring room in %d ms\n",
				  cnuas_psn_add(t->epsn, -1),
				  CNUAS_IB_ACK_RELEASE_MS);
}

void cnuas_ib_transport_qp_destroy(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tdev *td = &qp->cdev->tdev;
	struct cnuas_ib_tqp *t = &qp->t;
	unsigned long fl;

	cnuas_tqp_ack_before_death(qp);
	timer_delete_sync(&t->retry_timer);
	timer_delete_sync(&t->rnr_timer);
	timer_delete_sync(&t->ack_timer);
	cancel_work_sync(&t->work);
	spin_lock_irqsave(&td->park_lock, fl);
	list_del_init(&t->park);
	spin_unlock_irqrestore(&td->park_lock, fl);
	cancel_work_sync(&t->work);

	kfree_skb(t->pending);
	t->pending = NULL;
	cnuas_ib_pkt_pools_free(t->skb_pools, CNUAS_SKB_KINDS);
	cnuas_ib_req_cleanup(qp);
	cnuas_ib_resp_cleanup(qp);
}

void cnuas_ib_transport_sq_kick(struct cnuas_ib_qp *qp)
{
	/*
	 * A user QP's doorbell is a system call that holds no lock of ours:
	 * send from here. A kernel caller may be inside one of our
	 * completion handlers, with a transport lock held: leave it to the
	 * worker.
	 */
	if (!qp->is_user || !in_task() ||
	    test_bit(CNUAS_TQP_DYING, &qp->t.flags)) {
		cnuas_ib_tqp_schedule(qp);
		return;
	}
	set_bit(CNUAS_TQP_RUN, &qp->t.flags);
	if (cnuas_ib_tqp_runner_begin(qp))
		cnuas_ib_tqp_runner_end(qp);
	else
		cnuas_ib_tqp_schedule(qp);
}
