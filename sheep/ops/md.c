// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Multi-disk nodes (cluster.md §2.5, dog.md §3.6): MD_INFO, MD_PLUG and
 * MD_UNPLUG, and the watch that unplugs a disk that fails.  The store
 * does the disk work (blocking, so in an I/O worker); what follows from it
 * happens here, on the main loop: a disk that goes takes its objects with
 * it, so recovery runs again within the epoch and fetches them from the
 * other nodes; a node left without a disk leaves the cluster.
 *
 * The watch looks at every disk each second (is its object directory
 * still there, on the same file system?) and, after an I/O error and
 * every 30 s, writes and syncs a probe file on each.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "proto.h"
#include "util.h"
#include "work.h"
#include "core/core.h"
#include "core/request.h"
#include "group/group.h"
#include "ops/md.h"
#include "recovery/recovery.h"
#include "state/cluster.h"
#include "store/store.h"

#define MD_INFO_ENT	4120
#define MD_INFO_NR_OFF	(MD_MAX_DISKS * MD_INFO_ENT)
#define WATCH_MS	1000
#define PROBE_MS	30000
/* replica writes that met an I/O error, waiting for the watch at most */
#define EIO_PARK_MAX	1024

/* ---- after a disk went ---- */

static struct timer leave_timer;

static void leave_now(struct timer *t)
{
	sheep_exit(1);
}

/* objects went with a disk: fetch them again, or leave without disks */
static void disks_lost(void)
{
	if (!store_md_nr()) {
		sd_emerg("no disk left: this node leaves the cluster");
		group_set_killed();
		leave_timer.fn = leave_now;
		timer_add(sys.loop, &leave_timer, 100);
		return;
	}
	if (cstate->epoch && cstate->status == SD_STATUS_OK)
		recovery_start(cstate->epoch);
}

/* ---- MD_INFO ---- */

int md_info_work(struct request *req)
{
	struct md_disk_info *d;
	int n;

	if (req->data_len < MD_INFO_NR_OFF + 8)
		return SD_RES_INVALID_PARMS;
	d = xzalloc(MD_MAX_DISKS * sizeof(*d));
	n = store_md_info(d, MD_MAX_DISKS);
	memset(req->data, 0, MD_INFO_NR_OFF + 8);
	for (int i = 0; i < n; i++) {
		uint8_t *p = (uint8_t *)req->data + (size_t)i * MD_INFO_ENT;
		uint64_t free_b = MIN(d[i].free, d[i].size);

		put_le32(p, (uint32_t)i);
		put_le64(p + 8, free_b);
		put_le64(p + 16, d[i].size - free_b);
		memcpy(p + 24, d[i].path, strnlen(d[i].path, 4095));
	}
	put_le32((uint8_t *)req->data + MD_INFO_NR_OFF, (uint32_t)n);
	req->rp.data_length = MD_INFO_NR_OFF + 8;
	free(d);
	return SD_RES_SUCCESS;
}

/* ---- MD_PLUG / MD_UNPLUG: a comma-separated list of directories ---- */

int md_change_work(struct request *req)
{
	bool plug = req->rq.opcode == SD_OP_MD_PLUG;
	char *list, *tok, *save = NULL;
	int ret = SD_RES_UNKNOWN, done = 0;

	if (!store_md_multi())
		return SD_RES_NO_SUPPORT;
	list = xzalloc(req->rq.data_length + 1);
	memcpy(list, req->data, req->rq.data_length);
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int r = plug ? store_md_plug(tok) : store_md_unplug(tok);

		if (r == SD_RES_SUCCESS)
			done++;
		else if (r != SD_RES_UNKNOWN)
			ret = r;
	}
	free(list);
	req->aux = (uint32_t)done;
	if (ret != SD_RES_UNKNOWN)
		return ret;
	return done ? SD_RES_SUCCESS : SD_RES_UNKNOWN;
}

static void md_change_done(struct request *req)
{
	if (req->rq.opcode == SD_OP_MD_UNPLUG && req->aux)
		disks_lost();
	request_done(req);
}

