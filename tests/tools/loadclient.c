// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * loadclient: a verifiable block workload for Kelpie's failure tests.
 *
 *   loadclient write  [options] VDI
 *   loadclient verify [options] VDI
 *
 * The VDI must exist (dog vdi create).  It is seen as an array of 4 KiB
 * blocks.  Every block the client writes is unique and self-describing:
 *
 *   bytes  0..3   magic "KLPB"
 *   bytes  4..7   vdi id        (little-endian)
 *   bytes  8..15  block index   (little-endian)
 *   bytes 16..23  sequence nr   (little-endian, unique over all runs)
 *   bytes 24..27  crc32 of the whole block with these 4 bytes zero
 *   bytes 28..31  zero
 *   bytes 32..    pseudo-random fill derived from (vdi id, block, seq)
 *
 * so a block read back can be regenerated from its header and compared
 * byte for byte.
 *
 * write: N threads (-j) each own the data objects whose index is congruent
 * to the thread number, so two requests never touch one data object at the
 * same time and two creates of one object are never in flight.  A thread
 * picks a random block of its objects, takes the next sequence number and
 * writes it like QEMU does (protocol.md §12.5): an unallocated object gets
 * CREATE_AND_WRITE_OBJ with the block at its offset, then a 4-byte
 * WRITE_OBJ of the index entry at 4664 + 4 * idx of the inode; an allocated
 * one gets WRITE_OBJ.  One request is outstanding per connection.
 *
 * The mirror file (-m) records, one write(2) per line, "W <block> <seq>"
 * before a block write is sent and "A <block> <seq>" once the whole write
 * (object and, when needed, index entry) was acknowledged.  Lines survive a
 * crash of the client itself; they are fdatasync'd at exit (and every line
 * with -S).  Sequence numbers continue after the largest one in the mirror.
 *
 * Errors: a broken connection or a non-success result makes the thread
 * retry the same block and seq, through the next node of the port list (-p)
 * for connection errors, until it succeeds or the grace time (-g) after the
 * run time (-t) has passed; then the write is abandoned (stays "W" only).
 * New writes are started only during the run time (-t) and, with -c, until
 * that many writes were started.
 *
 * verify: reads the inode index and every allocated data object through the
 * one node given (first port of -p) and checks each block against the
 * mirror.  For block b let "acked" be the seq of its last "A" line and
 * "pending" the seqs of "W" lines for b that come after that "A" line
 * (writes whose outcome is unknown: the client gave up or was stopped).
 * The block content must be the exact block of one of
 *   { acked } U pending          if b was ever acknowledged,
 *   { zero block } U pending     otherwise.
 * A newer unacknowledged write may have landed without its ack reaching us,
 * so it is accepted; an *older* unacknowledged write (a W before the last A)
 * is not: seeing it means an acknowledged write was lost.  Blocks in
 * unallocated objects read as zero.
 *
 * Output: write prints "acked=N abandoned=N retries=N errors=N" on stdout;
 * verify prints "blocks=N acked=N newer_unacked=N bad=N".  Diagnostics go
 * to stderr.  Exit status: 0 fine, 1 a check failed / a write was
 * abandoned, 2 usage or setup error (e.g. the VDI cannot be opened).
 *
 * Options:
 *   -a HOST     sheep address (default 127.0.0.1)
 *   -p P1,P2..  sheep ports; write uses them in turn, verify the first
 *   -m FILE     mirror file (required)
 *   -t SEC      run time of write (default 30); SIGUSR1 ends it early
 *               (no new write starts, those under way finish as usual)
 *   -g SEC      grace time for retries after the run time (default 60)
 *   -j N        threads (default 4)
 *   -n BLOCKS   only use blocks 0..BLOCKS-1 (default: the whole VDI)
 *   -c COUNT    start at most COUNT writes
 *   -s SEED     random seed (default: time and pid)
 *   -r SEC      receive timeout of one request (default 30)
 *   -S          fdatasync the mirror after every line
 *   -F          write as a VM with a write cache does: data writes carry
 *               SD_FLAG_CMD_CACHE and a write counts as acknowledged only
 *               after a FLUSH_VDI that followed it succeeded
 *   -v          log every retry to stderr
 *
 * Build: cc -std=gnu11 -D_GNU_SOURCE -Iinclude -o loadclient \
 *            tests/tools/loadclient.c build/libkelpie.a -lpthread -lm
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "proto.h"
#include "sheepdog_proto.h"
#include "util.h"

