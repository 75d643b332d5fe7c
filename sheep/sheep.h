/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's shared state and the interfaces between its modules. */
#ifndef SHEEP_SHEEP_H
#define SHEEP_SHEEP_H

#include <stdbool.h>
#include <stdint.h>
#include <urcu.h>
#include "event.h"
#include "hash.h"
#include "internal_proto.h"
#include "list.h"
#include "work.h"

/* a main_fn that will complete the request later */
#define SD_RES_ASYNC		0x10000

/* bounds on what the network can make us allocate */
#define SD_MAX_PAYLOAD		(64U << 20)
#define SD_MAX_INFLIGHT_BYTES	(512ULL << 20)
#define SD_CONN_MAX_INFLIGHT	64
#define SD_MAX_CLIENTS		4096
#define SD_IO_THREADS		8
#define SD_IO_QUEUE		1024
#define SD_GW_MAX_RETRIES	100	/* x SD_GW_RETRY_MS */
#define SD_GW_RETRY_MS		300
#define SD_PEER_TIMEOUT_MS	30000

/* the published view of the cluster: immutable once published */
struct cluster_view {
	uint32_t epoch;
	uint8_t status;
	struct vnode_ring ring;		/* members of the current epoch */
	struct rcu_head rcu;
};

struct vdi_info {
	uint8_t nr_copies;
	uint8_t copy_policy;
	uint8_t block_size_shift;
	uint8_t snapshot;
	uint8_t deleted;
	uint32_t parent_vid;
	uint32_t lock_state;
	struct node_id lock_owner;
};

struct sheep_state {
	char base[4096];
	int port;
	bool nosync;
	bool gateway;
	struct sd_node self;
	struct event_loop *loop;
	struct work_queue *io_wq;
	struct cluster_driver *cdrv;

	/* cluster info; owned by the main thread */
	uint64_t ctime;
	uint16_t flags;
	uint8_t copies;
	uint8_t copy_policy;
	uint8_t block_size_shift;
	char store[SD_MAX_STORE_NAME];
	uint8_t status;
	uint8_t disable_recovery;
	uint32_t epoch;
	bool joined;
	bool shutting_down;
	struct sd_node *members;	/* current membership */
	size_t nr_members;
	struct sd_node *epoch_nodes;	/* node list of the latest epoch */
	size_t nr_epoch_nodes;

	struct cluster_view *view;	/* RCU-published */

	/* VDI bitmaps (objects.md §6.2) and per-VDI state (§14) */
	uint8_t *vdi_inuse;
	uint8_t *vdi_deleted;
	struct vdi_info *vdi;		/* indexed by vid, lazily allocated */
	uint64_t inflight_bytes;
	struct sd_stat stat;
};

extern struct sheep_state sys;

struct request;
struct client;

enum op_type { OP_GATEWAY, OP_PEER, OP_LOCAL, OP_CLUSTER };

/* what a cluster op's main part knows besides the request */
struct cluster_ctx {
	const struct sd_node *sender;
	bool originator;
	uint32_t aux;		/* a value the work part passed along */
};

struct sd_op {
	const char *name;
	enum op_type type;
	bool force;		/* served while the cluster is not running */
	/* local op on the main thread */
	int (*main_fn)(struct request *req);
	/* peer / local op on an I/O worker, or cluster work part */
	int (*work_fn)(struct request *req);
	/* cluster op main part, on every node in total order */
	int (*cluster_fn)(const struct sd_req *req, struct sd_rsp *rsp,
			  void *data, const struct cluster_ctx *ctx);
};

struct request {
	struct sd_req rq;
	struct sd_rsp rp;
	void *data;
	uint32_t data_len;		/* bytes allocated at data */
	const struct sd_op *op;
	struct client *cl;		/* NULL for internal requests */
	struct list_head list;
	struct work work;
	uint32_t obj_size;		/* store ops: size of a new object */
	uint8_t obj_size_shift;		/* local ops: the object's VDI shift */
	uint32_t cseq;			/* cluster ops: our message number */
	uint32_t aux;			/* cluster ops: work part -> main part */
	bool internal;			/* issued by the daemon itself */
	bool slot_held;			/* holds its object's write slot */
	uint8_t stat_active;		/* counted active: 1 gateway, 2 peer */
	/* gateway fan-out */
	int nr_pending;
	int nr_retries;
	uint32_t gw_result;
	struct timer retry_timer;
	/* internal requests: called on the main thread when done */
	void (*complete)(struct request *req);
	void *caller;			/* owned by the submitter */
	void *priv;			/* owned by the executing module */
};

/* ops.c */
const struct sd_op *get_sd_op(uint8_t opcode);
/* the store half of a peer op; runs on an I/O worker */
int store_exec(const struct sd_req *rq, void *data, struct sd_rsp *rp,
	       uint32_t obj_size);
