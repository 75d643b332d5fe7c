// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Helpers shared by dog's commands: the blocking connection to the target
 * sheep, the cluster view, object and inode access, VDI enumeration and
 * command-line value parsing (dog.md §1).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "dog.h"
#include "ec.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "vindex.h"

static int conn_fd = -1;
static uint32_t next_req_id = 1;

/*
 * Move @len bytes over a blocking socket.  A receive timeout (EAGAIN) is
 * not an error: like the original dog, keep waiting for the sheep.
 */
static int sock_io(int fd, void *buf, size_t len, bool wr)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r;

		if (wr)
			r = send(fd, p, len, MSG_NOSIGNAL);
		else
			r = recv(fd, p, len, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN ||
			      errno == EWOULDBLOCK))
			continue;
		if (r == 0)
			errno = ECONNRESET;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static int sock_discard(int fd, uint32_t len)
{
	uint8_t buf[4096];

	while (len) {
		uint32_t n = MIN(len, (uint32_t)sizeof(buf));

		if (sock_io(fd, buf, n, false))
			return -1;
		len -= n;
	}
	return 0;
}

/*
 * One request/response exchange on @fd; -1 on a transport error.  With
 * @alloc, the reply goes to a buffer of its own size (at most @buf_len)
 * left in *@alloc for the caller to free, @data being unused.
 */
static int exec_fd_alloc(int fd, struct sd_req *req, void *data,
			 uint32_t buf_len, struct sd_rsp *rsp, void **alloc)
{
	uint8_t hdr[SD_REQ_SIZE];
	uint32_t got;

	req->id = next_req_id++;
	sd_req_encode(req, hdr);
	if (sock_io(fd, hdr, sizeof(hdr), true))
		return -1;
	if ((req->flags & SD_FLAG_CMD_WRITE) && req->data_length &&
	    sock_io(fd, data, req->data_length, true))
		return -1;
	if (sock_io(fd, hdr, sizeof(hdr), false))
		return -1;
	sd_rsp_decode(rsp, hdr);
	got = MIN(rsp->data_length, buf_len);
	if (alloc) {
		*alloc = xmalloc(got);
		data = *alloc;
		rsp->data_length = got;
	}
	if (got && sock_io(fd, data, got, false))
		return -1;
	if (rsp->data_length > got &&
	    sock_discard(fd, rsp->data_length - got))
		return -1;
	return 0;
}

static int exec_fd(int fd, struct sd_req *req, void *data, uint32_t buf_len,
		   struct sd_rsp *rsp)
{
	return exec_fd_alloc(fd, req, data, buf_len, rsp, NULL);
}

static int dog_connect(void)
{
	if (conn_fd >= 0)
		return conn_fd;
	conn_fd = net_connect(sdhost, sdport, DOG_RCV_TIMEOUT);
	if (conn_fd < 0) {
		fprintf(stderr, "failed to connect to %s:%d: %s\n", sdhost,
			sdport, strerror(errno));
		return -1;
	}
	return conn_fd;
}

void dog_close(void)
{
	if (conn_fd >= 0)
		close(conn_fd);
	conn_fd = -1;
}

/*
 * Send @req to the sheep given by -a/-p.  Returns 0 when a response
 * arrived (its result is in @rsp) or -1 after printing why it did not.
 */
int dog_exec(struct sd_req *req, void *data, uint32_t buf_len,
	     struct sd_rsp *rsp)
{
	int fd = dog_connect();

	if (fd < 0)
		return -1;
	if (exec_fd(fd, req, data, buf_len, rsp)) {
		fprintf(stderr, "failed to communicate with %s:%d: %s\n",
			sdhost, sdport, strerror(errno));
		dog_close();
		return -1;
	}
	return 0;
}

/*
 * dog_exec() for a reply of up to @max_len bytes, most often far fewer:
 * *@data gets a buffer of the reply's size (rsp->data_length), to be freed
 * by the caller even on failure (NULL if nothing was received).
 */
int dog_exec_alloc(struct sd_req *req, uint32_t max_len, void **data,
		   struct sd_rsp *rsp)
{
	int fd = dog_connect();

