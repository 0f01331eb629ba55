// SPDX-License-Identifier: GPL-2.0
/*
 * Adaptive threaded NAPI.
 *
 * On a real RDMA NIC the transport runs in the adapter; here it runs in
 * the guest kernel, in our NAPI poll. A verbs application that busy-polls
 * its CQ competes for the same CPU. As long as each poll finishes its work
 * the kernel runs it on interrupt exit, ahead of the application. Once a
 * poll leaves work behind, the rest goes to ksoftirqd, which the
 * scheduler treats as just another task: against a spinning poller it
 * gets half the CPU, and the transport the poller waits for slows down
 * accordingly (Debian 12's 6.1 also defers every later softirq to
 * ksoftirqd while it is runnable).
 *
 * So while polls leave work behind and a busy poller is about
 * (cnuas_napi_poller_seen()), NAPI runs in its own kernel thread
 * (the core's threaded NAPI, dev_set_threaded()) at the highest nice
 * level: it preempts the poller whenever frames wait, the poller gets
 * the CPU whenever they do not. When the load or the poller has gone for
 * CNUAS_NAPI_IDLE_MS (cnuas_napi_load()), it goes back to softirq: waking
 * a thread for every interrupt costs a ping-pong some 10 us per round
 * trip under TCG.
 *
 * The switch happens in process context (it may create the thread and
 * takes the RTNL, as the sysfs "threaded" file does), on the high
 * priority workqueue: a normal kworker would wait behind the same poller.
 * A threaded mode the administrator chose through sysfs is left alone.
 */
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/sched.h>
#include <linux/workqueue.h>

#include "cnuas_net.h"

#define CNUAS_NAPI_IDLE_MS	100

static bool napi_thread = true;
module_param(napi_thread, bool, 0644);
MODULE_PARM_DESC(napi_thread,
		 "Run NAPI in a high-priority kernel thread while polls leave work behind (0: always softirq)");

/*
 * Has anyone read the device's RX poll page since the last check? The
 * provider reads it whenever a CQ poll finds nothing: a busy poller. A
 * receiver that sleeps (a TCP socket, a verbs client waiting for
 * completion events) leaves the CPU to softirq anyway, and the thread
 * would only add a context switch per interrupt. Without the page there
 * is no telling, and the load alone decides.
 */
static bool cnuas_napi_poller_seen(struct cnuas_net *cn)
{
	u32 polls;
	bool seen;

	if (!(cn->features & CNUAS_VNIC_F_RX_POLL))
		return true;
	if (test_bit(CNUAS_F_GONE, &cn->flags))
		return false;
	polls = cnuas_rd(cn, CNUAS_VNIC_REG_STATS + CNUAS_VNIC_STAT_RX_POLLS);
	seen = polls != cn->napi_polls;
	cn->napi_polls = polls;
	return seen;
}

static void cnuas_napi_mode_work(struct work_struct *work)
{
	struct cnuas_net *cn = container_of(to_delayed_work(work),
					    struct cnuas_net, napi_mode_work);
	unsigned long idle = msecs_to_jiffies(CNUAS_NAPI_IDLE_MS);
	bool busy = READ_ONCE(napi_thread) &&
		    time_before(jiffies, READ_ONCE(cn->napi_busy_j) + idle);
	struct net_device *nd = cn->napi_dev;

	rtnl_lock();
	/* Sample the poll reads on every run, so the next check sees fresh. */
	busy = cnuas_napi_poller_seen(cn) && busy;
	WRITE_ONCE(cn->napi_check_j, jiffies);
	if (busy && !cn->napi_threaded && !nd->threaded) {
		if (!dev_set_threaded(nd, CNUAS_NAPI_THREADED_ON)) {
			cn->napi_threaded = true;
			if (cn->napi.thread)
				set_user_nice(cn->napi.thread, MIN_NICE);
			atomic_inc(&cn->napi_thread_switches);
		}
	} else if (!busy && cn->napi_threaded) {
		/* Unless the administrator took it over meanwhile. */
		if (nd->threaded)
			dev_set_threaded(nd, CNUAS_NAPI_THREADED_OFF);
		cn->napi_threaded = false;
	}
	rtnl_unlock();
	if (cn->napi_threaded)
		queue_delayed_work(system_highpri_wq, &cn->napi_mode_work,
				   idle);
}

/*
 * Is this poll one in softirq context while NAPI is to run in its thread?
 * A NAPI that always has work never completes, so the core would keep it
 * in softirq: this poll leaves one frame of its budget unused, completes
 * and schedules NAPI again, which then wakes the thread.
 */
bool cnuas_napi_handover(struct cnuas_net *cn)
{
	return test_bit(NAPI_STATE_THREADED, &cn->napi.state) &&
	       current != READ_ONCE(cn->napi.thread);
}

/*
 * After each poll that moved @done of @budget frames. A full poll left
 * frames behind: NAPI goes to its thread if a busy poller competes for
 * the CPU (checked at most every CNUAS_NAPI_IDLE_MS). There it rarely
 * fills a poll (it runs as soon as frames come), so while it is there a
 * quarter of the budget counts as load too; otherwise a steady load
 * would send it back to softirq, fill polls there and bring it back,
 * over and over.
 */
void cnuas_napi_load(struct cnuas_net *cn, int done, int budget)
{
	if (done == budget) {
		atomic_long_inc(&cn->napi_full_polls);
		WRITE_ONCE(cn->napi_busy_j, jiffies);
		if (READ_ONCE(napi_thread) && !READ_ONCE(cn->napi_threaded) &&
		    !test_bit(NAPI_STATE_THREADED, &cn->napi.state) &&
		    time_after_eq(jiffies, READ_ONCE(cn->napi_check_j) +
				  msecs_to_jiffies(CNUAS_NAPI_IDLE_MS)))
			queue_delayed_work(system_highpri_wq,
					   &cn->napi_mode_work, 0);
	} else if (done >= budget / 4 && READ_ONCE(cn->napi_threaded)) {
		WRITE_ONCE(cn->napi_busy_j, jiffies);
	}
}

void cnuas_napi_mode_init(struct cnuas_net *cn)
{
	INIT_DELAYED_WORK(&cn->napi_mode_work, cnuas_napi_mode_work);
	cn->napi_check_j = jiffies - msecs_to_jiffies(CNUAS_NAPI_IDLE_MS);
}

/* No poll may run any more (NAPI disabled or deleted). */
void cnuas_napi_mode_stop(struct cnuas_net *cn)
{
	cancel_delayed_work_sync(&cn->napi_mode_work);
}