uint8_t gateway_to_peer_opcode(uint8_t opcode);
bool is_force_op(const struct sd_op *op);

/* request.c */
int listen_init(const char *bindaddr, int port, const char *sock_path);
struct request *alloc_request(uint32_t data_len);
void free_request(struct request *req);
/* execute a request (from a client or internal) */
void queue_request(struct request *req);
/* the request's response is final: reply / complete it */
void request_done(struct request *req);
void listen_stop(void);
/* queue store work for a request; back-pressured when the pool is full */
void submit_io(struct request *req);

/* client_lock.c: KLOCK locks go with the client connection */
#define SD_MAX_CLIENT_LOCKS	64
void client_lock_release(uint32_t vid);
bool client_lock_wait_release(struct request *req);

/* flush.c */
void flush_init(void);
void flush_submit(struct request *req);

/* gateway.c */
void gateway_submit(struct request *req);
void gateway_flush(struct request *req);
/* blocking gateway I/O for worker threads (never the main thread) */
int gw_exec_req(const struct sd_req *rq, void *buf);
int gw_exec_sync(uint8_t opcode, uint64_t oid, void *buf, uint32_t len,
		 uint32_t offset, uint8_t copies, uint16_t flags);

/* refcount.c: index updates and generational references (objects.md §9) */
void refcount_init(void);
void index_update_submit(struct request *req);
int ledger_decref(uint64_t oid, uint32_t generation, uint32_t count,
		  bool sync);

/* recovery.c */
void recovery_start(uint32_t old_epoch);
void recovery_reset(void);
void recovery_restart(void);
bool recovery_park(struct request *req);
bool recovery_supersede(struct request *req);
int recovery_stat(struct recovery_state *st);
bool recovery_halted(void);
void recovery_resume(void);
void recovery_set_throttle(const struct recovery_throttling *t);
void recovery_get_throttle(struct recovery_throttling *t);
int recovery_complete_main(const struct sd_req *req, struct sd_rsp *rsp,
			   void *data, const struct cluster_ctx *ctx);
void recovery_stale_everything(uint32_t epoch);

/* peer.c */
struct peer_req {
	struct sd_req rq;
	struct sd_rsp rp;
	const void *wbuf;
	void *rbuf;
	uint32_t rbuf_len;
	uint64_t deadline;
	struct list_head list;
	void (*done)(struct peer_req *pr, int result);
	void *priv;
	uint8_t hdr[SD_REQ_SIZE];
	size_t sent;
};
void peer_submit(const struct node_id *nid, struct peer_req *pr);
void peer_init(void);
void peer_drop(const struct node_id *nid);

/* group.c */
int group_init(const char *driver);
void group_join(void);
struct cluster_view *current_view(void);
void publish_view(void);
int cluster_op_submit(struct request *req);
uint32_t vdi_copies(uint32_t vid);
uint8_t vdi_shift(uint32_t vid);
bool node_is_self(const struct sd_node *n);
int epoch_log_read(uint32_t epoch, struct sd_node *nodes, size_t max,
		   uint64_t *time);
uint32_t epoch_log_latest(void);
int config_load(void);
int config_save(void);
void sheep_exit(int code);
int group_format(const struct sd_req *req, const char *store);
/* this node's cluster_info header + latest epoch's nodes; returns bytes */
size_t cinfo_encode(void *buf, size_t max, uint8_t status);
void group_shutdown(void);

/* vdi.c */
int vdi_init_bitmaps(void);
void vdi_scan_local(void);
void vdi_set_inuse(uint32_t vid, bool on);
void vdi_set_deleted(uint32_t vid, bool on);
bool vdi_test_inuse(uint32_t vid);
bool vdi_test_deleted(uint32_t vid);
struct vdi_info *vdi_get(uint32_t vid, bool create);
void vdi_reset(void);
void vdi_merge_state(const struct vdi_state *vs, bool running);
void vdi_release_node_locks(const struct node_id *nid);
void vdi_for_each(void (*fn)(uint32_t vid, struct vdi_info *vi, void *arg),
		  void *arg);
int vdi_new_work(struct request *req);
int vdi_lookup_work(struct request *req);
int vdi_attr_work(struct request *req);
int vdi_del_work(struct request *req);
int vdi_notify_add(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		   const struct cluster_ctx *ctx);
int vdi_notify_del(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		   const struct cluster_ctx *ctx);
int vdi_lock_main(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		  const struct cluster_ctx *ctx);
int vdi_release_main(const struct sd_req *req, struct sd_rsp *rsp,
		     void *data, const struct cluster_ctx *ctx);


#endif
