// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: the readers of a cluster snapshot directory (dog
 * cluster snapshot list|show|load; dog/cluster_snapshot.c, dog/farm.c)
 * on a directory the input makes.  A snapshot directory is local, but
 * it may come from anywhere (a copy, a damaged disk): no byte of it may
 * crash dog or load a cluster with bytes that fail their digests.
 *
 * Input:
 *   byte 0      the command: list, show 1, show by tag "t", load 1
 *   bytes 1-2   le16 length L of the snapshot log
 *   L bytes     DIR/snap_log (if it holds a first record, that record's
 *               trunk digest is set to the trunk's below, so that the
 *               trunk is reached)
 *   the rest    split at byte 3 (le16) into the trunk and one more
 *               object, both stored as the save would store them (their
 *               SHA-1 is computed here); the trunk's first entry, if any,
 *               gets the other object's digest
 * The socket layer is wrapped and answers nothing (a load that gets as
 * far as formatting fails there); no byte leaves the process.
 */
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proto.h"
#include "util.h"
#include "dog/dog.h"
#include "dog/farm.h"
#include "fuzz_input.h"

#define die(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

/* the offsets of dog/cluster_snapshot.c's layout */
#define LOG_HDR		32
#define LOG_TRUNK_SHA1	(LOG_HDR + 4 + 256 + 8)
#define TRUNK_HDR	16
#define ENT_SHA1	16

int dog_main(int argc, char **argv);

static char dir[64];
static int devnull = -1;

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags);
int __wrap_net_connect(const char *host, int port, int rcv_timeout_sec);
int __wrap_net_connect_addr(const uint8_t addr[16], uint16_t port,
			    int rcv_timeout_sec);

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
	return (ssize_t)len;
}

ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
	return 0;
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

static void write_file(const char *name, const void *buf, size_t len)
{
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || (len && xwrite(fd, buf, len) < 0))
		die("%s: %m\n", p);
	close(fd);
}

static void remove_object(const uint8_t *sha1)
{
	char hex[41], p[160];

	farm_sha1_hex(sha1, hex);
	snprintf(p, sizeof(p), "%s/objects/%.2s/%s", dir, hex, hex + 2);
	unlink(p);
}

static void run(const char *a, const char *b, const char *c)
{
	char *argv[] = { xstrdup("dog"), xstrdup("cluster"),
			 xstrdup("snapshot"), xstrdup(a), xstrdup(b),
			 c ? xstrdup(c) : NULL, NULL };

	dog_main(c ? 6 : 5, argv);
	for (int i = 0; argv[i]; i++)
		free(argv[i]);
	dog_close();
	fflush(stdout);
}

static int remove_one(const char *p, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(p);
	return 0;
}

static void remove_dir(void)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* every input writes files: in memory where the machine has a tmpfs */
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	snprintf(dir, sizeof(dir), "%s/kelpie-fuzz-snap.%d", base,
		 (int)getpid());
	if (mkdir_p(dir))
		die("%s: %m\n", dir);
	atexit(remove_dir);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 || dup2(devnull, STDOUT_FILENO) < 0 ||
	    dup2(devnull, STDIN_FILENO) < 0)
		die("/dev/null: %m\n");
	unsetenv("SHEEPDOG_DOG_ADDR");
	unsetenv("SHEEPDOG_DOG_PORT");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t trunk_sha1[FARM_SHA1_LEN], obj_sha1[FARM_SHA1_LEN];
	uint8_t *log, *trunk, *obj;
	size_t log_len, rest, split;
	struct fuzz_in in;
	uint8_t cmd;
	bool dedup;

	fuzz_in_init(&in, data, size);
	cmd = take_u8(&in);
	log_len = take_u16(&in);
	log_len = log_len < fuzz_left(&in) ? log_len : fuzz_left(&in);
	log = xzalloc(log_len + 1);
	take_bytes(&in, log, log_len);
	rest = fuzz_left(&in);
	split = take_u16(&in);
	rest = fuzz_left(&in);
	split = split < rest ? split : rest;
	trunk = xzalloc(split + 1);
	take_bytes(&in, trunk, split);
	obj = xzalloc(rest - split + 1);
	take_bytes(&in, obj, rest - split);

	/* the other object first: the trunk's first entry names it */
	if (farm_put(dir, obj, (uint32_t)(rest - split), obj_sha1, &dedup))
		die("farm_put\n");
	if (split >= TRUNK_HDR + ENT_SHA1 + FARM_SHA1_LEN)
		memcpy(trunk + TRUNK_HDR + ENT_SHA1, obj_sha1, FARM_SHA1_LEN);
	if (farm_put(dir, trunk, (uint32_t)split, trunk_sha1, &dedup))
		die("farm_put\n");
	if (log_len >= LOG_TRUNK_SHA1 + FARM_SHA1_LEN)
		memcpy(log + LOG_TRUNK_SHA1, trunk_sha1, FARM_SHA1_LEN);
	write_file("snap_log", log, log_len);

	switch (cmd % 4) {
	case 0:
		run("list", dir, NULL);
		break;
	case 1:
		run("show", "1", dir);
		break;
	case 2:
		run("show", "t", dir);
		break;
	default:
		run("load", "1", dir);
		break;
	}
	remove_object(trunk_sha1);
	remove_object(obj_sha1);
	free(log);
	free(trunk);
	free(obj);
	return 0;
}