	*data = NULL;
	if (fd < 0)
		return -1;
	if (exec_fd_alloc(fd, req, NULL, max_len, rsp, data)) {
		fprintf(stderr, "failed to communicate with %s:%d: %s\n",
			sdhost, sdport, strerror(errno));
		dog_close();
		return -1;
	}
	return 0;
}

/* the same, on a fresh connection to the node @nid */
int dog_exec_node(const struct node_id *nid, struct sd_req *req, void *data,
		  uint32_t buf_len, struct sd_rsp *rsp)
{
	char a[INET6_ADDRSTRLEN];
	int fd, ret;

	addr_to_str(nid->addr, a, sizeof(a));
	fd = net_connect_addr(nid->addr, nid->port, DOG_RCV_TIMEOUT);
	if (fd < 0) {
		fprintf(stderr, "failed to connect to %s:%u: %s\n", a,
			nid->port, strerror(errno));
		return -1;
	}
	ret = exec_fd(fd, req, data, buf_len, rsp);
	if (ret)
		fprintf(stderr, "failed to communicate with %s:%u: %s\n", a,
			nid->port, strerror(errno));
	close(fd);
	return ret;
}

/*
 * The cluster_info header of the node @nid (asked with the epoch of the
 * node list being walked), or of the sheep of -a/-p when @nid is NULL.
 * Returns -1 when no reply came (after printing why), else 0 with the
 * result in *@result; *@c is filled when that is SD_RES_SUCCESS (a reply
 * too short to hold the header reads as SD_RES_EIO).
 */
int dog_cluster_info(const struct node_id *nid, struct cluster_info_hdr *c,
		     uint32_t *result)
{
	uint8_t *buf = xzalloc(SD_CLUSTER_INFO_SIZE);
	struct sd_req req;
	struct sd_rsp rsp;
	int ret;

	sd_init_req(&req, SD_OP_CLUSTER_INFO);
	req.data_length = SD_CLUSTER_INFO_SIZE;
	if (nid) {
		req.epoch = sd_epoch;
		ret = dog_exec_node(nid, &req, buf, SD_CLUSTER_INFO_SIZE, &rsp);
	} else {
		ret = dog_exec(&req, buf, SD_CLUSTER_INFO_SIZE, &rsp);
	}
	if (!ret) {
		*result = rsp.result;
		if (rsp.result == SD_RES_SUCCESS &&
		    rsp.data_length < sizeof(struct cluster_info_hdr))
			*result = SD_RES_EIO;
		if (*result == SD_RES_SUCCESS)
			cinfo_hdr_decode(c, buf);
	}
	free(buf);
	return ret;
}

/* a request without payload whose only interesting output is the result */
int dog_light_req(struct sd_req *req)
{
	struct sd_rsp rsp;

	if (dog_exec(req, NULL, 0, &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Response's result: %s\n",
			sd_strerror(rsp.result));
		return -1;
	}
	return 0;
}

/*
 * dog.md §1.4 "needs node list": GET_NODE_LIST and STAT_CLUSTER, then the
 * local placement ring.  Returns 0 or an exit code.
 */
int update_node_list(void)
{
	struct sd_req req;
	struct sd_rsp rsp;
	void *buf;
	uint8_t *log;
	int ret = EXIT_SYSFAIL, nr = 0;
	bool ok = false;

	sd_init_req(&req, SD_OP_GET_NODE_LIST);
	req.data_length = NODE_LIST_BUF_SIZE;
	if (!dog_exec_alloc(&req, NODE_LIST_BUF_SIZE, &buf, &rsp) &&
	    rsp.result == SD_RES_SUCCESS) {
		nr = (int)MIN(rsp.node.nr_nodes,
			      rsp.data_length / sizeof(struct sd_node));
		sd_epoch = rsp.epoch;
		ok = true;
	}

	/* one record of the latest epoch: only its flags are of interest */
	sd_init_req(&req, SD_OP_STAT_CLUSTER);
	req.cluster.nodes_nr = (uint32_t)nr;
	req.data_length = (uint32_t)(sizeof(struct epoch_log_hdr) +
				     (size_t)nr * sizeof(struct sd_node));
	log = xzalloc(req.data_length);
	if (!dog_exec(&req, log, req.data_length, &rsp) &&
	    rsp.data_length >= sizeof(struct epoch_log_hdr)) {
		struct epoch_log_hdr e;

		epoch_log_hdr_decode(&e, log);
		sd_cluster_flags = e.flags;
	}
	free(log);

	if (!ok) {
		fprintf(stderr, "Failed to get node list\n");
		goto out;
	}
	if (nr <= 0) {
		fprintf(stderr, "There are no active sheep daemons\n");
		ret = EXIT_FAILURE;
		goto out;
	}
	sd_nodes = xmalloc((size_t)nr * sizeof(struct sd_node));
	sd_nodes_decode(sd_nodes, (size_t)nr, buf);
	nodes_sort(sd_nodes, (size_t)nr);
	sd_nodes_nr = nr;
	ret = 0;
out:
	free(buf);
	return ret;
}