#define BLK		4096u
#define HDR_LEN		32
#define MAX_PORTS	64
#define MAX_THREADS	64
#define MAX_REPORTS	20

/* results of one attempt */
#define RQ_OK		0
#define RQ_IOERR		-1	/* connection broken or timed out */
#define RQ_RESULT	-2	/* the sheep answered an error */
#define RQ_FATAL		-3	/* something retrying cannot fix */

static const char *host = "127.0.0.1";
static int ports[MAX_PORTS], nr_ports;
static const char *mirror_path;
static const char *vdi_name;
static int run_secs = 30, grace_secs = 60, nr_threads = 4, rcv_timeout = 30;
static uint64_t limit_blocks, max_writes;
static uint64_t seed;
static bool sync_each, verbose, cached;

/* the VDI */
static uint32_t vid;
static uint8_t nr_copies, copy_policy;
static uint32_t obj_size, blocks_per_obj, nr_objs;
static uint64_t nr_blocks;		/* blocks in use (-n or all) */

/* write state */
static int mirror_fd = -1;
static pthread_mutex_t mirror_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint_fast64_t next_seq;
static atomic_uint_fast64_t started, acked, abandoned, retries, errors;
static atomic_int next_port;
static atomic_bool fatal;
/* SIGUSR1: the test has what it needs, the run time ends now */
static volatile sig_atomic_t stop_asked;

static void on_stop(int sig)
{
	(void)sig;
	stop_asked = 1;
}
static uint8_t *allocated;		/* per object, owned by one thread */
static double t_start;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[loadclient %6.1fs] ", now() - t_start);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: loadclient write|verify -m MIRROR -p PORT[,PORT...] "
		"[-a HOST] [-t SEC] [-g SEC] [-j N] [-n BLOCKS] [-c COUNT] "
		"[-s SEED] [-r SEC] [-S] [-F] [-v] VDI\n");
	exit(2);
}

