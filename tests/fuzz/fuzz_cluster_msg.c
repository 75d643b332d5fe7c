// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: the cluster messages of the "local" driver.  Its log
 * records (JOIN, ACCEPT, LEAVE, NOTIFY, BLOCK, UNBLOCK) are read back by
 * sheep/group/local.c, whose reader and state are static, and whose state
 * cannot be reset through its interface (local_init() works once per
 * process); so this file includes local.c itself (it compiles the real
 * file, unchanged) and resets that state before every input.  With the
 * group bit, the records go on to the daemon's real handlers in
 * sheep/group/group.c (captured through group_init() with a fake
 * "corosync" driver): the join/accept payloads (cluster_info + nodes),
 * cluster op messages (sd_req + sd_rsp + data, run by the real opcode
 * table of sheep/ops/ops.c), and the peers' answers that follow an
 * accept (VDI state records, epoch logs).
 *
 * Input:
 *   byte 0   bit 0 the group handlers (else recording ones), bit 1 the
 *            log body is raw bytes, bit 2 after replaying, notify, block
 *            and leave ourselves, bit 3 peer requests are answered
 *            inside peer_submit() (as one to a node that cannot be
 *            reached is)
 *   2 bytes  length L of the peer answer; then L bytes: what every peer
 *            request gets (first byte 0xff: BUFFER_SMALL)
 *   then     records: type byte (bits 0-2 type, bit 3 REJECTED flag,
 *            bit 4 bad header checksum, bit 5 bad payload checksum,
 *            bit 6 wrong sequence number, bit 7 length past the end),
 *            who (bits 0-2 subject token, 3-5 node), mver, payload
 *            length (2 bytes), payload; or with bit 1 the raw body
 *
 * Tokens 0-3 are alive (the harness holds their live files locked), 4-7
 * are dead; token 0 is this node.  An accepted cluster_info makes the
 * node fetch the epochs it lacks, one peer request per epoch (at most the
 * newest 4096 since ff93904, which fixed an unbounded loop this harness
 * found); to keep every input fast, the harness takes the epoch field of
 * JOIN/ACCEPT payloads modulo 64, so that bound itself is not exercised.
 */
#include "group/local.c"

#include <sys/mman.h>
#include "core/core.h"
#include "ops/ops.h"
#include "net/peer.h"
#include "state/cluster.h"
#include "state/epoch.h"
#include "state/vdi.h"
#include "group/group.h"
#include "fuzz_input.h"

#define die(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

#define FZ_GEN		UINT64_C(0x6765676567656765)
#define FZ_ROUNDS	1000
#define FZ_ALIVE	4

static uint64_t fz_tokens[8];
static struct sd_node fz_nodes[8];
static int fz_live_fds[FZ_ALIVE] = { -1, -1, -1, -1 };
static char *fz_dir, *fz_log_path, *fz_live_dir;
static const struct cluster_handlers *fz_group;
static bool fz_exited, fz_vdis_touched;

static struct {
	bool group, raw, act, peer_at_once;
	const uint8_t *peer;
	size_t peer_len;
} cfg;

/* ---- what sheep would do around group.c ---- */

struct sheep_state sys;

void sheep_exit(int code)
{
	fz_exited = true;	/* the daemon would be gone: stop here */
}

void epoch_path(char *buf, size_t len, uint32_t epoch)
{
	snprintf(buf, len, "%s/no-such-dir/%08u", fz_dir, epoch);
}

int write_file_atomic(const char *path, const void *buf, size_t len)
{
	uint8_t *copy = xmalloc(len ? len : 1);

	memcpy(copy, buf, len);	/* must be readable */
	free(copy);
	return 0;
}

static void fz_answer_peers(void);

/* peers: every request gets the same answer, after the current round */
static struct peer_req **fz_peer_reqs;
static size_t fz_nr_peer_reqs, fz_cap_peer_reqs;

void peer_submit(const struct node_id *nid, struct peer_req *pr)
{
	fz_peer_reqs = grow(fz_peer_reqs, &fz_cap_peer_reqs,
			    fz_nr_peer_reqs + 1, sizeof(*fz_peer_reqs));
	fz_peer_reqs[fz_nr_peer_reqs++] = pr;
	if (cfg.peer_at_once)
		fz_answer_peers();
}