/*
 * STAT_CLUSTER with room for sd_epoch records, doubling the node slots
 * on BUFFER_SMALL.  Returns the number of records (newest first).
 */
#define MAX_REPLY	(64U << 20)	/* the sheep's SD_MAX_PAYLOAD */

int fetch_epoch_log(struct epoch_rec **out, uint32_t *result)
{
	uint32_t slots = (uint32_t)MAX(sd_nodes_nr, 1);
	uint32_t nr_logs;
	struct sd_req req;
	struct sd_rsp rsp;
	struct epoch_rec *recs;
	uint8_t *buf;
	size_t rec_size;
	int n;

	for (;;) {
		rec_size = sizeof(struct epoch_log_hdr) +
			   (size_t)slots * sizeof(struct sd_node);
		/*
		 * The newest records that fit one reply (a sheep refuses
		 * more): the epoch comes from the sheep and may be anything.
		 */
		nr_logs = (uint32_t)MIN((size_t)MAX(sd_epoch, 1),
					MAX_REPLY / rec_size);
		buf = xzalloc(rec_size * nr_logs);
		sd_init_req(&req, SD_OP_STAT_CLUSTER);
		req.cluster.nodes_nr = slots;
		req.data_length = (uint32_t)(rec_size * nr_logs);
		if (dog_exec(&req, buf, req.data_length, &rsp)) {
			free(buf);
			return -1;
		}
		if (rsp.result != SD_RES_BUFFER_SMALL ||
		    slots >= SD_MAX_NODES)
			break;
		free(buf);
		slots = MIN(slots * 2, SD_MAX_NODES);
	}
	*result = rsp.result;
	n = (int)(MIN(rsp.data_length, req.data_length) / rec_size);
	recs = xzalloc(sizeof(*recs) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++) {
		uint8_t *p = buf + (size_t)i * rec_size;

		epoch_log_hdr_decode(&recs[i].h, p);
		recs[i].h.nr_nodes = MIN(recs[i].h.nr_nodes, slots);
		recs[i].nodes = xzalloc(sizeof(struct sd_node) *
					(recs[i].h.nr_nodes + 1));
		sd_nodes_decode(recs[i].nodes, recs[i].h.nr_nodes,
				p + sizeof(struct epoch_log_hdr));
	}
	free(buf);
	*out = recs;
	return n;
}

void free_epoch_log(struct epoch_rec *recs, int n)
{
	for (int i = 0; i < n; i++)
		free(recs[i].nodes);
	free(recs);
}

static struct vnode_ring sd_ring;
static bool sd_ring_built;

/*
 * The placement ring of the node list, built on first use (most commands
 * never place an object); empty if it cannot be built.
 */
const struct vnode_ring *dog_ring(void)
{
	if (!sd_ring_built) {
		sd_ring_built = true;
		if (ring_build(&sd_ring, sd_nodes, (size_t)sd_nodes_nr))
			fprintf(stderr, "Failed to build the node ring\n");
	}
	return &sd_ring;
}

void dog_ring_free(void)
{
	if (sd_ring_built)
		ring_free(&sd_ring);
	sd_ring_built = false;
}

/* number of distinct zones among the storage nodes */
int nr_storage_zones(void)
{
	return dog_ring()->nr_zones;
}