/* ---- block content ---- */

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32_buf(const uint8_t *p, size_t len)
{
	uint32_t c = 0xFFFFFFFFu;

	while (len--)
		c = crc_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static void make_block(uint8_t *b, uint32_t v, uint64_t blk, uint64_t seq)
{
	uint64_t st = ((uint64_t)v << 40) ^ (blk * UINT64_C(0x100000001B3)) ^
		      (seq * UINT64_C(0xC2B2AE3D27D4EB4F));

	memcpy(b, "KLPB", 4);
	put_le32(b + 4, v);
	put_le64(b + 8, blk);
	put_le64(b + 16, seq);
	put_le32(b + 24, 0);
	put_le32(b + 28, 0);
	for (uint32_t off = HDR_LEN; off < BLK; off += 8)
		put_le64(b + off, splitmix(&st));
	put_le32(b + 24, crc32_buf(b, BLK));
}

/* ---- requests ---- */

static int exec_req(int fd, struct sd_req *req, void *buf, uint32_t len,
		    struct sd_rsp *rsp)
{
	if (sd_exec(fd, req, buf, len, rsp))
		return RQ_IOERR;
	return rsp->result == SD_RES_SUCCESS ? RQ_OK : RQ_RESULT;
}

static int read_obj(int fd, uint64_t oid, void *buf, uint32_t len,
		    uint32_t off, struct sd_rsp *rsp)
{
	struct sd_req req;
	int ret;

	sd_init_req(&req, SD_OP_READ_OBJ);
	req.data_length = len;
	req.obj.oid = oid;
	req.obj.offset = off;
	req.obj.copies = nr_copies;
	req.obj.copy_policy = copy_policy;
	ret = exec_req(fd, &req, buf, len, rsp);
	if (ret == RQ_OK && rsp->data_length < len)
		memset((uint8_t *)buf + rsp->data_length, 0,
		       len - rsp->data_length);
	return ret;
}

static int write_obj(int fd, uint8_t opcode, uint64_t oid, const void *buf,
		     uint32_t len, uint32_t off, uint16_t flags,
		     struct sd_rsp *rsp)
{
	struct sd_req req;

	sd_init_req(&req, opcode);
	req.flags = SD_FLAG_CMD_WRITE | flags;
	req.data_length = len;
	req.obj.oid = oid;
	req.obj.offset = off;
	req.obj.copies = nr_copies;
	req.obj.copy_policy = copy_policy;
	return exec_req(fd, &req, (void *)buf, 0, rsp);
}

static int flush_vdi(int fd, struct sd_rsp *rsp)
{
	struct sd_req req;

	sd_init_req(&req, SD_OP_FLUSH_VDI);
	req.obj.oid = vid_to_vdi_oid(vid);
	return exec_req(fd, &req, NULL, 0, rsp);
}

/* GET_VDI_INFO and the inode header through @fd; 0 or an error message */
static const char *open_vdi(int fd)
{
	uint8_t nt[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN];
	static uint8_t hbuf[SD_INODE_HEADER_SIZE];
	static char err[128];
	struct sd_inode_header h;
	struct sd_req req;
	struct sd_rsp rsp;
	int ret;

	memset(nt, 0, sizeof(nt));
	strncpy((char *)nt, vdi_name, SD_MAX_VDI_LEN - 1);
	sd_init_req(&req, SD_OP_GET_VDI_INFO);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(nt);
	ret = exec_req(fd, &req, nt, 0, &rsp);
	if (ret == RQ_IOERR)
		return "connection error on GET_VDI_INFO";
	if (ret != RQ_OK) {
		snprintf(err, sizeof(err), "GET_VDI_INFO: %s",
			 sd_strerror(rsp.result));
		return err;
	}
	vid = rsp.vdi.vdi_id;
	/* the inode's copies are not known yet: 0 lets the gateway decide */
	nr_copies = 0;
	copy_policy = 0;
	ret = read_obj(fd, vid_to_vdi_oid(vid), hbuf, sizeof(hbuf), 0, &rsp);
	if (ret == RQ_IOERR)
		return "connection error reading the inode";
	if (ret != RQ_OK) {
		snprintf(err, sizeof(err), "reading the inode: %s",
			 sd_strerror(rsp.result));
		return err;
	}
	inode_header_decode(&h, hbuf);
	if (h.store_policy) {
		snprintf(err, sizeof(err), "hyper volumes are not supported");
		return err;
	}
	nr_copies = h.nr_copies;
	copy_policy = h.copy_policy;
	obj_size = UINT32_C(1) << (h.block_size_shift ? h.block_size_shift :
				   SD_DEFAULT_BLOCK_SIZE_SHIFT);
	blocks_per_obj = obj_size / BLK;
	nr_objs = (uint32_t)((h.vdi_size + obj_size - 1) / obj_size);
	nr_blocks = h.vdi_size / BLK;
	if (limit_blocks && limit_blocks < nr_blocks)
		nr_blocks = limit_blocks;
	if (!nr_blocks) {
		snprintf(err, sizeof(err), "the VDI has no block");
		return err;
	}
	nr_objs = (uint32_t)((nr_blocks + blocks_per_obj - 1) / blocks_per_obj);
	return NULL;
}

/* ---- mirror ---- */

struct pend {
	uint64_t *v;
	uint32_t n, cap;
};

struct mirror_state {
	uint64_t *acked;		/* 0: never acknowledged */
	struct pend *pend;
	uint64_t max_seq;
	uint64_t nr_lines;
};

static void pend_add(struct pend *p, uint64_t seq)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 2;
		p->v = realloc(p->v, p->cap * sizeof(*p->v));
		if (!p->v) {
			perror("realloc");
			exit(2);
		}
	}
	p->v[p->n++] = seq;
}

/*
 * Read the mirror; with @ms NULL only the largest seq is returned.  Blocks
 * beyond @nblocks are a usage error (the mirror belongs to another VDI or
 * another -n).
 */
static int mirror_load(const char *path, struct mirror_state *ms,
		       uint64_t nblocks, uint64_t *max_seq)
{
	FILE *f = fopen(path, "r");
	char line[128], kind;
	uint64_t blk, seq, max = 0, lineno = 0;

	if (!f) {
		if (errno == ENOENT && !ms) {
			*max_seq = 0;
			return 0;
		}
		fprintf(stderr, "loadclient: cannot open %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (sscanf(line, "%c %" SCNu64 " %" SCNu64, &kind, &blk,
			   &seq) != 3 || (kind != 'W' && kind != 'A')) {
			/* a line cut by a crash of the client: ignore */
			if (!strchr(line, '\n'))
				continue;
			fprintf(stderr, "loadclient: %s:%" PRIu64
				": bad line\n", path, lineno);
			fclose(f);
			return -1;
		}
		if (seq > max)
			max = seq;
		if (!ms)
			continue;
		if (blk >= nblocks) {
			fprintf(stderr, "loadclient: %s:%" PRIu64 ": block %"
				PRIu64 " beyond the VDI (%" PRIu64 " blocks)\n",
				path, lineno, blk, nblocks);
			fclose(f);
			return -1;
		}
		if (kind == 'W') {
			pend_add(&ms->pend[blk], seq);
		} else {
			ms->acked[blk] = seq;
			ms->pend[blk].n = 0;	/* older attempts: not allowed */
		}
		ms->nr_lines++;
	}
	fclose(f);
	if (ms)
		ms->max_seq = max;
	if (max_seq)
		*max_seq = max;
	return 0;
}