static void fz_answer_peers(void)
{
	while (fz_nr_peer_reqs) {
		struct peer_req *pr = fz_peer_reqs[--fz_nr_peer_reqs];
		uint32_t n;
		int res = SD_RES_NO_OBJ;

		/* as sheep/net/peer.c got_header() does */
		if (!pr->rbuf && pr->alloc_rbuf && cfg.peer_len)
			pr->rbuf = pr->alloc_rbuf(pr, (uint32_t)cfg.peer_len);
		n = pr->rbuf ? (uint32_t)MIN(cfg.peer_len, pr->rbuf_len) : 0;

		if (cfg.peer_len) {
			res = cfg.peer[0] == 0xff ? SD_RES_BUFFER_SMALL :
			      SD_RES_SUCCESS;
			if (n)
				memcpy(pr->rbuf, cfg.peer, n);
		}
		memset(&pr->rp, 0, sizeof(pr->rp));
		pr->rp.result = (uint32_t)res;
		pr->rp.data_length = n;
		fz_vdis_touched = true;
		pr->done(pr, res);
	}
}

/* RCU with no readers: free at once */
void urcu_memb_call_rcu(struct rcu_head *head,
			void (*func)(struct rcu_head *head))
{
	func(head);
}

/* the driver group_init() picks: it only captures the handlers */
static int fz_capture(const char *option, struct event_loop *loop,
		      const struct cluster_handlers *h)
{
	fz_group = h;
	return 0;
}

struct cluster_driver cdrv_corosync = {
	.name = "corosync",
	.init = fz_capture,
};

/* group.c knows it too; never picked here */
struct cluster_driver cdrv_zookeeper = {
	.name = "zookeeper",
};

static void fz_stop_listening(void)
{
}

/* ---- recording handlers (without the group bit) ---- */

static bool rec_join(const struct sd_node *joining,
		     const struct sd_node *members, size_t nr_members,
		     void *opaque, size_t *len, size_t max_len)
{
	const uint8_t *o = opaque;

	if (*len > max_len)
		die("join payload of %zu bytes, max %zu\n", *len, max_len);
	if (*len >= 2 && (o[1] & 1))
		*len = o[1] * 509;	/* may exceed max_len: refused */
	return *len == 0 || !(o[0] & 1);
}

/*
 * An accept marked as followed by another (a run of ACCEPTs) is followed
 * by an accept, with the same members, before any other callback.
 */
static bool fz_more_open;
static uint64_t fz_run_members;

static uint64_t fz_members_hash(const struct sd_node *m, size_t nr)
{
	return fnv_64a_buf(m, nr * sizeof(*m), FNV1A_64_INIT) ^ nr;
}

static void rec_accept(const struct sd_node *joined,
		       const struct sd_node *members, size_t nr_members,
		       const void *opaque, size_t len, bool more)
{
	uint64_t h = fz_members_hash(members, nr_members);

	if (fz_more_open && h != fz_run_members)
		abort();
	fz_more_open = more;
	fz_run_members = h;
}

static void rec_leave(const struct sd_node *left, size_t nr_left,
		      const struct sd_node *members, size_t nr_members)
{
	if (!nr_left || fz_more_open)	/* a change takes a node at least */
		abort();
}

static void rec_notify(const struct sd_node *sender, const void *msg,
		       size_t len)
{
	if (fz_more_open)
		abort();
}

static void rec_block(const struct sd_node *sender)
{
	if (fz_more_open)
		abort();
	local_unblock("u", 1);
}

static const struct cluster_handlers rec_handlers = {
	.join = rec_join,
	.accept = rec_accept,
	.leave = rec_leave,
	.notify = rec_notify,
	.block = rec_block,
};

/* ---- state before every input ---- */

static void fz_reset_local(void)
{
	if (st.log_fd >= 0)
		close(st.log_fd);
	free(st.members);
	free(st.pend);
	free(st.blks);
	free(st.gone);
	for (size_t i = 0; i < st.nr_came; i++)
		free(st.came[i].opaque);
	free(st.came);
	fz_more_open = false;
	memset(&st, 0, sizeof(st));
	st.log_fd = st.live_fd = st.ino_fd = -1;
	st.inited = st.started = true;
	st.loop = (struct event_loop *)&fz_tokens;	/* never used */
	st.dir = fz_dir;
	st.log_path = fz_log_path;
	st.live_dir = fz_live_dir;
	st.token = fz_tokens[0];
	st.me = fz_nodes[0];
	st.gen = FZ_GEN;
	st.pos = LOG_HDR_SIZE;
	st.probe_timer.fn = probe_fn;
	st.kick_timer.fn = kick_fn;
	handlers = cfg.group ? fz_group : &rec_handlers;
}

