// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: dog's parsing of what a sheep answers.  A read-only
 * dog command runs through dog's own main() (compiled as dog_main) with
 * the whole of dog linked as it is; only the socket layer is replaced
 * (build.sh: -Wl,--wrap=send,recv,net_connect,net_connect_addr).  What
 * dog sends is dropped, and what it receives, response headers and
 * payloads alike, is the fuzz input, in order, until it runs out (then
 * the connection reads as reset).
 *
 * Input: one byte choosing the command (commands[]), then the byte stream
 * of the sheep's responses.  `vdi object dump-inode` reads a file instead:
 * the rest of the input, from a memfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "hash.h"
#include "proto.h"
#include "util.h"
#include "dog/dog.h"
#include "dog/vdi.h"
#include "fuzz_input.h"

#define die(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

#define MAX_ARGS	10
#define DUMP_INODE	"dump-inode"

int dog_main(int argc, char **argv);

static const char *const commands[][MAX_ARGS] = {
	{ "node", "list" },
	{ "node", "list", "-r" },
	{ "node", "info" },
	{ "node", "info", "-r" },
	{ "node", "recovery", "info" },
	{ "node", "recovery", "get-throttle" },
	{ "node", "stat" },
	{ "node", "stat", "-r" },
	{ "node", "log", "level", "get" },
	{ "cluster", "info" },
	{ "cluster", "info", "-r", "-v" },
	{ "vdi", "list" },
	{ "vdi", "list", "-r" },
	{ "vdi", "list", "fuzz" },
	{ "vdi", "tree" },
	{ "vdi", "graph" },
	{ "vdi", "lock", "list" },
	{ "vdi", "object", "map", "fuzz" },
	{ "vdi", "object", "location", "fuzz", "-i", "1" },
	{ "vdi", "track", "fuzz", "-i", "0" },
	{ "vdi", "getattr", "fuzz", "key" },
	{ "vdi", "read", "fuzz", "0", "4096" },
	{ "node", "stat", "-m" },
	{ "node", "stat", "-m", "-r" },
	{ "vdi", "object", DUMP_INODE },
};
#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static struct fuzz_in stream;
static int devnull = -1;
static struct vdi_opts vopt_initial;

/* ---- the socket layer ---- */

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags);
int __real_ring_build(struct vnode_ring *ring, const struct sd_node *nodes,
		      size_t nr);
int __wrap_ring_build(struct vnode_ring *ring, const struct sd_node *nodes,
		      size_t nr);
int __wrap_net_connect(const char *host, int port, int rcv_timeout_sec);
int __wrap_net_connect_addr(const uint8_t addr[16], uint16_t port,
			    int rcv_timeout_sec);

/* FUZZ_DOG_TRACE=1: print what dog sends (gen_corpus.py reads it) */
static bool trace;
/* the opcode of the request dog sent last */
static uint8_t last_op;

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
	uint8_t *copy = xmalloc(len ? len : 1);

	/* what dog sends must be readable */
	memcpy(copy, buf, len);
	if (len == SD_REQ_SIZE)
		last_op = copy[1];
	if (trace) {
		fprintf(stderr, "SEND %zu ", len);
		for (size_t i = 0; i < MIN(len, (size_t)SD_REQ_SIZE); i++)
			fprintf(stderr, "%02x", copy[i]);
		fprintf(stderr, "\n");
	}
	free(copy);
	return (ssize_t)len;
}

/*
 * dog sizes the epoch history it asks for by the epoch GET_NODE_LIST
 * reports: a huge epoch was a huge allocation (found here, bounded by
 * ff93904 to what one reply can carry, 64 MiB).  To keep inputs fast the
 * epoch of that response is taken modulo 32.
 */
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
	size_t n = MIN(len, fuzz_left(&stream));

	n = take_bytes(&stream, buf, n);
	if (len == SD_RSP_SIZE && n == len && last_op == SD_OP_GET_NODE_LIST)
		put_le32((uint8_t *)buf + 4, get_le32((uint8_t *)buf + 4) % 32);
	return (ssize_t)n;
}

/*
 * A ring of thousands of nodes with up to 65535 vnodes each is a sort of
 * hundreds of millions of entries: real, bounded by dog's allocation
 * failing, and far too slow for a fuzzer (it took most of the time of
 * every input).  The harness caps each node's vnodes at 64; the decoding
 * and the placement code paths are the same.
 */
int __wrap_ring_build(struct vnode_ring *ring, const struct sd_node *nodes,
		      size_t nr)
{
	struct sd_node *capped = calloc(nr ? nr : 1, sizeof(*capped));
	int ret;

	if (!capped)
		return -1;
	for (size_t i = 0; i < nr; i++) {
		capped[i] = nodes[i];
		capped[i].nr_vnodes = nodes[i].nr_vnodes % 65;
	}
	ret = __real_ring_build(ring, capped, nr);
	free(capped);
	return ret;
}

int __wrap_net_connect(const char *host, int port, int rcv_timeout_sec)
{
	return dup(devnull);
}

int __wrap_net_connect_addr(const uint8_t addr[16], uint16_t port,
			    int rcv_timeout_sec)
{
	return dup(devnull);
}

/* ---- running one command ---- */

static void reset_globals(void)
{
	sd_nodes = NULL;
	sd_nodes_nr = 0;
	sd_epoch = 0;
	sd_cluster_flags = 0;
	dog_ring_free();
	raw_output = false;
	verbose = false;
	progress_on_stderr = false;
	vopt = vopt_initial;
	last_op = 0;
}

/* the rest of the input as a file; its path in @path */
static int input_file(char *path, size_t len)
{
	int fd = memfd_create("fuzz-inode", MFD_CLOEXEC);
	size_t n = fuzz_left(&stream);

	if (fd < 0 || (n && xwrite(fd, stream.p + stream.pos, n) < 0))
		die("memfd: %m\n");
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

static void run_command(const char *const *cmd)
{
	char *argv[MAX_ARGS + 2] = { 0 }, path[64];
	int argc = 0, fd = -1;

	argv[argc++] = xstrdup("dog");
	for (int i = 0; i < MAX_ARGS && cmd[i]; i++) {
		argv[argc++] = xstrdup(cmd[i]);
		if (!strcmp(cmd[i], DUMP_INODE)) {
			fd = input_file(path, sizeof(path));
			argv[argc++] = xstrdup(path);
		}
	}
	dog_main(argc, argv);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	if (fd >= 0)
		close(fd);
	fflush(stdout);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 || dup2(devnull, STDOUT_FILENO) < 0 ||
	    dup2(devnull, STDIN_FILENO) < 0)
		die("/dev/null: %m\n");
	unsetenv("SHEEPDOG_DOG_LOG");
	unsetenv("SHEEPDOG_DOG_ADDR");
	unsetenv("SHEEPDOG_DOG_PORT");
	vopt_initial = vopt;
	trace = getenv("FUZZ_DOG_TRACE");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel;

	fuzz_in_init(&stream, data, size);
	sel = take_u8(&stream);
	reset_globals();
	run_command(commands[sel % NR_COMMANDS]);
	return 0;
}