static void mirror_log(char kind, uint64_t blk, uint64_t seq)
{
	char line[64];
	int len = snprintf(line, sizeof(line), "%c %" PRIu64 " %" PRIu64 "\n",
			   kind, blk, seq);

	pthread_mutex_lock(&mirror_lock);
	if (write(mirror_fd, line, (size_t)len) != len) {
		perror("loadclient: mirror write");
		exit(2);
	}
	if (sync_each)
		fdatasync(mirror_fd);
	pthread_mutex_unlock(&mirror_lock);
}

/* ---- write mode ---- */

struct thr {
	pthread_t tid;
	int no;
	int fd;
	int port_idx;
	int result_errors;	/* consecutive error results on this node */
	uint64_t rng;
	uint32_t *objs;
	uint32_t nr_objs;
	uint8_t buf[BLK];
};

static void thr_disconnect(struct thr *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->port_idx = (t->port_idx + 1) % nr_ports;
	t->result_errors = 0;
}

static int thr_connect(struct thr *t)
{
	if (t->fd >= 0)
		return 0;
	t->fd = net_connect(host, ports[t->port_idx], rcv_timeout);
	if (t->fd < 0) {
		t->port_idx = (t->port_idx + 1) % nr_ports;
		return -1;
	}
	return 0;
}

/* one attempt at writing @blk (content in t->buf) */
static int write_block(struct thr *t, uint64_t blk)
{
	uint32_t idx = (uint32_t)(blk / blocks_per_obj);
	uint32_t off = (uint32_t)(blk % blocks_per_obj) * BLK;
	uint64_t oid = vid_to_data_oid(vid, idx);
	uint64_t inode = vid_to_vdi_oid(vid);
	uint16_t cache = cached ? SD_FLAG_CMD_CACHE : 0;
	uint8_t e[4];
	struct sd_rsp rsp;
	const char *what;
	int ret;

	if (!allocated[idx]) {
		what = "read of the index entry";
		ret = read_obj(t->fd, inode, e, 4, SD_INODE_INDEX_OFFSET +
			       4 * idx, &rsp);
		if (ret != RQ_OK)
			goto err;
		if (get_le32(e) == vid) {
			allocated[idx] = 1;
		} else if (get_le32(e) != 0) {
			msg("index entry %" PRIu32 " holds vid %" PRIx32
			    ", not ours (%" PRIx32 ")", idx, get_le32(e), vid);
			return RQ_FATAL;
		}
	}
	if (allocated[idx]) {
		what = "WRITE_OBJ";
		ret = write_obj(t->fd, SD_OP_WRITE_OBJ, oid, t->buf, BLK, off,
				cache, &rsp);
		if (ret != RQ_OK)
			goto err;
		goto flush;
	}
	what = "CREATE_AND_WRITE_OBJ";
	ret = write_obj(t->fd, SD_OP_CREATE_AND_WRITE_OBJ, oid, t->buf, BLK,
			off, cache, &rsp);
	if (ret != RQ_OK)
		goto err;
	what = "index entry WRITE_OBJ";
	put_le32(e, vid);
	ret = write_obj(t->fd, SD_OP_WRITE_OBJ, inode, e, 4,
			SD_INODE_INDEX_OFFSET + 4 * idx, SD_FLAG_CMD_DIRECT,
			&rsp);
	if (ret != RQ_OK)
		goto err;
	allocated[idx] = 1;
flush:
	if (cached) {
		what = "FLUSH_VDI";
		ret = flush_vdi(t->fd, &rsp);
		if (ret != RQ_OK)
			goto err;
	}
	return RQ_OK;
err:
	if (verbose || ret == RQ_RESULT)
		msg("thread %d, block %" PRIu64 " via port %d: %s: %s", t->no,
		    blk, ports[t->port_idx], what,
		    ret == RQ_IOERR ? "connection error" :
		    sd_strerror(rsp.result));
	return ret;
}