int md_change(struct request *req)
{
	req->io_done = md_change_done;
	submit_io(req);
	return SD_RES_ASYNC;
}

/* ---- the watch ---- */

static struct timer watch_timer;
static struct work watch_work;
static uint64_t last_probe;
static int watch_failed;
static bool watch_on;

/*
 * A replica write that failed with EIO may have met a failing disk (a
 * file system gone read-only answers every write so): rather than fail
 * the client's write, it waits for the watch's next look, which the error
 * makes a probe of every disk.  Parked before a look starts, in
 * eio_waiting; released when that look is done, from eio_checking.
 */
static LIST_HEAD(eio_waiting);
static LIST_HEAD(eio_checking);
static unsigned int nr_eio_parked;

bool md_park_eio(struct request *req)
{
	if (!watch_on || nr_eio_parked >= EIO_PARK_MAX)
		return false;
	list_add_tail(&req->list, &eio_waiting);
	nr_eio_parked++;
	return true;
}

/*
 * The answer of a parked write whose disk went and that does not run
 * again here: with no disk left the node is leaving (the gateway retries
 * in the next epoch, without it); a strip's version is aborted and
 * written again by the gateway, on the disk that now holds the strip
 */
static uint32_t eio_went_answer(const struct request *req)
{
	if (!store_md_nr())
		return SD_RES_KILLED;
	if (req->rq.epoch < cstate->epoch)
		return SD_RES_OLD_NODE_VER;
	if (req->rq.epoch > cstate->epoch)
		return SD_RES_NEW_NODE_VER;
	return SD_RES_NETWORK_ERROR;
}

/*
 * A disk went: a replica write runs again, in its epoch, on the disk that
 * now holds its object (recovery brings the object there first); the
 * others are answered so that the gateway retries (eio_went_answer).  No
 * disk went: the EIO is the answer.
 */
static void eio_release(bool disk_went)
{
	struct request *req, *n;

	list_for_each_entry_safe(req, n, &eio_checking, list) {
		list_del(&req->list);
		sd_assert(nr_eio_parked > 0);
		nr_eio_parked--;
		if (disk_went && store_md_nr() &&
		    req->rq.epoch == cstate->epoch &&
		    !is_strip_op(req->rq.opcode)) {
			submit_io(req);
			continue;
		}
		if (disk_went) {
			req->rp.result = eio_went_answer(req);
			req->rp.data_length = 0;
		}
		request_done(req);
	}
}

static void watch_fn(struct work *w)
{
	uint64_t now = now_msec();
	bool probe = store_md_io_error_seen() || now - last_probe >= PROBE_MS;

	if (probe)
		last_probe = now;
	watch_failed = store_md_check(probe);
}

static void watch_done(struct work *w)
{
	if (watch_failed)
		disks_lost();
	eio_release(watch_failed);
	if (store_md_nr()) {
		timer_add(sys.loop, &watch_timer, WATCH_MS);
		return;
	}
	/* no disk: the watch stops, and no write waits for it */
	watch_on = false;
	list_splice_tail_init(&eio_waiting, &eio_checking);
	eio_release(true);
}

static void watch_tick(struct timer *t)
{
	if (wq_queue(sys.io_wq, &watch_work)) {
		timer_add(sys.loop, &watch_timer, WATCH_MS);
		return;
	}
	/* this look answers the writes parked so far */
	list_splice_tail_init(&eio_waiting, &eio_checking);
}

void md_watch_start(void)
{
	/*
	 * Every storage node, one disk or several: a store directory that
	 * disappears or fails is a failed disk (the node's only one: it
	 * leaves, and the others recover its copies), never "no object"
	 */
	if (sys.gateway)
		return;
	watch_work.fn = watch_fn;
	watch_work.done = watch_done;
	watch_timer.fn = watch_tick;
	watch_on = true;
	last_probe = now_msec();
	timer_add(sys.loop, &watch_timer, WATCH_MS);
}