bool ec_refused(int copies, uint8_t policy)
{
	if (!policy)
		return false;
	/* every strip on a zone of its own (then P zones may fail) */
	if (nr_storage_zones() >= copies)
		return false;
	fprintf(stderr, "Erasure coding %d:%d needs %d zones, the cluster "
		"has %d\n", ec_policy_data(policy), ec_policy_parity(policy),
		copies, nr_storage_zones());
	return true;
}

int dog_read_object(uint64_t oid, void *buf, uint32_t len, uint32_t off,
		    uint8_t copies, uint8_t policy)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, SD_OP_READ_OBJ);
	req.flags = SD_FLAG_CMD_DIRECT;
	req.data_length = len;
	req.obj.oid = oid;
	req.obj.offset = off;
	req.obj.copies = copies;
	req.obj.copy_policy = policy;
	if (dog_exec(&req, buf, len, &rsp))
		return SD_RES_EIO;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to read object %" PRIx64 " %s\n",
			oid, sd_strerror(rsp.result));
		return (int)rsp.result;
	}
	if (rsp.data_length < len)
		memset((uint8_t *)buf + rsp.data_length, 0,
		       len - rsp.data_length);
	return SD_RES_SUCCESS;
}

int dog_write_object(uint64_t oid, uint64_t cow_oid, const void *buf,
		     uint32_t len, uint32_t off, uint16_t flags, uint8_t copies,
		     uint8_t policy, bool create)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, create ? SD_OP_CREATE_AND_WRITE_OBJ :
			  SD_OP_WRITE_OBJ);
	req.flags = flags | SD_FLAG_CMD_WRITE;
	if (cow_oid)
		req.flags |= SD_FLAG_CMD_COW;
	req.data_length = len;
	req.obj.oid = oid;
	req.obj.cow_oid = cow_oid;
	req.obj.offset = off;
	req.obj.copies = copies;
	req.obj.copy_policy = policy;
	if (dog_exec(&req, (void *)buf, 0, &rsp))
		return SD_RES_EIO;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to write object %" PRIx64 ": %s\n",
			oid, sd_strerror(rsp.result));
		return (int)rsp.result;
	}
	return SD_RES_SUCCESS;
}

void fill_name_tag(uint8_t *buf, const char *name, const char *tag)
{
	memset(buf, 0, SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN);
	strncpy((char *)buf, name, SD_MAX_VDI_LEN - 1);
	if (tag)
		strncpy((char *)buf + SD_MAX_VDI_LEN, tag,
			SD_MAX_VDI_TAG_LEN - 1);
}

/* GET_VDI_INFO without messages; returns the result code */
int lookup_vdi(const char *name, uint32_t snapid, const char *tag,
	       uint32_t *vid)
{
	uint8_t buf[SD_MAX_VDI_LEN + SD_MAX_VDI_TAG_LEN];
	struct sd_req req;
	struct sd_rsp rsp;

	fill_name_tag(buf, name, tag);
	sd_init_req(&req, SD_OP_GET_VDI_INFO);
	req.flags = SD_FLAG_CMD_WRITE;
	req.data_length = sizeof(buf);
	req.vdi.snapid = snapid;
	if (dog_exec(&req, buf, 0, &rsp))
		return SD_RES_EIO;
	if (rsp.result == SD_RES_SUCCESS)
		*vid = rsp.vdi.vdi_id;
	return (int)rsp.result;
}

/* dog.md §1.4 "Find VDI" */
int find_vdi(const char *name, uint32_t snapid, const char *tag,
	     uint32_t *vid)
{
	int ret = lookup_vdi(name, snapid, tag, vid);

	if (ret != SD_RES_SUCCESS)
		fprintf(stderr, "Failed to open VDI %s (snapshot id: %" PRIu32
			" snapshot tag: %s): %s\n", name, snapid,
			tag ? tag : "", sd_strerror((uint32_t)ret));
	return ret;
}

uint32_t inode_obj_size(const struct sd_inode_header *h)
{
	uint8_t shift = h->block_size_shift;

	/* the header comes from the sheep: a shift past 31 is no size */
	if (shift < SD_MIN_BLOCK_SIZE_SHIFT || shift > SD_MAX_BLOCK_SIZE_SHIFT)
		shift = SD_DEFAULT_BLOCK_SIZE_SHIFT;
	return UINT32_C(1) << shift;
}