static void *writer(void *arg)
{
	struct thr *t = arg;
	double end = t_start + run_secs, hard_end = end + grace_secs;

	while (!atomic_load(&fatal) && !stop_asked && now() < end) {
		uint32_t obj = t->objs[splitmix(&t->rng) % t->nr_objs];
		uint64_t first = (uint64_t)obj * blocks_per_obj;
		uint64_t nr = nr_blocks - first < blocks_per_obj ?
			      nr_blocks - first : blocks_per_obj;
		uint64_t blk = first + splitmix(&t->rng) % nr;
		uint64_t seq;
		bool done = false, retry = false;

		if (max_writes && atomic_fetch_add(&started, 1) >= max_writes)
			break;
		seq = atomic_fetch_add(&next_seq, 1);
		make_block(t->buf, vid, blk, seq);
		mirror_log('W', blk, seq);
		while (!done && now() < hard_end && !atomic_load(&fatal)) {
			int ret;

			if (retry) {
				atomic_fetch_add(&retries, 1);
				usleep(100000);
			}
			retry = true;
			if (thr_connect(t))
				continue;
			ret = write_block(t, blk);
			switch (ret) {
			case RQ_OK:
				done = true;
				break;
			case RQ_IOERR:
				atomic_fetch_add(&errors, 1);
				thr_disconnect(t);
				break;
			case RQ_RESULT:
				atomic_fetch_add(&errors, 1);
				/* a node that keeps failing: try another */
				if (++t->result_errors >= 3)
					thr_disconnect(t);
				break;
			default:
				atomic_store(&fatal, true);
				break;
			}
		}
		if (!done) {
			msg("thread %d: write of block %" PRIu64 " seq %"
			    PRIu64 " abandoned", t->no, blk, seq);
			atomic_fetch_add(&abandoned, 1);
			break;
		}
		t->result_errors = 0;
		mirror_log('A', blk, seq);
		atomic_fetch_add(&acked, 1);
	}
	if (t->fd >= 0)
		close(t->fd);
	return NULL;
}