static void fz_reset_group(void)
{
	struct cluster_state *cs = cstate_mut();
	struct sd_node none;

	cs->ctime = 0;
	cs->flags = 0;
	cs->copies = SD_DEFAULT_COPIES;
	cs->copy_policy = 0;
	cs->block_size_shift = SD_DEFAULT_BLOCK_SIZE_SHIFT;
	memset(cs->store, 0, sizeof(cs->store));
	strcpy(cs->store, "plain");
	cs->status = SD_STATUS_WAIT;
	cs->disable_recovery = 0;
	cs->epoch = 0;
	cs->joined = false;
	cs->shutdown_clean = false;
	set_members(&none, 0);
	set_epoch_nodes(&none, 0);
	publish_view();
	if (fz_vdis_touched)
		vdi_reset();
	fz_vdis_touched = false;
	fz_exited = false;
}

/* ---- building the log ---- */

static void fz_put_header(int fd, uint64_t end, uint64_t nr)
{
	uint8_t b[LOG_HDR_SIZE] = { 0 };

	put64(b, LOG_MAGIC);
	put32(b + 8, LOG_VERSION);
	put32(b + 12, LOG_HDR_SIZE);
	put64(b + 16, FZ_GEN);
	put64(b + 24, end);
	put64(b + 32, nr);
	if (pwrite(fd, b, sizeof(b), 0) != sizeof(b))
		die("log header: %m\n");
}

/* one record from the input at @off; returns its size, 0 at the end */
static size_t fz_put_record(int fd, struct fuzz_in *in, uint64_t off,
			    uint64_t seq)
{
	uint8_t t = take_u8(in), who = take_u8(in), hdr[REC_HDR_SIZE];
	uint8_t pl[REC_MAX_PAYLOAD];
	struct rec r = {
		.type = t & 7,
		.flags = (t & 8 ? REC_F_REJECTED : 0) |
			 (who & 64 ? REC_F_MORE : 0) |	/* runs, open ones too */
			 (who & 128 ? REC_F_RUNS : 0),
		.seq = t & 64 ? seq + 1 : seq, .writer = fz_tokens[who & 7],
		.subject = fz_tokens[who & 7], .node = fz_nodes[(who >> 3) & 7],
	};

	r.mver = take_u8(in);
	r.len = take_u16(in);
	r.len = (uint32_t)MIN(r.len, fuzz_left(in));
	take_bytes(in, pl, r.len);
	/* a small epoch: few epochs to fetch (see the top) */
	if (cfg.group && (r.type == REC_JOIN || r.type == REC_ACCEPT) &&
	    r.len >= 8)
		put32(pl + 4, get32(pl + 4) % 64);
	r.pcsum = csum(pl, r.len) ^ (t & 32 ? 1 : 0);
	rec_encode(&r, hdr);
	if (t & 128) {
		put32(hdr + 8, r.len + 4096);
		put64(hdr + REC_OFF_HCSUM, csum(hdr, REC_OFF_HCSUM));
	}
	if (t & 16)
		hdr[REC_OFF_HCSUM] ^= 0x80;
	if (pwrite(fd, hdr, sizeof(hdr), (off_t)off) != sizeof(hdr) ||
	    (r.len && pwrite(fd, pl, r.len, (off_t)(off + REC_HDR_SIZE)) !=
	     (ssize_t)r.len))
		die("log record: %m\n");
	return REC_HDR_SIZE + r.len;
}

static void fz_build_log(struct fuzz_in *in)
{
	uint64_t end = LOG_HDR_SIZE, nr = 0;

	st.log_fd = memfd_create("fuzz-local-log", MFD_CLOEXEC);
	if (st.log_fd < 0)
		die("memfd: %m\n");
	if (cfg.raw) {
		size_t n = fuzz_left(in);

		if (n && pwrite(st.log_fd, in->p + in->pos, n, end) !=
		    (ssize_t)n)
			die("log body: %m\n");
		end += n;
	}
	while (!cfg.raw && fuzz_left(in) >= 5 && nr < 512)
		end += fz_put_record(st.log_fd, in, end, nr++);
	fz_put_header(st.log_fd, end, nr);
}

/* ---- replaying ---- */

static uint64_t fz_log_end(void)
{
	struct log_hdr h;

	return log_hdr_read(&h) ? 0 : h.end;
}