/* entries of the flat index that the VDI's size covers */
uint32_t inode_nr_objs(const struct sd_inode_header *h)
{
	uint64_t n = DIV_ROUND_UP(h->vdi_size, (uint64_t)inode_obj_size(h));

	if (h->store_policy == 0 && n > SD_INODE_DATA_INDEX)
		n = SD_INODE_DATA_INDEX;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	return (uint32_t)n;
}

int read_inode_header(uint32_t vid, struct sd_inode_header *h)
{
	uint8_t *buf = xmalloc(SD_INODE_HEADER_SIZE);
	int ret;

	ret = dog_read_object(vid_to_vdi_oid(vid), buf, SD_INODE_HEADER_SIZE,
			      0, 0, 0);
	if (ret == SD_RES_SUCCESS)
		inode_header_decode(h, buf);
	free(buf);
	return ret;
}

/* the first @nr entries of the flat data index */
int read_inode_index(uint32_t vid, const struct sd_inode_header *h,
		     uint32_t *index, uint32_t nr)
{
	int ret;

	if (!nr)
		return SD_RES_SUCCESS;
	/* decoded in place: entry i is read from the bytes it replaces */
	ret = dog_read_object(vid_to_vdi_oid(vid), index, nr * 4,
			      SD_INODE_INDEX_OFFSET, h->nr_copies, 0);
	if (ret == SD_RES_SUCCESS)
		le32_array_decode(index, nr, index);
	return ret;
}

/* ---- the index interface (lib/vindex.c) over dog's object I/O ---- */

static int index_node_read(void *arg, uint64_t oid, uint8_t *buf)
{
	const struct dog_index_io *d = arg;

	return dog_read_object(oid, buf, BT_NODE_SIZE, 0, d->copies, 0) ?
	       -1 : 0;
}

static int index_node_write(void *arg, uint64_t oid, const uint8_t *buf,
			    uint32_t off, uint32_t len, bool create)
{
	const struct dog_index_io *d = arg;

	return dog_write_object(oid, 0, buf, len, off, SD_FLAG_CMD_DIRECT,
				d->copies, 0, create) ? -1 : 0;
}

static int index_inode_write(void *arg, const uint8_t *buf, uint32_t off,
			     uint32_t len)
{
	const struct dog_index_io *d = arg;

	return dog_write_object(vid_to_vdi_oid(d->vid), 0, buf, len, off,
				SD_FLAG_CMD_DIRECT, d->copies, 0, false) ?
	       -1 : 0;
}

/*
 * The index of VDI @vid (header @h) for vi_*: flat over @flat (@nr
 * entries, taken over), or the B-tree whose root is read from the inode.
 * @d must live as long as the index.  NULL after printing why.
 */
struct vdi_index *open_vdi_index(struct dog_index_io *d, uint32_t vid,
				 const struct sd_inode_header *h,
				 uint32_t *flat, uint32_t nr)
{
	struct vi_io io = {
		{ index_node_read, index_node_write, d },
		index_inode_write, d,
	};
	uint8_t *root;

	d->vid = vid;
	d->copies = h->nr_copies;
	if (h->store_policy == 0)
		return vi_open_flat(vid, flat, nr, &io);
	free(flat);
	if (h->store_policy != 1 ||
	    h->block_size_shift != SD_DEFAULT_BLOCK_SIZE_SHIFT) {
		fprintf(stderr, "VDI %" PRIx32 " has an unknown layout "
			"(store policy %u)\n", vid, h->store_policy);
		return NULL;
	}
	root = xmalloc(BT_NODE_SIZE);
	if (dog_read_object(vid_to_vdi_oid(vid), root, BT_NODE_SIZE,
			    SD_INODE_INDEX_OFFSET, h->nr_copies, 0)) {
		free(root);
		return NULL;
	}
	return vi_open_btree(vid, root, h->btree_counter, &io);
}