static int do_write(void)
{
	struct thr *th;
	uint64_t max_seq;
	const char *err = NULL;
	int fd = -1, n;
	double deadline = now() + run_secs + grace_secs;

	/* open the VDI through any node that answers */
	for (int i = 0; ; i = (i + 1) % nr_ports) {
		fd = net_connect(host, ports[i], rcv_timeout);
		if (fd >= 0) {
			err = open_vdi(fd);
			close(fd);
			if (!err)
				break;
		} else {
			err = "cannot connect";
		}
		if (now() > deadline) {
			fprintf(stderr, "loadclient: cannot open VDI %s: %s\n",
				vdi_name, err);
			return 2;
		}
		usleep(200000);
	}
	if (mirror_load(mirror_path, NULL, 0, &max_seq))
		return 2;
	atomic_store(&next_seq, max_seq + 1);
	mirror_fd = open(mirror_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (mirror_fd < 0) {
		perror("loadclient: open mirror");
		return 2;
	}
	allocated = calloc(nr_objs, 1);
	n = nr_threads < (int)nr_objs ? nr_threads : (int)nr_objs;
	th = calloc((size_t)n, sizeof(*th));
	if (!allocated || !th) {
		perror("calloc");
		return 2;
	}
	msg("vdi %s (vid %" PRIx32 ", %" PRIu8 " copies): %" PRIu64
	    " blocks in %" PRIu32 " objects, %d threads, %d s, seq from %"
	    PRIu64, vdi_name, vid, nr_copies, nr_blocks, nr_objs, n,
	    run_secs, max_seq + 1);
	for (int i = 0; i < n; i++) {
		struct thr *t = &th[i];

		t->no = i;
		t->fd = -1;
		t->port_idx = atomic_fetch_add(&next_port, 1) % nr_ports;
		t->rng = seed ^ ((uint64_t)(i + 1) << 48);
		t->objs = calloc(nr_objs, sizeof(*t->objs));
		for (uint32_t o = (uint32_t)i; o < nr_objs; o += (uint32_t)n)
			t->objs[t->nr_objs++] = o;
		if (pthread_create(&t->tid, NULL, writer, t)) {
			perror("pthread_create");
			return 2;
		}
	}
	for (int i = 0; i < n; i++) {
		pthread_join(th[i].tid, NULL);
		free(th[i].objs);
	}
	fdatasync(mirror_fd);
	close(mirror_fd);
	msg("done: %" PRIu64 " writes acknowledged, %" PRIu64 " abandoned, %"
	    PRIu64 " retries", (uint64_t)acked, (uint64_t)abandoned,
	    (uint64_t)retries);
	printf("acked=%" PRIu64 " abandoned=%" PRIu64 " retries=%" PRIu64
	       " errors=%" PRIu64 "\n", (uint64_t)acked, (uint64_t)abandoned,
	       (uint64_t)retries, (uint64_t)errors);
	free(th);
	free(allocated);
	if (atomic_load(&fatal))
		return 2;
	return abandoned ? 1 : 0;
}

/* ---- verify mode ---- */

static uint64_t nr_bad;

static void bad(const char *fmt, ...)
{
	va_list ap;

	if (nr_bad++ >= MAX_REPORTS)
		return;
	fprintf(stderr, "loadclient verify: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void describe_allowed(const struct mirror_state *ms, uint64_t blk,
			     char *s, size_t len)
{
	const struct pend *p = &ms->pend[blk];
	int o;

	if (ms->acked[blk])
		o = snprintf(s, len, "acked seq %" PRIu64, ms->acked[blk]);
	else
		o = snprintf(s, len, "zero (never acked)");
	for (uint32_t i = 0; i < p->n && o > 0 && (size_t)o < len; i++)
		o += snprintf(s + o, len - (size_t)o, "%s%" PRIu64,
			      i ? "," : " or unacked seq ", p->v[i]);
}

/* the seq a block holds: 0 for a zero block, UINT64_MAX if not ours */
static uint64_t block_seq(const uint8_t *b, uint64_t blk, uint8_t *tmp,
			  const char **why)
{
	uint64_t seq;

	*why = NULL;
	if (is_zero(b, BLK))
		return 0;
	if (memcmp(b, "KLPB", 4)) {
		*why = "no block header";
		return UINT64_MAX;
	}
	if (get_le32(b + 4) != vid || get_le64(b + 8) != blk) {
		*why = "header of another vdi/block";
		return UINT64_MAX;
	}
	seq = get_le64(b + 16);
	make_block(tmp, vid, blk, seq);
	if (memcmp(b, tmp, BLK)) {
		*why = "content differs from its header (corrupt)";
		return UINT64_MAX;
	}
	return seq;
}

static int do_verify(void)
{
	struct mirror_state ms = { 0 };
	uint8_t *index_buf, *obj, tmp[BLK];
	struct sd_rsp rsp;
	const char *err;
	uint64_t nr_acked = 0, nr_newer = 0, checked = 0;
	int fd, ret;

	fd = net_connect(host, ports[0], rcv_timeout);
	if (fd < 0) {
		fprintf(stderr, "loadclient: cannot connect to %s:%d\n", host,
			ports[0]);
		return 2;
	}
	err = open_vdi(fd);
	if (err) {
		fprintf(stderr, "loadclient: cannot open VDI %s via port %d: "
			"%s\n", vdi_name, ports[0], err);
		return 2;
	}
	ms.acked = calloc(nr_blocks, sizeof(*ms.acked));
	ms.pend = calloc(nr_blocks, sizeof(*ms.pend));
	if (!ms.acked || !ms.pend) {
		perror("calloc");
		return 2;
	}
	if (mirror_load(mirror_path, &ms, nr_blocks, NULL))
		return 2;
	index_buf = malloc((size_t)nr_objs * 4);
	obj = malloc(obj_size);
	if (!index_buf || !obj) {
		perror("malloc");
		return 2;
	}
	ret = read_obj(fd, vid_to_vdi_oid(vid), index_buf, nr_objs * 4,
		       SD_INODE_INDEX_OFFSET, &rsp);
	if (ret != RQ_OK) {
		fprintf(stderr, "loadclient verify: cannot read the index of %s"
			" via port %d: %s\n", vdi_name, ports[0],
			ret == RQ_IOERR ? "connection error" :
			sd_strerror(rsp.result));
		return 1;
	}
	for (uint32_t idx = 0; idx < nr_objs; idx++) {
		uint32_t e = get_le32(index_buf + 4 * idx);
		uint64_t first = (uint64_t)idx * blocks_per_obj;
		bool readable = true;

		if (e == vid) {
			ret = read_obj(fd, vid_to_data_oid(vid, idx), obj,
				       obj_size, 0, &rsp);
			if (ret != RQ_OK) {
				bad("object %016" PRIx64 " via port %d: %s",
				    vid_to_data_oid(vid, idx), ports[0],
				    ret == RQ_IOERR ? "connection error" :
				    sd_strerror(rsp.result));
				readable = false;
				if (ret == RQ_IOERR) {
					close(fd);
					fd = net_connect(host, ports[0],
							 rcv_timeout);
					if (fd < 0)
						return 1;
				}
			}
		} else if (e != 0) {
			bad("index entry %" PRIu32 " holds vid %" PRIx32
			    ", not %" PRIx32, idx, e, vid);
			readable = false;
		} else {
			memset(obj, 0, obj_size);
		}
		for (uint64_t blk = first; blk < first + blocks_per_obj &&
		     blk < nr_blocks; blk++) {
			const uint8_t *b = obj + (blk - first) * BLK;
			const struct pend *p = &ms.pend[blk];
			const char *why;
			char allowed[256];
			uint64_t seq;
			bool ok = false;

			checked++;
			if (!readable) {
				if (ms.acked[blk])
					bad("block %" PRIu64 " (acked seq %"
					    PRIu64 ") unreadable", blk,
					    ms.acked[blk]);
				else
					nr_bad++;
				continue;
			}
			seq = block_seq(b, blk, tmp, &why);
			describe_allowed(&ms, blk, allowed, sizeof(allowed));
			if (why) {
				bad("block %" PRIu64 " of object %" PRIu32
				    ": %s; want %s", blk, idx, why, allowed);
				continue;
			}
			if (seq == ms.acked[blk]) {
				ok = true;
				if (seq)
					nr_acked++;
			}
			for (uint32_t i = 0; !ok && i < p->n; i++)
				if (p->v[i] == seq) {
					ok = true;
					nr_newer++;
				}
			if (!ok)
				bad("block %" PRIu64 " of object %" PRIu32
				    " holds %s%" PRIu64 "; want %s", blk, idx,
				    seq ? "seq " : "zeros, seq ", seq, allowed);
		}
	}
	close(fd);
	if (nr_bad > MAX_REPORTS)
		fprintf(stderr, "loadclient verify: ... %" PRIu64
			" problems in all\n", nr_bad);
	printf("blocks=%" PRIu64 " acked=%" PRIu64 " newer_unacked=%" PRIu64
	       " bad=%" PRIu64 "\n", checked, nr_acked, nr_newer, nr_bad);
	return nr_bad ? 1 : 0;
}

/* ---- main ---- */

static void parse_ports(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int p = atoi(tok);

		if (p <= 0 || p > 65535 || nr_ports == MAX_PORTS)
			usage();
		ports[nr_ports++] = p;
	}
	free(copy);
}

int main(int argc, char **argv)
{
	const char *mode;
	int c;

	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "a:p:m:t:g:j:n:c:s:r:SFv")) != -1) {
		switch (c) {
		case 'a':
			host = optarg;
			break;
		case 'p':
			parse_ports(optarg);
			break;
		case 'm':
			mirror_path = optarg;
			break;
		case 't':
			run_secs = atoi(optarg);
			break;
		case 'g':
			grace_secs = atoi(optarg);
			break;
		case 'j':
			nr_threads = atoi(optarg);
			break;
		case 'n':
			limit_blocks = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			max_writes = strtoull(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			rcv_timeout = atoi(optarg);
			break;
		case 'S':
			sync_each = true;
			break;
		case 'F':
			cached = true;
			break;
		case 'v':
			verbose = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1 || !nr_ports || !mirror_path ||
	    nr_threads < 1 || nr_threads > MAX_THREADS || run_secs < 0 ||
	    grace_secs < 0 || rcv_timeout < 1)
		usage();
	vdi_name = argv[optind];
	if (!seed)
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGUSR1, on_stop);
	setvbuf(stdout, NULL, _IOLBF, 0);
	crc_init();
	t_start = now();
	if (!strcmp(mode, "write"))
		return do_write();
	if (!strcmp(mode, "verify"))
		return do_verify();
	usage();
	return 2;
}