static void fz_replay(void)
{
	for (int i = 0; i < FZ_ROUNDS; i++) {
		if (st.broken || fz_exited)
			return;
		process_log();
		fz_answer_peers();
		if (st.pos >= fz_log_end())
			return;
	}
	die("the log is not read to its end after %d rounds\n", FZ_ROUNDS);
}

static void fz_check_state(void)
{
	for (size_t i = 0; i < st.nr_members; i++) {
		for (size_t j = i + 1; j < st.nr_members; j++)
			if (st.members[i].token == st.members[j].token)
				die("token %016" PRIx64 " is a member twice\n",
				    st.members[i].token);
		if (find_pending(st.members[i].token))
			die("a member is also a pending joiner\n");
		if (i && member_cmp(&st.members[i - 1], &st.members[i]) > 0)
			die("members out of order\n");
	}
	if (st.joined && !st.left && !st.broken && !find_member(st.token))
		die("joined, never left, and not a member\n");
	if (st.nr_came && !st.in_accept_run)
		die("accepts held back outside an open run\n");
}

static void fz_act(void)
{
	/* a cluster message of an unknown opcode (group.c: 8 + 48 + 48) */
	static const uint8_t msg[8 + 2 * SD_REQ_SIZE] = { 1 };

	if (!st.joined || st.broken || fz_exited)
		return;
	local_notify(msg, sizeof(msg));
	local_block();
	fz_replay();
	local_leave();
	fz_replay();
}

/* ---- set-up ---- */

static void fz_make_live(int i)
{
	char *p = live_path(fz_tokens[i]);
	int fd = p ? open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;

	if (fd < 0 || flock(fd, LOCK_EX))
		die("live file %s: %m\n", p ? p : "?");
	fz_live_fds[i] = fd;
	free(p);
}

static void fz_cleanup(void)
{
	for (int i = 0; i < FZ_ALIVE; i++) {
		if (fz_live_fds[i] >= 0)
			close(fz_live_fds[i]);
	}
	rmdir_r(fz_dir);
}

static void fz_setup_dirs(void)
{
	const char *tmp = access("/dev/shm", W_OK) ? getenv("TMPDIR") :
			  "/dev/shm";

	if (asprintf(&fz_dir, "%s/kelpie-fuzz-local.%d", tmp ? tmp : "/tmp",
		     (int)getpid()) < 0 ||
	    asprintf(&fz_log_path, "%s/log", fz_dir) < 0 ||
	    asprintf(&fz_live_dir, "%s/live", fz_dir) < 0 ||
	    mkdir_p(fz_live_dir))
		die("cannot make %s\n", fz_dir ? fz_dir : "a directory");
	st.live_dir = fz_live_dir;
	for (int i = 0; i < FZ_ALIVE; i++)
		fz_make_live(i);
	atexit(fz_cleanup);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const struct group_hooks hooks = {
		.op_lookup = get_sd_op,
		.stop_listening = fz_stop_listening,
	};

	log_open("/dev/null", LOG_L_DEBUG, false);
	for (int i = 0; i < 8; i++) {
		char a[32];

		fz_tokens[i] = UINT64_C(0x1000000000000001) * (uint64_t)(i + 1);
		snprintf(a, sizeof(a), "127.0.0.%d", i + 1);
		str_to_addr(a, fz_nodes[i].nid.addr);
		fz_nodes[i].nid.port = (uint16_t)(7000 + i);
		fz_nodes[i].nr_vnodes = SD_DEFAULT_VNODES;
		fz_nodes[i].zone = (uint32_t)i;
	}
	sys.self = fz_nodes[0];
	fz_setup_dirs();
	vdi_init_bitmaps();
	if (group_init("corosync", &hooks) || !fz_group)
		die("group_init did not take the fake driver\n");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in;
	uint8_t mode;

	fuzz_in_init(&in, data, size);
	mode = take_u8(&in);
	cfg.group = mode & 1;
	cfg.raw = mode & 2;
	cfg.act = mode & 4;
	cfg.peer_at_once = mode & 8;
	cfg.peer_len = take_u16(&in);
	cfg.peer_len = MIN(cfg.peer_len, fuzz_left(&in));
	cfg.peer = take_ptr(&in, cfg.peer_len);
	fz_reset_group();
	fz_reset_local();
	fz_build_log(&in);
	fz_replay();
	/* an open run's accepts wait for the record that ends it */
	if (fz_more_open)
		abort();
	fz_check_state();
	if (cfg.act)
		fz_act();
	fz_answer_peers();
	return 0;
}
