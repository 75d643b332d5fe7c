// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Stubs for the harnesses that link parts of sheep (fuzz_request,
 * fuzz_nbd, fuzz_cluster_msg): the symbols that the linked modules refer to but the
 * fuzzed paths do not need (the store, recovery, the gateway, the VDI
 * handlers, group/ when it is not linked).  Each does nothing and fails.
 * All are weak: a real module linked in, or a harness that needs a stub
 * to behave (fuzz_cluster_msg's peer_submit), takes precedence.  The
 * prototypes come from the real headers.
 */
#include <string.h>
#include "util.h"
#include "core/core.h"
#include "core/request.h"
#include "group/group.h"
#include "gw/gw.h"
#include "net/peer.h"
#include "recovery/recovery.h"
#include "recovery/scrub.h"
#include "state/epoch.h"
#include "group/vnodes.h"
#include "ec.h"
#include "store/store.h"
#include "vdi/vdi.h"

#define WEAK __attribute__((weak))

WEAK struct sheep_state sys;

/* core/ */
WEAK struct request *alloc_request(uint32_t data_len) { return NULL; }
WEAK void free_request(struct request *req) { }
WEAK void request_done(struct request *req) { }
WEAK void request_submit(struct request *req) { }
WEAK void submit_io(struct request *req) { }
WEAK void budget_charge(uint64_t bytes) { }
WEAK void budget_release(uint64_t bytes) { }
WEAK void stat_read(struct sd_stat *st) { }
WEAK void stat_request_start(struct request *req) { }
WEAK void stat_request_end(struct request *req) { }
WEAK void sheep_exit(int code) { }
/* ops/md.c: the MD_* opcodes (their table entries are what is fuzzed) */
WEAK int md_info_work(struct request *req) { return SD_RES_NO_SUPPORT; }
WEAK int md_change(struct request *req) { return SD_RES_NO_SUPPORT; }
WEAK int md_change_work(struct request *req) { return SD_RES_NO_SUPPORT; }
WEAK int strip_peer_work(struct request *req) { return SD_RES_NO_SUPPORT; }
WEAK struct work_queue *wq_create(const char *name, int nr_threads,
				  size_t capacity, struct event_loop *loop)
{ return NULL; }
WEAK int wq_queue(struct work_queue *wq, struct work *w) { return -1; }
/* no loop runs the timers; they are armed as a loop's are (ASan sees a
 * timer in memory that was freed) */
WEAK void timer_add(struct event_loop *loop, struct timer *t, uint64_t ms)
{
	t->when = ms;
	t->armed = 1;
}
WEAK void event_loop_call(struct event_loop *loop, struct loop_call *c) { }
WEAK void timer_del(struct timer *t) { t->armed = 0; }
WEAK int event_add(struct event_loop *loop, int fd, uint32_t events,
		   event_fn fn, void *data) { return -1; }
WEAK void event_del(struct event_loop *loop, int fd) { }

/* group/ */
WEAK size_t cinfo_encode(void *buf, size_t max, uint8_t status)
{ return 0; }
WEAK int group_format(const struct sd_req *req, const char *store)
{ return -1; }
WEAK void group_shutdown(void) { }
WEAK void group_set_recovery(bool disabled) { }
WEAK int group_alter_copies(uint8_t copies) { return -1; }
WEAK int group_force_recover(void) { return SD_RES_FORCE_RECOVER; }
WEAK int group_update_node(const struct node_id *nid, uint64_t space,
			   uint16_t nr_vnodes) { return SD_RES_HALT; }
WEAK bool vnodes_auto(void) { return true; }
WEAK void vnodes_reweigh_self(void) { }
WEAK void group_set_killed(void) { }

/* state/epoch.c */
WEAK int config_save(void) { return 0; }
WEAK int write_file_atomic(const char *path, const void *buf, size_t len)
{ return -1; }
WEAK void epoch_path(char *buf, size_t len, uint32_t epoch)
{ buf[0] = 0; }
WEAK int epoch_log_write(uint32_t epoch, const struct sd_node *nodes,
			 size_t nr) { return 0; }
WEAK int epoch_log_read(uint32_t epoch, struct sd_node *nodes, size_t max,
			uint64_t *time) { return -1; }
WEAK uint32_t epoch_log_latest(void) { return 0; }
WEAK void epoch_log_clear(void) { }
WEAK int epoch_log_init(void) { return 0; }

/* net/ */
WEAK void peer_submit(const struct node_id *nid, struct peer_req *pr) { }
WEAK void peer_drop(const struct node_id *nid) { }
/* as net/peer.c's: the harnesses answer with a reply of their own size */
WEAK void *peer_reply_sized_buf(struct peer_req *pr, uint32_t len)
{
	pr->rbuf_len = MIN(len, pr->rbuf_len);
	return xmalloc(pr->rbuf_len);
}

/* gw/, recovery/ */
WEAK void gateway_submit(struct request *req) { }
WEAK void gateway_epoch_changed(void) { }
WEAK void gw_ec_forget_vdi(uint32_t vid) { }
WEAK int gateway_fence(uint64_t oid, uint32_t lease_ms,
		       void (*ready)(void *arg, int res), void *arg)
{ return 0; }
WEAK int gateway_unfence(uint64_t oid) { return 0; }
WEAK int ledger_decref(uint64_t oid, uint32_t generation, uint32_t count,
		       uint64_t op_id, bool absent_ok, bool sync)
{ return SD_RES_NO_SUPPORT; }
WEAK int scrub_start(void) { return SD_RES_NO_SUPPORT; }
WEAK void scrub_stop(void) { }
WEAK void scrub_get_stat(struct scrub_stat *st) { memset(st, 0, sizeof(*st)); }
WEAK void recovery_start(uint32_t old_epoch) { }
WEAK void recovery_reset(void) { }
WEAK void recovery_expect(bool expected) { }
WEAK int ec_init_policy(struct ec_code *c, uint8_t policy) { return -1; }
WEAK void recovery_restart(void) { }
WEAK void recovery_resume(void) { }
WEAK void recovery_stale_everything(uint32_t epoch) { }
WEAK int recovery_stat(struct recovery_state *st) { return -1; }
WEAK void recovery_set_throttle(const struct recovery_throttling *t) { }
WEAK void recovery_get_throttle(struct recovery_throttling *t) { }
WEAK int recovery_complete_main(const struct sd_req *req, struct sd_rsp *rsp,
				void *data, const struct cluster_ctx *ctx)
{ return SD_RES_NO_SUPPORT; }

/* store/ */
WEAK int store_read(struct obj_key k, void *buf, uint32_t len, uint32_t off)
{ return SD_RES_NO_OBJ; }
WEAK int store_write_durable(struct obj_key k, const void *buf, uint32_t len,
			    uint32_t off, struct store_wait *w)
{ return SD_RES_EIO; }
WEAK bool store_read_nowait(struct obj_key k, void *buf, uint32_t len,
			    uint32_t off) { return false; }
WEAK bool store_write_nowait(struct obj_key k, const void *buf, uint32_t len,
			     uint32_t off) { return false; }
WEAK int store_write(struct obj_key k, const void *buf, uint32_t len,
		     uint32_t off, bool sync) { return SD_RES_EIO; }
WEAK int store_create(struct obj_key k, uint32_t obj_size, const void *buf,
		      uint32_t len, uint32_t off, bool sync)
{ return SD_RES_EIO; }
WEAK int store_remove(struct obj_key k) { return SD_RES_EIO; }
WEAK int store_exist(struct obj_key k) { return SD_RES_NO_OBJ; }
WEAK int store_flush(void) { return SD_RES_EIO; }
WEAK int store_wipe(void) { return SD_RES_SUCCESS; }
WEAK bool store_layout_known(const char *name)
{ return !strcmp(name, "plain") || !strcmp(name, "tree"); }
WEAK int store_set_layout(const char *name)
{ return store_layout_known(name) ? SD_RES_SUCCESS : SD_RES_NO_STORE; }
WEAK int store_stat(uint64_t *size, uint64_t *free_bytes) { return -1; }
WEAK int store_for_each(int (*fn)(struct obj_key k, void *arg), void *arg)
{ return -1; }
WEAK int store_for_each_stale(int (*fn)(struct obj_key k, void *arg),
			      void *arg)
{ return -1; }
WEAK int store_read_stale(struct obj_key k, void *buf, uint32_t len,
			  uint32_t off, uint32_t *stale_epoch)
{ return SD_RES_NO_OBJ; }

/* vdi/: the VDI handlers of the opcode table */
WEAK int vdi_new_work(struct request *req) { return SD_RES_NO_SUPPORT; }
WEAK int vdi_lookup_work(struct request *req) { return SD_RES_NO_SUPPORT; }
WEAK int vdi_attr_work(struct request *req) { return SD_RES_NO_SUPPORT; }
WEAK int vdi_del_work(struct request *req) { return SD_RES_NO_SUPPORT; }
WEAK int vdi_notify_add(const struct sd_req *req, struct sd_rsp *rsp,
			void *data, const struct cluster_ctx *ctx)
{ return SD_RES_NO_SUPPORT; }
WEAK int vdi_notify_restore(const struct sd_req *req, struct sd_rsp *rsp,
			    void *data, const struct cluster_ctx *ctx)
{ return SD_RES_NO_SUPPORT; }
WEAK int vdi_notify_del(const struct sd_req *req, struct sd_rsp *rsp,
			void *data, const struct cluster_ctx *ctx)
{ return SD_RES_NO_SUPPORT; }
WEAK int vdi_lock_main(const struct sd_req *req, struct sd_rsp *rsp,
		       void *data, const struct cluster_ctx *ctx)
{ return SD_RES_NO_SUPPORT; }
WEAK int vdi_release_main(const struct sd_req *req, struct sd_rsp *rsp,
			  void *data, const struct cluster_ctx *ctx)
{ return SD_RES_NO_SUPPORT; }
/* vdi/recycle.c: VID recycling */
WEAK int recycle_work(struct request *req) { return SD_RES_NO_SUPPORT; }
WEAK int recycle_main(const struct sd_req *req, struct sd_rsp *rsp,
		      void *data, const struct cluster_ctx *ctx)
{ return SD_RES_NO_SUPPORT; }
WEAK int recycle_busy(struct request *req) { return SD_RES_AGAIN; }
/* ops/s3reg.c: object storage's registry */
WEAK int s3reg_work(struct request *req) { return SD_RES_NO_SUPPORT; }
WEAK int s3reg_main(const struct sd_req *req, struct sd_rsp *rsp,
		    void *data, const struct cluster_ctx *ctx)
{ return SD_RES_NO_SUPPORT; }