/* dog.md §1.4 "Set index entry" */
int set_index_entry(uint32_t vid, const struct sd_inode_header *h,
		    uint32_t idx, uint32_t value)
{
	uint8_t buf[4];

	put_le32(buf, value);
	return dog_write_object(vid_to_vdi_oid(vid), 0, buf, sizeof(buf),
				SD_INODE_INDEX_OFFSET + 4 * idx,
				SD_FLAG_CMD_DIRECT, h->nr_copies, 0, false);
}

/*
 * A VDI bitmap is 2 MiB of which a reply usually fills a few bytes: fresh
 * anonymous pages are zero and only the ones touched get backed.
 */
uint8_t *vdi_bitmap_alloc(void)
{
	void *p = mmap(NULL, VDI_BITMAP_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "out of memory for a VDI bitmap\n");
		exit(EXIT_SYSFAIL);
	}
	return p;
}

void vdi_bitmap_free(uint8_t *map)
{
	if (map)
		munmap(map, VDI_BITMAP_SIZE);
}

/* returns the bytes received (the rest of @map is left as it was) or -1 */
static int read_bitmap(uint8_t opcode, uint8_t *map)
{
	struct sd_req req;
	struct sd_rsp rsp;

	sd_init_req(&req, opcode);
	req.data_length = VDI_BITMAP_SIZE;
	if (dog_exec(&req, map, VDI_BITMAP_SIZE, &rsp))
		return -1;
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to read VDIs: %s\n",
			sd_strerror(rsp.result));
		return -1;
	}
	return (int)MIN(rsp.data_length, (uint32_t)VDI_BITMAP_SIZE);
}

/*
 * the in-use and deleted bitmaps; returns 0 or EXIT_SYSFAIL.  *@len is
 * how much of @inuse the sheep sent: no VDI is in use beyond it.
 */
int read_vdi_bitmaps(uint8_t *inuse, uint8_t *deleted, uint32_t *len)
{
	int n = read_bitmap(SD_OP_READ_VDIS, inuse);

	if (n < 0)
		return EXIT_SYSFAIL;
	if (deleted && read_bitmap(SD_OP_READ_DEL_VDIS, deleted) < 0)
		return EXIT_SYSFAIL;
	*len = (uint32_t)n;
	return 0;
}

static void visit_vdi(uint32_t vid, vdi_visit_fn fn, bool need_index,
		      void *data)
{
	uint8_t buf[SD_INODE_HEADER_SIZE + 8];
	struct sd_inode_header h;
	uint32_t *index = NULL, nr = 0;

	/* the header plus the B-tree header of hyper volumes */
	if (dog_read_object(vid_to_vdi_oid(vid), buf, sizeof(buf), 0, 0, 0))
		return;
	inode_header_decode(&h, buf);
	if (!h.name[0])
		return;
	if (need_index && h.store_policy == 0) {
		nr = inode_nr_objs(&h);
		index = xzalloc((size_t)(nr ? nr : 1) * 4);
		if (read_inode_index(vid, &h, index, nr))
			goto out;
	}
	fn(vid, &h, index, nr, data);
out:
	free(index);
}

/*
 * dog.md §1.4 "List VDIs": call @fn for every VDI in use and not deleted,
 * in ascending vid order.  Returns 0 or EXIT_SYSFAIL.
 */
int parse_vdi(vdi_visit_fn fn, bool need_index, void *data)
{
	return parse_vdi_start(fn, need_index, data, NULL);
}

/* the same, calling @start once the bitmaps have been read */
int parse_vdi_start(vdi_visit_fn fn, bool need_index, void *data,
		    void (*start)(void))
{
	uint8_t *inuse = vdi_bitmap_alloc();
	uint8_t *deleted = vdi_bitmap_alloc();
	uint32_t len;
	int ret;

	ret = read_vdi_bitmaps(inuse, deleted, &len);
	if (ret)
		goto out;
	if (start)
		start();
	/* a word at a time: almost all of the 16M bits are zero */
	for (uint32_t w = 0; w < (len + 7) / 8; w++) {
		uint64_t in, del, live;

		memcpy(&in, inuse + 8 * w, 8);
		memcpy(&del, deleted + 8 * w, 8);
		live = le64toh(in & ~del);
		while (live) {
			uint32_t vid = w * 64 + (uint32_t)__builtin_ctzll(live);

			live &= live - 1;
			if (vid)
				visit_vdi(vid, fn, need_index, data);
		}
	}
out:
	vdi_bitmap_free(inuse);
	vdi_bitmap_free(deleted);
	return ret;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v;

	if (!all_digits(s) || strlen(s) > 10)
		return -1;
	v = strtoul(s, NULL, 10);
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

static void copies_usage(const char *s)
{
	fprintf(stderr, "Invalid parameter %s\n"
		"To create replicated vdi, set -c x\n"
		"  x(1 to 31)   - number of replicated copies\n"
		"To create erasure coded vdi, set -c x:y\n"
		"  x(2,4,8,16)  - number of data strips\n"
		"  y(1 to 15)   - number of parity strips\n", s);
}

/* dog.md §1.5; returns 0, or -1 after printing the help text */
int parse_copies(const char *s, uint8_t *copies, uint8_t *policy)
{
	if (!ec_parse_redundancy(s, copies, policy))
		return 0;
	copies_usage(s);
	return -1;
}

char *copies_to_str(uint8_t copies, uint8_t policy, char *buf, size_t len)
{
	if (policy)
		snprintf(buf, len, "%d:%d", ec_policy_data(policy),
			 ec_policy_parity(policy));
	else
		snprintf(buf, len, "%u", copies);
	return buf;
}

/*
 * -s: a positive number selects a snapshot id, anything else a tag.
 * Returns 0 or an exit code after printing the reason.
 */
int parse_snapshot(const char *s, uint32_t *snapid, char *tag)
{
	unsigned long v;

	if (all_digits(s)) {
		if (parse_uint(s, UINT32_MAX, &v) || v == 0) {
			fprintf(stderr, "The snapshot id must be larger than "
				"zero\n");
			return EXIT_FAILURE;
		}
		*snapid = (uint32_t)v;
		tag[0] = 0;
		return 0;
	}
	if (strlen(s) >= SD_MAX_VDI_TAG_LEN) {
		fprintf(stderr, "Snapshot tag '%s' is too long (at most %d "
			"bytes)\n", s, SD_MAX_VDI_TAG_LEN - 1);
		return EXIT_USAGE;
	}
	*snapid = 0;
	strcpy(tag, s);
	return 0;
}

/* -z: returns 0 or EXIT_USAGE after printing the reason */
int parse_block_shift(const char *s, uint8_t *shift)
{
	unsigned long v;

	if (parse_uint(s, 255, &v) || v < SD_MIN_BLOCK_SIZE_SHIFT ||
	    v > KELPIE_MAX_BLOCK_SIZE_SHIFT) {
		fprintf(stderr, "Invalid block size shift '%s': the object "
			"size is 2^N bytes with N from %d to %d\n", s,
			SD_MIN_BLOCK_SIZE_SHIFT, KELPIE_MAX_BLOCK_SIZE_SHIFT);
		return EXIT_USAGE;
	}
	*shift = (uint8_t)v;
	return 0;
}

void print_size_error(const char *s)
{
	fprintf(stderr, "Invalid size '%s'\n"
		"A size is a decimal number with an optional unit suffix: "
		"B, K, M, G, T or P (powers of 1024)\n", s);
}

/*
 * Print @prompt as it is and read one line: true only if the answer
 * starts with "yes" in any case (dog.md §1.3).
 */
bool confirm_prompt(const char *prompt)
{
	char line[256];
	bool eof;

	printf("%s", prompt);
	fflush(stdout);
	eof = !fgets(line, sizeof(line), stdin);
	if (!eof && !strncasecmp(line, "yes", 3))
		return true;
	/*
	 * Not yes: the line ends (an answer from a pipe or none at all left
	 * the prompt open) and the operator is told nothing was done; the
	 * exit status stays 0 (dog.md §1.2)
	 */
	if (eof || !isatty(STDIN_FILENO))
		putchar('\n');
	fflush(stdout);
	fprintf(stderr, "Nothing was done.\n");
	return false;
}

/* 0-100: a sheep that reports more used than its size shows 100 */
int use_percent(uint64_t used, uint64_t size)
{
	if (!size)
		return 0;
	if (used >= size)
		return 100;
	return (int)((double)used * 100 / (double)size);
}

/* print @caution and ask whether to continue */
bool confirm(const char *caution)
{
	char prompt[1024];

	snprintf(prompt, sizeof(prompt), "%s\nAre you sure you want to "
		 "continue? [yes/no]: ", caution);
	return confirm_prompt(prompt);
}

static int term_width(void)
{
	struct winsize ws;

	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

bool progress_on_stderr;

/* where the bar goes: a terminal, never the data a command writes */
static FILE *progress_fp(void)
{
	if (progress_on_stderr)
		return isatty(STDERR_FILENO) ? stderr : NULL;
	return isatty(STDOUT_FILENO) ? stdout : NULL;
}

/* "1:05" or "2:03:07" */
static void fmt_secs(uint64_t s, char *buf, size_t len)
{
	if (s >= 3600)
		snprintf(buf, len, "%" PRIu64 ":%02" PRIu64 ":%02" PRIu64,
			 s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 ":%02" PRIu64, s / 60, s % 60);
}

/* the time left at the pace so far, once there is a pace */
static void fmt_eta(uint64_t done, uint64_t total, char *buf, size_t len)
{
	static uint64_t started, of_total;
	uint64_t now = now_msec(), ms;
	char t[32];

	if (!started || total != of_total || done == 0) {
		started = now;
		of_total = total;
	}
	ms = now - started;
	buf[0] = 0;
	if (done >= total) {
		fmt_secs(ms / 1000, t, sizeof(t));
		snprintf(buf, len, " in %s", t);
	} else if (done && ms >= 1000) {
		fmt_secs((uint64_t)((double)ms * (double)(total - done) /
				    (double)done / 1000), t, sizeof(t));
		snprintf(buf, len, " ETA %s", t);
	}
}

/*
 * A progress bar with the time left, on terminals only (dog.md §1.3):
 * sizes, or with @unit counts of it ("12 / 40 objects")
 */
static void progress_bar(uint64_t done, uint64_t total, const char *unit)
{
	char head[32], tail[128], d[32], t[32], eta[48], *bar;
	double pct = total ? (double)done * 100 / (double)total : 100;
	FILE *fp = progress_fp();
	int width = term_width(), len, fill;

	if (!fp)
		return;
	fmt_eta(done, total, eta, sizeof(eta));
	snprintf(head, sizeof(head), "\r%5.1f %% [", pct);
	if (unit)
		snprintf(tail, sizeof(tail), "] %" PRIu64 " / %" PRIu64 " %s%s",
			 done, total, unit, eta);
	else
		snprintf(tail, sizeof(tail), "] %s / %s%s",
			 size_to_str(done, d, sizeof(d)),
			 size_to_str(total, t, sizeof(t)), eta);
	len = width - (int)strlen(head) - (int)strlen(tail) - 1;
	if (len < 3)
		len = 3;
	bar = xmalloc((size_t)len + 1);
	memset(bar, ' ', (size_t)len);
	bar[len] = 0;
	fill = (int)((double)(len - 1) * pct / 100);
	memset(bar, '=', (size_t)fill);
	bar[fill] = '>';
	fprintf(fp, "%s%s%s", head, bar, tail);
	if (done >= total)
		fprintf(fp, "\n");
	fflush(fp);
	free(bar);
}

void show_progress(uint64_t done, uint64_t total)
{
	progress_bar(done, total, NULL);
}

void show_count_progress(uint64_t done, uint64_t total, const char *unit)
{
	progress_bar(done, total, unit);
}

/* decimal bytes in raw mode, dog's unit format otherwise */
char *fmt_size(uint64_t size, char *buf, size_t len)
{
	if (raw_output)
		snprintf(buf, len, "%" PRIu64, size);
	else
		size_to_str(size, buf, len);
	return buf;
}

/* Unix seconds in raw mode, local time formatted with @fmt otherwise */
char *fmt_time(uint64_t sec, const char *fmt, char *buf, size_t len)
{
	time_t t = (time_t)sec;
	struct tm tm;

	if (raw_output) {
		snprintf(buf, len, "%" PRIu64, sec);
		return buf;
	}
	localtime_r(&t, &tm);
	strftime(buf, len, fmt, &tm);
	return buf;
}
